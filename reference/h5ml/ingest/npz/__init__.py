"""Convert NumPy ``.npz`` and ``.npy`` files to h5ml files (``h5ml convert``, source kind ``arrays``).

How array names map to splits and features (``.npz``)
-----------------------------------------------------
An array named ``<feature>_<split>`` goes to split ``<split>`` under feature
``<feature>``, where ``<split>`` is one of the suffixes below (case-sensitive)
and is written under its standard name (§5.1,
:func:`h5ml.ingest.naming.split_array_name`):

==========================================  ==============
suffix                                      split
==========================================  ==============
``train``, ``training``                     ``train``
``validation``, ``valid``, ``val``, ``dev`` ``validation``
``test``, ``testing``, ``eval``             ``test``
==========================================  ==============

So Keras' layout ``x_train, y_train, x_valid, y_valid, x_test, y_test`` gives
splits train/validation/test, each with features ``x`` and ``y``. An array
whose name matches no pattern (``images``) goes to split ``train`` under its
own, whole name. The conventional names get their role (§6.1,
:data:`h5ml.ingest.features.ROLE_NAMES`: ``x`` input, ``y`` target, ...).
With ``label="y"`` the feature ``y`` is stored categorical (§6.5) with the
given class names, or ``"0" .. "K-1"`` where ``K - 1`` is the largest code
found in any split.

Companion arrays (as ``h5ml export`` writes them)
--------------------------------------------------
Some arrays describe another array ``<base>`` of the archive rather than
being features of their own (:func:`h5ml.ingest.export.export_npz` writes
them; the names are :data:`OFFSETS_SUFFIX`, :data:`SHAPES_SUFFIX`,
:data:`MEDIA_TYPE_SUFFIX`, :data:`CLASS_NAMES_SUFFIX` and :data:`ATTRS_SUFFIX`):

=================================  =====================================================================
array                              meaning
=================================  =====================================================================
``<base>_offsets``                 int (N+1,), from 0 up to the rows of ``<base>``: ``<base>`` holds the
                                   values of a ragged feature, sample i being
                                   ``<base>[offsets[i]:offsets[i+1]]`` (§6.3)
``<base>_shapes``                  int (N, D), beside ``_offsets``: ``<base>`` is 1-D and sample i is
                                   reshaped (C order) to ``shapes[i]``; stored with ``shapes`` (§6.3)
``<base>_media_type``              one string, beside ``_offsets``: ``<base>`` is uint8 and the feature
                                   is ``bytes`` with that media type (§6.6), sample i the byte string
``<feature>_class_names``          str (K,): the class names of categorical feature ``<feature>`` in
                                   every split; its ``<feature>_<split>`` arrays are the codes (§6.5)
``<feature>_<split>_class_names``  str (K,): the same, for that split only (over the one above)
``<base>_attrs``                   one string, a JSON object: the role, description, units and sample
                                   rate of the feature whose values are ``<base>`` (§6.1); such a
                                   feature gets no role from its name
=================================  =====================================================================

A companion is recognised only beside its ``<base>`` (and ``_shapes`` and
``_media_type`` only beside ``_offsets``); otherwise it is an ordinary
array. The ``label`` and ``class_names`` options override stored class names.

A ``.npy`` file holds one array: it becomes one feature (named after the file
stem unless ``feature`` is given) of one split (``train`` unless ``split`` is
given). It is memory-mapped, so the array is not loaded whole before writing.

Every check runs before anything is written, and the writer builds the file
beside the target and renames it at the end: when conversion fails, the
output path is left as it was.

Modules: :mod:`~h5ml.ingest.npz.archive` reads and checks the files and
their scalar metadata, :mod:`~h5ml.ingest.npz.companions` the ragged and
bytes values, :mod:`~h5ml.ingest.npz.labels` the class names and codes,
:mod:`~h5ml.ingest.npz.convert` the two converters.
"""

from h5ml.ingest.npz.companions import (
    ATTRS_SUFFIX,
    CLASS_NAMES_SUFFIX,
    MEDIA_TYPE_SUFFIX,
    OFFSETS_SUFFIX,
    SHAPES_SUFFIX,
)
from h5ml.ingest.npz.convert import convert_npy, convert_npz

__all__ = [
    "ATTRS_SUFFIX",
    "CLASS_NAMES_SUFFIX",
    "MEDIA_TYPE_SUFFIX",
    "OFFSETS_SUFFIX",
    "SHAPES_SUFFIX",
    "convert_npy",
    "convert_npz",
]
