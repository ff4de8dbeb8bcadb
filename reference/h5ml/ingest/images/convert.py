"""The image folder converter: :func:`convert_image_folder` (§6.2, §6.3, §6.5, §6.6, §7.6).

Checks the options (:mod:`h5ml.ingest.images.settings`), lists the folder
(:mod:`h5ml.ingest.images.tree`), declares ``image``, ``label`` and ``id``,
and writes the samples through :func:`h5ml.ingest.pipeline.ingest`, decoded
by :func:`h5ml.ingest.images.decode.decode_item` in the workers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from h5ml.ingest.docstrings import SPLIT_SEED_NOTE, shared_doc
from h5ml.ingest.folders import SPLIT_FILES
from h5ml.ingest.images.decode import decode_item
from h5ml.ingest.images.settings import CHANNELS, FolderLayout, ImageMode, Resample, ResizeMode, checked_settings
from h5ml.ingest.images.tree import items_by_split, no_image_file, scan, settle, shown, sniff_all
from h5ml.ingest.options import PIPELINE_OPTIONS, SHARED_OPTIONS, ConvertOptions, OnError, parameter_error
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.provenance import folder_splits, record
from h5ml.ingest.report import ID_FEATURE, IngestReport
from h5ml.ingest.splitting import check_ratios, split_seed
from h5ml.model.values import FeatureSpec
from h5ml.reader.imagecodec import IMAGE_MEDIA_TYPES

__all__ = ["convert_image_folder"]


def _image_spec(
    mode: str, size: tuple[int, int] | None, resize: str, color: str, resample: str, media_type: str | None
) -> FeatureSpec:
    """The §6.1 options of ``image`` in each mode."""
    if mode == "dense":
        assert size is not None
        width, height = size
        return FeatureSpec(
            encoding="dense",
            dtype=np.uint8,
            role="input",
            description=(
                f"Image pixels, uint8 (H, W, C) = ({height}, {width}, {CHANNELS[color]}), colour {color}, "
                f"resized to {width}x{height} by {resize} ({resample})."
            ),
        )
    if mode == "ragged":
        return FeatureSpec(
            encoding="ragged",
            dtype=np.uint8,
            sample_ndim=3,
            role="input",
            description=f"Image pixels at each file's size, uint8 (H, W, C), colour {color}; shapes gives (H, W, C).",
        )
    return FeatureSpec(
        encoding="bytes",
        role="input",
        media_type=media_type,
        description="The image files as they were; decode a sample with h5ml.reader.imagecodec.decode_image.",
    )


def _features(classes: Sequence[str], image: FeatureSpec, labeled: bool) -> dict[str, FeatureSpec]:
    """The §6.1 options of ``image``, ``label`` (not for ``ROOT/<split>/<file>``) and ``id``."""
    label = FeatureSpec(
        encoding="categorical",
        class_names=list(classes),
        role="target",
        description="The class: the name of the image's class folder.",
    )
    return {
        "image": image,
        **({"label": label} if labeled else {}),
        ID_FEATURE: FeatureSpec(
            encoding="string", role="metadata", description="The image file's path relative to the source folder."
        ),
    }


@shared_doc(
    (*SHARED_OPTIONS, *PIPELINE_OPTIONS),
    notes={
        "seed": SPLIT_SEED_NOTE,
    },
)
def convert_image_folder(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    mode: ImageMode = "dense",
    size: Sequence[int] | None = None,
    resize: ResizeMode = "stretch",
    color: str = "RGB",
    resample: Resample = "bilinear",
    folder_layout: FolderLayout = "auto",
    split_ratios: Mapping[str, float] | None = None,
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
    allow_empty_splits: bool = False,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
) -> IngestReport:
    """Convert an image folder (torchvision ``ImageFolder`` layout) to an h5ml file (§6.2, §6.3, §6.5, §6.6).

    See :mod:`h5ml.ingest.images` for the folder layouts, the files read and
    ignored, and the features written (``image``, ``label``, ``id``; no
    ``label`` for ``ROOT/<split>/<file>``).

    Parameters
    ----------
    root
        The folder: ``ROOT/<split>/<class>/<file>``, ``ROOT/<class>/<file>`` or ``ROOT/<split>/<file>``.
    output
        The h5ml file to write (refused if it exists, unless ``overwrite``).
    mode
        ``"dense"``: uint8 ``(N, H, W, C)`` at ``size`` (§6.2); ``"ragged"``:
        uint8 ``(H, W, C)`` at each image's own size, with ``shapes`` (§6.3);
        ``"bytes"``: the files' bytes unchanged, with ``media_type`` when all
        share one format (§6.6).
    size
        ``(W, H)`` in pixels, both >= 1, as Pillow gives sizes: required by
        ``"dense"``, refused by the other modes (which keep sizes).
    resize
        ``"dense"``: ``"stretch"``, ``"crop"`` (scale to cover, cut the
        centre) or ``"pad"`` (scale to fit, centre on zeros).
    color
        ``"RGB"`` (C = 3, the default), ``"RGBA"`` (4), ``"L"`` (1), ``"LA"``
        (2), or ``"keep"`` (each file's own channels; ragged only, as dense
        samples share one C). Not used by ``"bytes"``: give it to
        :func:`h5ml.reader.imagecodec.decode_image` when reading.
    resample
        Pillow's filter for resizing: ``"nearest"``, ``"bilinear"`` (the
        default), ``"bicubic"`` or ``"lanczos"``.
    folder_layout
        ``"auto"`` (decided from the tree, see :mod:`h5ml.ingest.images`),
        ``"splits"`` (``ROOT/<split>/<class>/<file>``), ``"classes"``
        (``ROOT/<class>/<file>``) or ``"split-files"`` (``ROOT/<split>/<file>``,
        no labels) (``--folder-layout``).
    split_ratios
        Without a split level: split name -> fraction, adding up to 1, such as
        ``{"train": 0.8, "test": 0.2}``; every class is cut by these
        fractions (stratified). ``None``: every sample goes to ``train``.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples written per split, skipped files with their reasons, time taken.

    Raises
    ------
    {shared_raises}
    h5ml.errors.ParameterError
        Also if an image option is invalid: an unknown ``mode``, ``resize``,
        ``color``, ``resample`` or ``folder_layout``; ``size`` missing in
        dense mode, given in another mode, or not two integers >= 1;
        ``color="keep"`` in dense mode; invalid ``split_ratios``, or
        ``split_ratios`` for a tree that has split folders.
    NotADirectoryError
        If ``root`` is not a folder.
    IngestError
        If the tree holds no image file (the message says what it holds), it
        is half ``ROOT/<split>/<file>`` and half another layout with
        ``folder_layout="auto"`` (the message says which ``folder_layout``
        gives which reading), a split lost every file (unless
        ``allow_empty_splits``), a class or split folder name cannot
        be stored (not valid UTF-8, not a valid split name, two folders for
        one split), or (``on_error="stop"``) a file is bad: outside a class
        folder, with a path that is not UTF-8, unreadable, not an image of
        its kind, truncated or corrupt. The message names the file(s) and
        says what to do; the output is left as it was.
    """
    options = ConvertOptions.pick(locals())
    fit = checked_settings(mode, size, resize, color, resample, folder_layout)
    source = Path(root)
    if not source.is_dir():
        raise NotADirectoryError(
            f"{shown(source)}: not a folder; give the root of an image folder tree (ROOT/<class>/<file>)"
        )
    out = check_output(output, options.overwrite, sharded=options.sharded)
    ratios = None if split_ratios is None else check_ratios(split_ratios)
    found, problems, classes, layout = scan(source, folder_layout)
    planned = {f.split for f in found} | {p.split for p in problems if p.split}
    if ratios is not None and layout != "classes":
        raise parameter_error(
            "split_ratios",
            f"{shown(source)}: the folder already has split folders ({sorted({f.split for f in found})}); drop "
            "split_ratios, or pass folder_layout='classes' (--folder-layout classes) if its folders are classes",
        )
    media_type: str | None = None
    if mode == "bytes":
        formats, bad = sniff_all(found)
        problems += bad
        found = [f for f in found if f.path in formats]
        kinds = {formats[f.path] for f in found}
        media_type = IMAGE_MEDIA_TYPES[kinds.pop()] if len(kinds) == 1 else None
    skipped = settle(problems, options.on_error, out)
    if not found:
        raise no_image_file(source, len(skipped))
    splits = items_by_split(found, ratios, split_seed(options.seed), classes, planned - {""})
    decode = functools.partial(decode_item, mode=mode, size=fit, resize=resize, color=color, resample=resample)
    return ingest(
        out,
        splits,
        decode,
        options,
        metadata=record(
            conversion_metadata("image folder", shown(source), options.metadata, out),
            folder_splits(shown(source), source, splits, split_folders=layout != "classes", ratios=ratios is not None),
        ),
        features=_features(classes, _image_spec(mode, fit, resize, color, resample, media_type), layout != SPLIT_FILES),
        skipped=skipped,
    )
