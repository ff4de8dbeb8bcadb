"""Convert Hugging Face ``datasets`` to h5ml files (``h5ml convert --from hf``).

The source is a ``datasets.Dataset``, a ``datasets.DatasetDict`` (its splits),
or the directory of one saved with ``save_to_disk`` (opened with
``datasets.load_from_disk``, memory-mapped). ``datasets`` is an optional extra:
``pip install "h5ml[hf]"``.

How features map to encodings (§6)
----------------------------------
=================================================  =====================================================
Hugging Face feature                               h5ml feature
=================================================  =====================================================
``ClassLabel(names=...)``                          categorical with those class names (-1 = no label,
                                                   null = -1), role ``target``
``Value`` bool, int8-64, uint8-64, float16-64      dense ``(N,)`` of that dtype
``Value("string")`` / ``"large_string"``           string
``Value("binary")`` / ``"large_binary"``           bytes (``application/octet-stream``)
``List``/``Sequence``/``LargeList`` of numbers     dense ``(N, *lengths)`` when every level has a fixed
(nested to any depth)                              ``length``; ragged when the first level varies
                                                   (rows of the fixed inner shape); ragged with
                                                   ``shapes`` when an inner level varies
``Array2D``..``Array5D(shape, dtype)``             dense ``(N, *shape)``; ragged when the first axis is
                                                   ``None``
``Image()``, ``images="bytes"`` (default)          bytes: the encoded file as stored, ``media_type`` from
                                                   its signature when every image has the same type
                                                   (else ``application/octet-stream``), role ``input``
``Image()``, ``images="pixels"``                   dense ``(N, H, W[, C])`` when every image has the same
                                                   size, else ragged with ``shapes``; ``Image(mode=...)``
                                                   converts; palette images become RGB/RGBA
``Audio()``, ``audio="samples"`` (default)         ragged float32 ``(frames,)`` (mono) or
                                                   ``(frames, channels)``, ``sample_rate`` in Hz,
                                                   role ``input``
``Audio()``, ``audio="bytes"``                     bytes: the encoded file, ``media_type`` as images
=================================================  =====================================================

Other features (dicts, ``Translation``, ``Video``, lists of strings,
timestamps, ...) are refused before anything is written, naming the column:
leave them out with ``columns=`` or turn them into supported columns first
(``Dataset.flatten``, ``Dataset.map``).

Rows are read through the Arrow format in batches (``Dataset.iter``), so
images and audio are never decoded by ``datasets`` (no ``torchcodec``), and
memory stays bounded by the batch size whatever the dataset's size. Audio is
decoded with ``soundfile`` at the files' own sample rate (no resampling: a
column cast with ``Audio(sampling_rate=...)`` whose files have another rate
is refused); pixels are decoded with Pillow. The first readable sample of a
column fixes its sample rate and channels (audio) or pixel mode (images); a
row that differs, does not decode, or holds a null where h5ml has no missing
value (every encoding except categorical) is a bad row: by default the
conversion stops with :class:`h5ml.IngestError` naming the row and the reason
(the output is left as it was); with ``on_error="skip"`` the row is left out
and recorded (:data:`h5ml.ingest.SKIPPED_ATTR`).

Splits: the names of a ``DatasetDict`` (or the ``split`` of a ``Dataset``)
are mapped to the standard ones (``valid``/``val``/``dev`` -> ``validation``,
``eval``/``testing`` -> ``test``, ``training`` -> ``train``, §5.1,
:func:`h5ml.ingest.naming.standard_split_name`). A
``Dataset`` without a split is cut by ``split_ratios`` (default train 0.8,
test 0.2), stratified on its first ``ClassLabel`` column (or ``label``), with
the split seed ``seed`` (0 when None, :func:`h5ml.ingest.splitting.split_seed`);
``split_ratios={"train": 1.0}`` keeps every row in one split.

Root metadata: the dataset card fields of ``DatasetInfo`` (description,
license, citation, homepage) when set, over the defaults of
:func:`h5ml.ingest.conversion_metadata`, under what ``metadata`` gives.

Modules: :mod:`~h5ml.ingest.hf.source` loads the source and cuts its splits,
:mod:`~h5ml.ingest.hf.columns` plans the columns and their features,
:mod:`~h5ml.ingest.hf.media` reads rows and media files,
:mod:`~h5ml.ingest.hf.values` and :mod:`~h5ml.ingest.hf.nested` convert a
batch, :mod:`~h5ml.ingest.hf.convert` is :func:`convert_huggingface`.
"""

from h5ml.ingest.hf.columns import AudioColumns, ImageColumns
from h5ml.ingest.hf.convert import convert_huggingface
from h5ml.ingest.hf.media import DEFAULT_BATCH_SIZE, MEDIA_BATCH_SIZE, media_type_of
from h5ml.ingest.hf.source import DEFAULT_SPLIT_RATIOS

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_SPLIT_RATIOS",
    "MEDIA_BATCH_SIZE",
    "AudioColumns",
    "ImageColumns",
    "convert_huggingface",
    "media_type_of",
]
