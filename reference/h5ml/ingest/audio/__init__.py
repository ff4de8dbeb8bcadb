"""Convert a folder of audio files (WAV, FLAC, Ogg) into an h5ml file (``h5ml convert``, source kind ``audio``).

Folder layout
-------------
Three folder layouts are accepted; which one is decided from the tree, or
given by ``folder_layout`` (``"splits"``, ``"features"``, ``"split-files"``;
hidden entries, whose names start with ".", are ignored everywhere):

- ``ROOT/<split>/<feature>/<id>.<ext>``, e.g. ``train/noisy/17.wav`` and
  ``train/clean/17.wav``: the folders directly under ROOT hold folders (and
  no audio files). Each folder under ROOT is a split (§5.1), each folder under
  a split is a feature (§5.2). Splits may hold different features (a test
  split without targets, say).
- ``ROOT/<feature>/<id>.<ext>``: the folders directly under ROOT hold audio
  files (and no folders). Each is a feature; ``split_ratios`` assigns the
  samples to splits with :func:`h5ml.ingest.splitting.assign_splits` (the seed
  is ``seed`` or 0; every id found is assigned before any file is checked, so
  a bad file does not move other samples to another split). Without
  ``split_ratios`` every sample goes to ``train``.

- ``ROOT/<split>/<id>.<ext>``, e.g. ``train/17.wav`` and ``test/3.wav``
  (layout ``"split-files"``): every folder under ROOT has a split name
  (:data:`h5ml.ingest.naming.SPLIT_SUFFIXES`) and holds audio files and no
  folders. Each is a split with one audio feature, :data:`AUDIO_FEATURE`
  (``audio``). Read as features (the layout above), such a tree would give
  features ``train`` and ``test`` matched by id; a tree that is half this
  layout (split-named folders holding audio beside folders of other names,
  or beside folders holding folders) is refused with a message saying which
  ``folder_layout`` gives which reading (:func:`h5ml.ingest.folders.reads_as_split_files`).

Audio files directly in ROOT, a feature folder that holds folders, or folders
under ROOT of both kinds are refused with :class:`h5ml.IngestError`, as is a
folder without audio files (the message says what it holds: ``found 12
.png file(s); did you mean --from images``). Files
with other extensions are ignored. Audio files are those ending in ``.wav``,
``.flac`` or ``.ogg`` (any case), decoded with ``soundfile`` (libsndfile).

Samples
-------
A sample's id is its file name without the extension. Within a split, the
files of each feature are matched by id; ids are stored in natural order
(:func:`h5ml.ingest.naming.natural_key`: ``2`` before ``10``). An id that
one feature folder of the split has and another lacks, or that names two
files of one folder (``17.wav`` and ``17.flac``), is an error naming the
files; with ``on_error="skip"`` the sample is left out and the files are
recorded as skipped.

Every audio feature is stored ``ragged`` (§6.3): a mono file gives a sample
of shape ``(frames,)``, a file with C channels a sample ``(frames, C)``. The
feature's ``sample_rate`` attribute (§6.1) holds its rate in Hz. A string
feature ``id`` (role ``metadata``, §6.4) holds each sample's id, so that a
sample can be traced back to its files (a folder named ``id`` is refused).

Stored dtype
------------
Without ``sample_rate`` and ``mono``, each file is decoded with
``soundfile.read(path, dtype=D)`` where D follows the file's subtype
(:func:`subtype_dtype`), so the stored values are exactly soundfile's:

=============================================  =========
subtype                                        dtype D
=============================================  =========
PCM_S8, PCM_U8, PCM_16, ULAW, ALAW             int16
PCM_24, PCM_32                                 int32
FLOAT                                          float32
DOUBLE                                         float64
anything else (VORBIS, OPUS, MPEG, ADPCM, ...)  float32
=============================================  =========

Integers keep soundfile's full-scale convention (8-bit values are shifted
into 16 bits, 24-bit values into the top of 32 bits), floats lie in
[-1, 1]. When the files of one feature map to different dtypes, the feature
takes one that holds each of them exactly (:func:`common_dtype`): int16 and
int32 give int32; int16 and float32 give float32; any other mix gives
float64.

Rates and channels
------------------
All files of a feature (over every split) must share one sample rate and one
channel count; this is checked with ``soundfile.info`` before anything is
decoded. A mismatch is an :class:`h5ml.IngestError` naming two files that
differ; with ``on_error="skip"`` the files that differ from the most common
value (the first one met on a tie) are skipped instead. Every problem found
before decoding (missing counterparts, ids of two files, unreadable files,
sample rates, channel counts) is in one message, each kind with its count
and examples (:func:`h5ml.ingest.audio.probe.raise_problems`), so one run
tells every kind to fix. A split of which every sample is left out is
refused unless ``allow_empty_splits``.

- ``sample_rate=R`` decodes every file as float32 and resamples the files
  whose rate is not R to R with soxr (libsoxr's "HQ" quality, the
  ``soxr.resample`` default); every audio feature is then float32 at R Hz.
- ``mono=True`` decodes every file as float32 and averages its channels
  (``numpy.mean(x, axis=1, dtype=float32)``); every audio feature is then
  float32 of shape ``(frames,)``. With both options, channels are averaged
  first, then the result is resampled.

Roles
-----
The ``id`` feature has role ``metadata``. When the tree has exactly two audio
features and their names (case-insensitive) tell input from target, they get
roles ``input`` and ``target`` (§6.1): a feature named as in
:data:`INPUT_NAMES` is the input, one named as in :data:`TARGET_NAMES` the
target; when only one of the two is recognised, the other gets the other role.
A single audio feature named as an input gets role ``input``. Otherwise (two
inputs, two targets, neither recognised, more than two features) no role is
set (:func:`pair_roles`).

Modules: :mod:`~h5ml.ingest.audio.tree` lists the folder,
:mod:`~h5ml.ingest.audio.probe` checks every file before decoding,
:mod:`~h5ml.ingest.audio.dtypes` chooses the stored dtypes,
:mod:`~h5ml.ingest.audio.decode` decodes a sample (in the workers),
:mod:`~h5ml.ingest.audio.convert` is :func:`convert_audio_folder`.
"""

from h5ml.ingest.audio.convert import convert_audio_folder
from h5ml.ingest.audio.dtypes import common_dtype, subtype_dtype
from h5ml.ingest.audio.probe import MAX_RESAMPLE_FACTOR
from h5ml.ingest.audio.tree import AUDIO_EXTENSIONS, AUDIO_FEATURE, AUDIO_LAYOUTS, AudioLayout
from h5ml.ingest.features import INPUT_NAMES, TARGET_NAMES, pair_roles
from h5ml.ingest.report import ID_FEATURE

__all__ = [
    "AUDIO_EXTENSIONS",
    "AUDIO_FEATURE",
    "AUDIO_LAYOUTS",
    "ID_FEATURE",
    "INPUT_NAMES",
    "MAX_RESAMPLE_FACTOR",
    "TARGET_NAMES",
    "AudioLayout",
    "common_dtype",
    "convert_audio_folder",
    "pair_roles",
    "subtype_dtype",
]
