"""Transitional: the old home of the feature readers, re-exporting them until the branches of "the house" merge.

The readers now live in one module per encoding (§6): :mod:`h5ml.reader.feature`
(the base class), :mod:`~h5ml.reader.dense`, :mod:`~h5ml.reader.strings`,
:mod:`~h5ml.reader.categorical`, :mod:`~h5ml.reader.ragged`,
:mod:`~h5ml.reader.bytes`, and :mod:`~h5ml.reader.structure` (``open_feature``).
Import them from :mod:`h5ml.reader`; this module goes once no import of it is left.
"""

from h5ml.reader.bytes import BytesFeature
from h5ml.reader.categorical import CategoricalFeature
from h5ml.reader.dense import DenseFeature
from h5ml.reader.feature import Feature
from h5ml.reader.ragged import RaggedFeature
from h5ml.reader.strings import StringFeature

__all__ = ["BytesFeature", "CategoricalFeature", "DenseFeature", "Feature", "RaggedFeature", "StringFeature"]
