"""The audio folder converter: :func:`convert_audio_folder` (§6.1, §6.3, §6.4, §7.6).

Lists the folder (:mod:`h5ml.ingest.audio.tree`), checks every file
(:mod:`h5ml.ingest.audio.probe`), declares the features (one ragged feature
per feature folder, with its rate, and the ``id`` feature), and writes the
samples through :func:`h5ml.ingest.pipeline.ingest`, decoded by
:func:`h5ml.ingest.audio.decode.decode_sample` in the workers.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.audio.decode import DecodeOptions, decode_sample
from h5ml.ingest.audio.dtypes import common_dtype, full_scale, subtype_dtype
from h5ml.ingest.audio.probe import (
    FileInfo,
    Probed,
    check_resampling,
    drop,
    mismatches,
    probe_item,
    raise_problems,
)
from h5ml.ingest.audio.tree import AUDIO_LAYOUTS, AudioLayout, Problem, match_ids, scan
from h5ml.ingest.docstrings import SPLIT_SEED_NOTE, shared_doc
from h5ml.ingest.features import pair_roles
from h5ml.ingest.naming import natural_key
from h5ml.ingest.options import (
    PIPELINE_OPTIONS,
    SHARED_OPTIONS,
    ConvertOptions,
    OnError,
    check_choice,
    parameter_error,
)
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.parallel import ordered_map
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.provenance import folder_splits, record
from h5ml.ingest.report import ID_FEATURE, IngestReport, Skipped, SourceItem, quote_skipped
from h5ml.ingest.splitting import check_ratios
from h5ml.model.values import FeatureSpec

__all__ = ["convert_audio_folder"]


def _describe(feature: str, dtype: str, subtypes: Sequence[str], options: DecodeOptions) -> str:
    text = f"Audio of the files in the {feature!r} folders ({', '.join(sorted(set(subtypes)))}), "
    if not options.converts:
        return text + f"as soundfile decodes them to {dtype} ({full_scale(dtype)})."
    steps = ["decoded by soundfile to float32"]
    if options.mono:
        steps.append("averaged over channels")
    if options.sample_rate is not None:
        steps.append(f"resampled to {options.sample_rate:g} Hz by soxr (HQ)")
    return text + ", ".join(steps) + " (full scale 1.0)."


def _probe(splits: Mapping[str, list[SourceItem]], options: ConvertOptions) -> tuple[list[Problem], Probed]:
    """``soundfile.info`` of every file, in the workers: the unreadable files and the others' infos by feature."""
    items = [i for items in splits.values() for i in items]
    unreadable: list[Problem] = []
    infos: Probed = {}
    for item, result in ordered_map(probe_item, items, options.workers, processes=options.processes):
        if isinstance(result, BaseException):  # probe_item reports file errors itself: this is a bug or a crash
            unreadable.append(
                Problem(item.split, item.sample_id, item.first_path, f"{type(result).__name__}: {result}")
            )
            continue
        for feature, path in item.parts:
            info = result[path]
            if isinstance(info, str):
                unreadable.append(Problem(item.split, item.sample_id, path, info))
            else:
                infos.setdefault(feature, []).append((item, path, info))
    bad = {(p.split, p.sample_id) for p in unreadable}
    infos = {f: [e for e in files if (e[0].split, e[0].sample_id) not in bad] for f, files in infos.items()}
    return unreadable, infos


def _features(
    files: Mapping[str, list[tuple[SourceItem, str, FileInfo]]], options: DecodeOptions
) -> dict[str, FeatureSpec]:
    """The ``id`` feature and one ragged feature per feature folder, with its rate and roles (§6.1, §6.3)."""
    roles = pair_roles(sorted(files, key=natural_key))
    features: dict[str, FeatureSpec] = {
        ID_FEATURE: FeatureSpec(
            encoding="string",
            role="metadata",
            description="Sample id: the audio file name without its extension, the same in every feature folder.",
        )
    }
    for feature, entries in files.items():
        dtype = "float32" if options.converts else options.dtypes[feature]
        features[feature] = FeatureSpec(
            encoding="ragged",
            dtype=dtype,
            role=roles.get(feature),
            sample_rate=options.sample_rate if options.sample_rate is not None else float(options.rates[feature]),
            description=_describe(feature, dtype, [e[2].subtype for e in entries], options),
        )
    return features


