"""Convert HDF5 files in the layouts tutorials teach to h5ml files (``h5ml convert``).

Two source layouts are recognised; :func:`convert_hdf5` tells them apart
(:func:`detect_layout`, and says so when a file has neither) unless
``source_layout`` names one; :func:`convert_hdf5_per_sample` and
:func:`convert_hdf5_arrays` convert one each.

Per-sample layout
-----------------
One dataset per sample, named by the sample's id, in groups::

    /train_data/1, /train_data/2, ...     /train_label/1, /train_label/2, ...
    /test_data/1, ...                     /test_label/1, ...

A root group's name is parsed as ``<split>_<feature>`` (``train_data``), or
``<feature>_<split>`` (``data_train``, :func:`h5ml.ingest.naming.split_array_name`),
with the split names and aliases of :data:`h5ml.ingest.naming.SPLIT_SUFFIXES`
(``valid`` -> ``validation``, ...); a name without a split goes to split
``train`` as a feature of its whole name, as :mod:`h5ml.ingest.npz` does. Two
nestings are read as well: ``<split>/<feature>/<id>``, and ``<split>/<id>``
(a group named by a split holding the samples of its one feature,
:data:`SINGLE_FEATURE`). The features of one split are matched by id; the
ids are sorted naturally (``"2"`` before ``"10"``) and stored as the string
feature ``id`` (role ``metadata``). A feature whose samples all have one
shape is stored dense ``(N, *shape)`` (§6.2); when the shapes vary it is
stored ragged (§6.3), with per-sample ``shapes`` when they vary in more than
their first axis. Scalar string datasets make a string feature (§6.4).
Roles come from the names (:data:`h5ml.ingest.features.ROLE_NAMES`:
``data``/``x``/``input`` -> input, ``label``/``y``/``target`` -> target).
Samples are read one dataset at a time through :func:`h5ml.ingest.ingest`
(each worker opens the file by path; h5py lets one thread at a time into
HDF5, so ``workers`` read in parallel only as ``processes``): the file is
never loaded whole.

Arrays layout
-------------
Top-level datasets ``x_train, y_train, x_valid, y_valid, x_test, y_test``
(any names :func:`h5ml.ingest.naming.split_array_name` maps), first axis the
samples, with optional root attributes ``description`` and a number of
classes (:data:`CLASS_COUNT_ATTRS`). With a number of classes K, ``y`` (or
the ``label`` feature; shape ``(N,)`` or ``(N, 1)``, integers, or floats
holding whole numbers) is stored categorical with class names ``"0" ..
"K-1"`` (§6.5); a value outside ``[0, K)`` is an error naming the dataset and the row (``-1`` is taken as
"missing", §6.5). A ``y`` of any other shape (one-hot ``(N, K)``) is stored
dense. The arrays are read in blocks of whole HDF5 chunks of about
:data:`BLOCK_BYTES`, never whole.

Metadata (both layouts)
-----------------------
The root attribute ``description`` becomes the h5ml ``description``; every
other root attribute is kept as a user attribute (§4.7) of the same name,
or ``source:<name>`` when the name is one §4.2 defines (``name``,
``license``, ...): their values in a tutorial's file rarely follow §4.2.
Values are kept as str, int, float, or lists of str or int; other arrays
are stored as their JSON text.

Modules: :mod:`~h5ml.ingest.legacy.source` opens and checks the file, tells
its layout and keeps its attributes; :mod:`~h5ml.ingest.legacy.per_sample`
and :mod:`~h5ml.ingest.legacy.arrays` convert one layout each;
:mod:`~h5ml.ingest.legacy.convert` is :func:`convert_hdf5`.
"""

from h5ml.ingest.legacy.arrays import BLOCK_BYTES, CLASS_COUNT_ATTRS, convert_hdf5_arrays
from h5ml.ingest.legacy.convert import convert_hdf5
from h5ml.ingest.legacy.per_sample import SINGLE_FEATURE, convert_hdf5_per_sample, parse_group_name
from h5ml.ingest.legacy.source import SOURCE_LAYOUTS, SourceLayout, detect_layout
from h5ml.ingest.report import ID_FEATURE

__all__ = [
    "BLOCK_BYTES",
    "CLASS_COUNT_ATTRS",
    "ID_FEATURE",
    "SINGLE_FEATURE",
    "SOURCE_LAYOUTS",
    "SourceLayout",
    "convert_hdf5",
    "convert_hdf5_arrays",
    "convert_hdf5_per_sample",
    "detect_layout",
    "parse_group_name",
]
