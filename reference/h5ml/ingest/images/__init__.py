"""Image folders (torchvision ``ImageFolder`` trees) to h5ml files, for ``h5ml convert`` (§6.2, §6.3, §6.5, §6.6).

The folder
----------
Two layouts, as torchvision's ``ImageFolder`` reads them::

    ROOT/<split>/<class>/<file>      splits given by the folders (folder layout "splits")
    ROOT/<class>/<file>              no split level (folder layout "classes")

With ``folder_layout="auto"`` (the default) the tree is read as "splits" when ROOT
has at least one folder, no folder of ROOT holds an image file directly, and
every folder of ROOT holds sub-folders; otherwise as "classes". (A
class-only tree whose class folders hold nothing but sub-folders, such as
``cat/indoor/1.png``, therefore reads as splits: pass ``folder_layout="classes"``
for it.) Split folders ``val``, ``valid``, ``dev``, ``eval``, ``training``
and ``testing`` are stored under the standard name
:func:`h5ml.ingest.naming.standard_split_name` gives them (``validation``; ``test`` for
``eval`` and ``testing``; ``train``), so the file passes ``validate
--strict`` (W207); other split folders keep their names (two folders for one
split are refused). Without a split level,
``split_ratios`` cuts the samples into splits, stratified on the class (the
same seed gives the same cut); without it every sample goes to ``train``.

A class folder's files are found at any depth below it (as ``ImageFolder``
does; symbolic links are followed, a link loop is walked once). Image files
are those whose extension is ``.png``, ``.jpg``, ``.jpeg``, ``.bmp``,
``.gif``, ``.tif``, ``.tiff`` or ``.webp``, in any case. Everything else is
ignored without a word: other files (``README.txt``, ``labels.csv``,
``Thumbs.db``), and hidden files and folders (names starting with ``.``,
such as ``.DS_Store`` and ``.ipynb_checkpoints``). A class folder holding no
image file is not a class. An image file that has no class folder (directly
in ROOT, or directly in a split folder) is bad input, as is a file whose path
is not valid UTF-8 (stop, or skip with ``on_error="skip"``). In the layout
"split-files" a split folder's image files are found at any depth below it,
and an image directly in ROOT is bad input. A split of which
``on_error="skip"`` leaves no file is refused unless ``allow_empty_splits``
(:func:`h5ml.ingest.pipeline.ingest`).

What is stored
--------------
Each split gets three features (two without classes):

- ``image`` (role ``input``): see ``mode`` below;
- ``label`` (role ``target``; not in the layout "split-files", whose images
  have no class): categorical (§6.5), the class names being the
  class folder names sorted as Python sorts strings (so code k is
  torchvision's ``class_to_idx`` of the same tree), the same list in every split;
- ``id`` (role ``metadata``): string (§6.4), the file's path relative to ROOT
  with ``/`` separators (``train/cat/001.png``), so each sample traces back to
  its file.

Samples are in the natural order of their ids (``img2`` before ``img10``),
or shuffled with a recorded seed (``shuffle``, §7.6).

``mode``:

- ``"dense"`` (§6.2): every image decoded, converted to ``color`` and
  resized to ``size = (W, H)``, stored as uint8 ``(N, H, W, C)``. An image
  already of that size is not resampled (its pixels are stored exactly).
  ``resize`` says how other sizes fit: ``"stretch"`` (both axes scaled, the
  aspect ratio changes), ``"crop"`` (scaled so that the image covers the
  size, then the centre cut out) or ``"pad"`` (scaled so that it fits inside,
  then centred on zeros: black, and transparent with an alpha channel).
- ``"ragged"`` (§6.3): every image decoded and converted to ``color`` at its
  own size, stored ragged with per-sample shapes ``(H, W, C)``. The
  ``shapes`` dataset is always written, even when only heights vary (where
  §6.3 would prefer rows), so that every split and every image file has one
  layout and the sizes are known without reading the pixels.
- ``"bytes"`` (§6.6): every file stored byte for byte as it is (no decoding
  into the file, no re-encoding). Each file is still decoded once to check
  that it is a whole image. ``media_type`` is ``image/png``,
  ``image/jpeg``, ``image/gif``, ``image/bmp``, ``image/tiff`` or
  ``image/webp`` when every file has that format (told by the file's
  signature, not its extension); when formats are mixed no media type is
  given and the writer records the SPEC default ``application/octet-stream``
  (§6.6). Decode samples with :func:`h5ml.reader.imagecodec.decode_image`.

Decoding uses Pillow (:mod:`h5ml.reader.imagecodec`: 8-bit images only, the first
frame of a multi-frame file, EXIF orientation not applied). A file that does
not decode whole (truncated, corrupt, not an image at all despite its
extension, 16-bit pixels in dense or ragged mode) stops the conversion with
:class:`h5ml.IngestError` naming it, or is skipped and recorded with
``on_error="skip"`` (:data:`h5ml.ingest.SKIPPED_ATTR`).

Modules: :mod:`~h5ml.ingest.images.settings` checks the options,
:mod:`~h5ml.ingest.images.tree` lists the folder,
:mod:`~h5ml.ingest.images.decode` decodes and fits an image (in the workers),
:mod:`~h5ml.ingest.images.convert` is :func:`convert_image_folder`.
"""

from h5ml.ingest.folders import IMAGE_EXTENSIONS
from h5ml.ingest.images.convert import convert_image_folder
from h5ml.ingest.images.settings import FolderLayout, ImageMode, Resample, ResizeMode, parse_size

__all__ = [
    "IMAGE_EXTENSIONS",
    "FolderLayout",
    "ImageMode",
    "Resample",
    "ResizeMode",
    "convert_image_folder",
    "parse_size",
]