@shared_doc(
    (*SHARED_OPTIONS, *PIPELINE_OPTIONS),
    notes={
        "seed": SPLIT_SEED_NOTE,
        "workers": "They also check every file with ``soundfile.info`` before any is decoded.",
    },
)
def convert_audio_folder(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    sample_rate: float | None = None,
    mono: bool = False,
    folder_layout: AudioLayout = "auto",
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
    """Convert a folder of WAV/FLAC/Ogg files into an h5ml file, one ragged feature per folder (§6.3, §6.1, §7.6).

    The folder layout, the stored dtypes, the rate and channel rules and the
    roles are described in :mod:`h5ml.ingest.audio`. Every file is checked
    with ``soundfile.info`` before any is decoded.

    Parameters
    ----------
    root
        ``ROOT`` of ``ROOT/<split>/<feature>/<id>.<ext>``, ``ROOT/<feature>/<id>.<ext>`` or ``ROOT/<split>/<id>.<ext>``.
    output
        The h5ml file to write (refused if it exists unless ``overwrite``).
    sample_rate
        Resample every file to this rate in Hz (> 0) with soxr; the audio
        features are then float32 (full scale 1.0). ``None`` keeps each
        feature's own rate, which all its files must share.
    mono
        Average the channels of every file (float32, shape ``(frames,)``).
        ``False`` keeps the channels, whose count all files of a feature
        must share.
    folder_layout
        ``"auto"`` (told from the tree, see :mod:`h5ml.ingest.audio`),
        ``"splits"`` (``ROOT/<split>/<feature>/<id>.<ext>``), ``"features"``
        (``ROOT/<feature>/<id>.<ext>``) or ``"split-files"``
        (``ROOT/<split>/<id>.<ext>``, one feature ``audio``) (``--folder-layout``).
    split_ratios
        ``{"train": 0.8, "test": 0.2}``: assign the samples of a folder
        without split level to splits (not stratified: audio has no label).
        ``None``: everything goes to ``train``.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples written per split, skipped files with their reasons, time taken.

    Raises
    ------
    IngestError
        With ``on_error="stop"``: files soundfile cannot read, missing
        counterparts, two files with one id, files of a feature with different
        rates or channel counts (naming both files): every kind found in one
        message, with counts and examples. In any mode: a tree without audio
        files (the message says what it holds), that fits no layout or (auto)
        is half ``ROOT/<split>/<id>.<ext>``, a folder name that cannot name a
        split or feature, or a split of which every sample was left out
        (unless ``allow_empty_splits``). The output is left as it was.
    FileNotFoundError
        If ``root`` is not a directory, or the output's directory does not exist.
    {shared_raises}
    h5ml.errors.ParameterError
        Also if ``sample_rate`` is not a finite number > 0 or changes a file's
        rate by more than :data:`h5ml.ingest.audio.MAX_RESAMPLE_FACTOR` times,
        or ``split_ratios`` are invalid or given for a folder that has splits.

    Notes
    -----
    Each split of the output holds one ``ragged`` feature (§6.3) per feature
    folder, sample i of shape ``(frames,)`` (mono) or ``(frames, channels)``,
    dtype int16, int32, float32 or float64 (see "Stored dtype"), with the
    ``sample_rate`` attribute in Hz (§6.1), and the string feature ``id``
    ``(N,)``. Samples are in natural id order unless shuffled on write.
    """
    options = ConvertOptions.pick(locals())
    check_choice("folder_layout", folder_layout, AUDIO_LAYOUTS)
    source = Path(root)
    if sample_rate is not None and not (
        isinstance(sample_rate, (int, float)) and math.isfinite(sample_rate) and sample_rate > 0
    ):
        raise parameter_error("sample_rate", f"sample_rate must be a number of Hz > 0, got {sample_rate!r}")
    if not isinstance(mono, bool):
        raise parameter_error("mono", f"mono must be True or False, got {mono!r}")
    ratios = None if split_ratios is None else check_ratios(split_ratios)
    out = check_output(output, options.overwrite, [source], sharded=options.sharded)
    tree, where, layout = scan(source, ratios, options.seed, folder_layout)
    splits, problems = match_ids(tree, where)
    skipped: list[Skipped] = []
    splits = drop(splits, problems, skipped)
    unreadable, infos = _probe(splits, options)
    check_resampling(infos, sample_rate)
    mismatched = mismatches(infos, sample_rate, mono)
    if options.on_error == "stop":
        raise_problems([*problems, *unreadable, *mismatched], out)
    splits = drop(splits, [*unreadable, *mismatched], skipped)
    if not any(splits.values()):
        raise IngestError(
            f"{source}: every sample was left out ({len(skipped)} file(s) skipped: {quote_skipped(skipped, 3)}), "
            f"nothing to write to {out}; fix those files",
            path=str(source),
        )
    kept = {(i.split, i.sample_id) for items in splits.values() for i in items}
    files = {f: [e for e in entries if (e[0].split, e[0].sample_id) in kept] for f, entries in infos.items()}
    files = {f: entries for f, entries in files.items() if entries}
    decoding = DecodeOptions(
        dtypes={f: common_dtype([subtype_dtype(e[2].subtype) for e in entries]) for f, entries in files.items()},
        rates={f: entries[0][2].samplerate for f, entries in files.items()},
        channels={f: entries[0][2].channels for f, entries in files.items()},
        sample_rate=None if sample_rate is None else float(sample_rate),
        mono=mono,
    )
    return ingest(
        out,
        splits,
        functools.partial(decode_sample, options=decoding),
        options,
        metadata=record(
            conversion_metadata("audio folder", source, options.metadata, out),
            folder_splits(
                source,
                source,
                splits,
                split_folders=layout != "features",
                ratios=ratios is not None,
            ),
        ),
        features=_features(files, decoding),
        skipped=skipped,
    )
