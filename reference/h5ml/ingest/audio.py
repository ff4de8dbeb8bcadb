"""Convert a folder of audio files (WAV, FLAC, Ogg) into an h5ml file (``h5ml convert``).

Folder layout
-------------
Two layouts are accepted; which one is decided from the tree (hidden entries,
whose names start with ".", are ignored everywhere):

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

Audio files directly in ROOT, a feature folder that holds folders, or folders
under ROOT of both kinds are refused with :class:`h5ml.IngestError`. Files
with other extensions are ignored. Audio files are those ending in ``.wav``,
``.flac`` or ``.ogg`` (any case), decoded with ``soundfile`` (libsndfile).

Samples
-------
A sample's id is its file name without the extension. Within a split, the
files of each feature are matched by id; ids are stored in natural order
(:func:`h5ml.ingest.pipeline.natural_key`: ``2`` before ``10``). An id that
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
value (the first one met on a tie) are skipped instead.

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
Otherwise (two inputs, two targets, neither recognised, not two features) no
role is set (:func:`pair_roles`).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import soundfile
import soxr

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.pipeline import (
    ID_FEATURE,
    DecodeError,
    IngestReport,
    OnError,
    Skipped,
    SourceItem,
    check_output,
    conversion_metadata,
    ingest,
    natural_key,
    ordered_map,
)
from h5ml.ingest.splitting import assign_splits
from h5ml.model.values import FeatureSpec

__all__ = [
    "AUDIO_EXTENSIONS",
    "ID_FEATURE",
    "INPUT_NAMES",
    "MAX_RESAMPLE_FACTOR",
    "TARGET_NAMES",
    "common_dtype",
    "convert_audio_folder",
    "pair_roles",
    "subtype_dtype",
]

#: File extensions read as audio (compared case-insensitively).
AUDIO_EXTENSIONS: Final = (".wav", ".flac", ".ogg")
#: Feature names (lower case) recognised as the input of an input/target pair.
INPUT_NAMES: Final = frozenset({"data", "input", "noisy", "x", "mix"})
#: Feature names (lower case) recognised as the target of an input/target pair.
TARGET_NAMES: Final = frozenset({"label", "target", "clean", "y"})

_INT16_SUBTYPES: Final = frozenset({"PCM_S8", "PCM_U8", "PCM_16", "ULAW", "ALAW"})
_INT32_SUBTYPES: Final = frozenset({"PCM_24", "PCM_32"})
_FULL_SCALE: Final = {"int16": "full scale 32768", "int32": "full scale 2**31"}


# --------------------------------------------------------------------------
# dtype rules


def subtype_dtype(subtype: str) -> str:
    """The dtype a file of this libsndfile subtype is decoded to (module docstring, "Stored dtype").

    Parameters
    ----------
    subtype
        ``soundfile.info(path).subtype``, e.g. ``"PCM_16"``, ``"FLOAT"``, ``"VORBIS"``.

    Returns
    -------
    str
        ``"int16"``, ``"int32"``, ``"float32"`` or ``"float64"``: the ``dtype``
        given to ``soundfile.read`` so that the stored values are exactly
        its decoding (lossy and compressed subtypes give ``"float32"``).
    """
    if subtype in _INT16_SUBTYPES:
        return "int16"
    if subtype in _INT32_SUBTYPES:
        return "int32"
    if subtype == "DOUBLE":
        return "float64"
    return "float32"


def common_dtype(dtypes: Sequence[str]) -> str:
    """One dtype that holds soundfile's decoding of every file of a feature exactly.

    Parameters
    ----------
    dtypes
        The :func:`subtype_dtype` of each file (at least one).

    Returns
    -------
    str
        The dtype when all agree; ``"int32"`` for int16 with int32;
        ``"float32"`` for int16 with float32; ``"float64"`` for any other mix.

    Raises
    ------
    ValueError
        If ``dtypes`` is empty.
    """
    kinds = set(dtypes)
    if not kinds:
        raise ValueError("common_dtype needs at least one dtype")
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"int16", "int32"}:
        return "int32"
    if kinds == {"int16", "float32"}:
        return "float32"
    return "float64"


# --------------------------------------------------------------------------
# listing the tree


@dataclass(frozen=True)
class _Problem:
    """A sample that cannot be converted as it is: ``path`` is at fault for ``reason``."""

    split: str
    sample_id: str
    path: str
    reason: str


@dataclass(frozen=True)
class _Info:
    """What ``soundfile.info`` says about one file."""

    samplerate: int
    channels: int
    subtype: str


#: The largest factor by which ``sample_rate`` may raise or lower a file's rate. Beyond it soxr takes
#: seconds per clip (lowering) or does not finish (raising 1 Hz to 1 MHz), and no audio task needs it.
MAX_RESAMPLE_FACTOR: Final = 256


def _check_resampling(infos: Mapping[str, list[tuple[SourceItem, str, _Info]]], sample_rate: float | None) -> None:
    """Refuse a ``sample_rate`` more than :data:`MAX_RESAMPLE_FACTOR` times above or below a file's rate.

    Raises
    ------
    ValueError
        Naming the first such file, its rate, and the rates that would do.
    """
    if sample_rate is None:
        return
    rates = [info.samplerate for entries in infos.values() for _, _, info in entries]
    if not rates:
        return
    low, high = max(rates) / MAX_RESAMPLE_FACTOR, min(rates) * MAX_RESAMPLE_FACTOR
    for entries in infos.values():
        for _, path, info in entries:
            if not info.samplerate * MAX_RESAMPLE_FACTOR >= sample_rate >= info.samplerate / MAX_RESAMPLE_FACTOR:
                raise ValueError(
                    f"{path}: resampling its {info.samplerate} Hz to sample_rate={sample_rate:g} Hz changes the rate "
                    f"by more than {MAX_RESAMPLE_FACTOR}x; choose a rate between {low:g} and {high:g} Hz, within "
                    f"{MAX_RESAMPLE_FACTOR}x of every file's rate (--sample-rate R)"
                )


def _visible(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: natural_key(p.name))


def _is_audio(path: Path) -> bool:
    return path.suffix.lower() in AUDIO_EXTENSIONS and path.is_file()


def _check_name(name: str, kind: str, folder: Path) -> None:
    if not spec.is_valid_name(name):
        raise IngestError(
            f"{folder}: the folder name {name!r} cannot name a {kind} (§5.1: no '/', '.' or '_' or whitespace at "
            "the start, at most 255 UTF-8 bytes); rename the folder",
            path=str(folder),
        )


def _feature_files(folder: Path) -> dict[str, list[Path]]:
    """``{id: [files]}`` of one feature folder (several files for one id are reported later)."""
    files: dict[str, list[Path]] = {}
    for entry in _visible(folder):
        if entry.is_dir():
            raise IngestError(
                f"{entry}: a feature folder holds audio files, not folders (layout ROOT/<split>/<feature>/<id>.wav "
                "or ROOT/<feature>/<id>.wav); move or remove this folder",
                path=str(entry),
            )
        if _is_audio(entry):
            files.setdefault(entry.stem, []).append(entry)
    return files


def _layout(root: Path) -> tuple[bool, list[Path]]:
    """Whether ROOT has a split level, and the folders directly under it (module docstring, "Folder layout")."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: the audio folder does not exist or is not a directory")
    entries = _visible(root)
    loose = [p for p in entries if _is_audio(p)]
    if loose:
        raise IngestError(
            f"{loose[0]}: audio files lie directly in {root}; put each feature's files in its own folder, "
            "ROOT/<feature>/<id>.wav or ROOT/<split>/<feature>/<id>.wav",
            path=str(loose[0]),
        )
    folders = [p for p in entries if p.is_dir()]
    holds_folders = [f for f in folders if any(p.is_dir() for p in _visible(f))]
    holds_audio = [f for f in folders if any(_is_audio(p) for p in _visible(f))]
    both = [f for f in holds_folders if f in holds_audio]
    if both:
        raise IngestError(
            f"{both[0]}: holds both folders and audio files; a folder under {root} is either a split "
            "(holding feature folders) or a feature (holding audio files)",
            path=str(both[0]),
        )
    if holds_folders and holds_audio:
        raise IngestError(
            f"{root}: {holds_folders[0].name!r} holds folders (a split) but {holds_audio[0].name!r} holds audio "
            "files (a feature); use one layout, ROOT/<split>/<feature>/<id>.wav or ROOT/<feature>/<id>.wav",
            path=str(root),
        )
    if not holds_folders and not holds_audio:
        raise IngestError(
            f"{root}: no audio files found (extensions {', '.join(AUDIO_EXTENSIONS)}); the layout is "
            "ROOT/<split>/<feature>/<id>.wav or ROOT/<feature>/<id>.wav",
            path=str(root),
        )
    return bool(holds_folders), holds_folders or holds_audio


def _feature_folders(folders: Sequence[Path]) -> dict[str, dict[str, list[Path]]]:
    out: dict[str, dict[str, list[Path]]] = {}
    for folder in folders:
        _check_name(folder.name, "feature", folder)
        if folder.name == ID_FEATURE:
            raise IngestError(
                f"{folder}: a feature folder may not be named {ID_FEATURE!r}, the name of the feature holding the "
                "sample ids; rename the folder",
                path=str(folder),
            )
        files = _feature_files(folder)
        if files:
            out[folder.name] = files
    return out


def _scan(
    root: Path, split_ratios: Mapping[str, float] | None, seed: int | None
) -> tuple[dict[str, dict[str, dict[str, list[Path]]]], dict[tuple[str, str], Path]]:
    """``{split: {feature: {id: [files]}}}`` and each (split, feature)'s folder."""
    has_splits, folders = _layout(root)
    tree: dict[str, dict[str, dict[str, list[Path]]]] = {}
    where: dict[tuple[str, str], Path] = {}
    if has_splits:
        if split_ratios is not None:
            raise ValueError(
                f"{root}: the folder already has splits ({', '.join(f.name for f in folders)}); split_ratios "
                "(--split) applies to ROOT/<feature>/<id>.wav folders only, drop it"
            )
        for split_folder in folders:
            _check_name(split_folder.name, "split", split_folder)
            loose = [p for p in _visible(split_folder) if _is_audio(p)]
            if loose:
                raise IngestError(
                    f"{loose[0]}: an audio file directly in the split folder {split_folder}; put it in a feature "
                    "folder, ROOT/<split>/<feature>/<id>.wav",
                    path=str(loose[0]),
                )
            features = _feature_folders([p for p in _visible(split_folder) if p.is_dir()])
            if features:
                tree[split_folder.name] = features
                where.update({(split_folder.name, f): split_folder / f for f in features})
        return tree, where
    features = _feature_folders(folders)
    ids = sorted({i for files in features.values() for i in files}, key=lambda i: (natural_key(i), i))
    if split_ratios is None:
        assigned = ["train"] * len(ids)
    else:
        assigned = assign_splits(len(ids), split_ratios, 0 if seed is None else seed)
    names = list(split_ratios or {"train": 1.0})
    for name in names:
        _check_name(name, "split", root)
    split_of = dict(zip(ids, assigned, strict=True))
    for name in names:
        tree[name] = {
            feature: {i: paths for i, paths in files.items() if split_of[i] == name}
            for feature, files in features.items()
        }
        where.update({(name, f): root / f for f in features})
    return tree, where


def _samples(
    tree: Mapping[str, Mapping[str, Mapping[str, list[Path]]]], where: Mapping[tuple[str, str], Path]
) -> tuple[dict[str, list[SourceItem]], list[_Problem]]:
    """The items of each split, in natural id order, and the samples with a missing or doubled file."""
    splits: dict[str, list[SourceItem]] = {}
    problems: list[_Problem] = []
    for split, features in tree.items():
        names = sorted(features, key=natural_key)
        ids = sorted({i for files in features.values() for i in files}, key=lambda i: (natural_key(i), i))
        items: list[SourceItem] = []
        for sample_id in ids:
            found = [(name, features[name].get(sample_id, [])) for name in names]
            present = [paths[0] for _, paths in found if paths]
            bad = False
            for name, paths in found:
                if len(paths) > 1:
                    bad = True
                    problems += [
                        _Problem(
                            split,
                            sample_id,
                            str(p),
                            f"files {', '.join(q.name for q in paths)} in {where[split, name]} have the same id "
                            f"{sample_id!r}; keep one file per id and feature",
                        )
                        for p in paths
                    ]
                elif not paths:
                    bad = True
                    expected = where[split, name] / f"{sample_id}{present[0].suffix}"
                    problems.append(
                        _Problem(
                            split,
                            sample_id,
                            str(present[0]),
                            f"its counterpart {expected} (feature {name!r}, any of {', '.join(AUDIO_EXTENSIONS)}) "
                            "is missing; add it or remove this file",
                        )
                    )
            if not bad:
                items.append(SourceItem(split, sample_id, tuple((name, str(paths[0])) for name, paths in found)))
        splits[split] = items
    return splits, problems


# --------------------------------------------------------------------------
# checks before decoding


def _probe_item(item: SourceItem) -> dict[str, _Info | str]:
    """``{path: info or the reason soundfile cannot open it}`` for each file of one item (runs in workers)."""
    out: dict[str, _Info | str] = {}
    for _, path in item.parts:
        try:
            info = soundfile.info(path)
        except soundfile.LibsndfileError as exc:
            out[path] = f"soundfile cannot read it: {exc.error_string.strip() or exc}"
        except (RuntimeError, OSError) as exc:
            out[path] = f"soundfile cannot read it: {exc}"
        else:
            truncated = _truncation(str(getattr(info, "extra_info", "")))
            out[path] = truncated or _Info(int(info.samplerate), int(info.channels), str(info.subtype))
    return out


#: A data chunk whose declared size libsndfile corrected: ``data : 12800 (should be 56)``.
_SHORT_CHUNK = re.compile(r"^\s*(data|SSND)\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
#: Sizes that streaming writers leave in headers they cannot rewind to fill in (not a truncation).
_UNKNOWN_SIZES = frozenset({0, 0xFFFFFFFF, 0x7FFFFFFF})


def _truncation(log: str) -> str | None:
    """The reason a file is truncated, from libsndfile's header log (``soundfile.info().extra_info``), or None.

    libsndfile reads what a cut-off WAV or AIFF still holds and says nothing;
    its log shows the data chunk's declared size and the size the file really
    has. A file whose audio data stops before its header says it does lost
    its end (an interrupted copy or download): it is refused, not stored short.
    """
    for match in _SHORT_CHUNK.finditer(log):
        declared, actual = int(match.group(2)), int(match.group(3))
        if declared > actual and declared not in _UNKNOWN_SIZES:
            return (
                f"the file is truncated: its header declares {declared} bytes of audio data but only {actual} "
                "are there (an interrupted copy or download?); restore the whole file"
            )
    return None


def _mismatches(
    infos: Mapping[str, list[tuple[SourceItem, str, _Info]]], sample_rate: float | None, mono: bool
) -> list[_Problem]:
    """Files whose rate or channel count differs from the most common of their feature (when that matters)."""
    problems: list[_Problem] = []
    checks: list[tuple[str, str, str]] = []
    if sample_rate is None:
        checks.append(("samplerate", "Hz", "resample them all with sample_rate=R (--sample-rate R)"))
    if not mono:
        checks.append(("channels", "channel(s)", "down-mix them all with mono=True (--mono)"))
    for feature, files in infos.items():
        for attr, unit, advice in checks:
            counts = Counter(getattr(info, attr) for _, _, info in files)
            if len(counts) < 2:
                continue
            usual = counts.most_common(1)[0][0]
            example = next(path for _, path, info in files if getattr(info, attr) == usual)
            for item, path, info in files:
                value = getattr(info, attr)
                if value != usual:
                    problems.append(
                        _Problem(
                            item.split,
                            item.sample_id,
                            path,
                            f"it has {value} {unit} but {example} has {usual} {unit}; the files of feature "
                            f"{feature!r} must agree: {advice}",
                        )
                    )
    return problems


def _raise_first(problems: Sequence[_Problem], output: Path) -> None:
    if not problems:
        return
    first = problems[0]
    others = [p.path for p in problems[1:]]
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    more = f" ({len(others)} other file(s) have problems of this kind: {shown})" if others else ""
    raise IngestError(
        f"{first.path}: {first.reason} (sample {first.sample_id!r} of split {first.split!r}){more}; nothing was "
        f"written to {output}. Fix the files, or leave such samples out with on_error='skip' (--on-error skip)",
        path=first.path,
    )


def _drop(
    splits: Mapping[str, list[SourceItem]], problems: Sequence[_Problem], skipped: list[Skipped]
) -> dict[str, list[SourceItem]]:
    """The items without problems; every problem is added to ``skipped``."""
    bad = {(p.split, p.sample_id) for p in problems}
    skipped += [Skipped(p.path, f"{p.reason} (sample {p.sample_id!r} of split {p.split!r} left out)") for p in problems]
    return {name: [i for i in items if (name, i.sample_id) not in bad] for name, items in splits.items()}


# --------------------------------------------------------------------------
# decoding


@dataclass(frozen=True)
class _Options:
    """What :func:`_decode_sample` needs: the dtype, rate and channel count expected of each feature."""

    dtypes: Mapping[str, str]
    rates: Mapping[str, int]
    channels: Mapping[str, int]
    sample_rate: float | None
    mono: bool


def _decode_file(path: str, feature: str, options: _Options) -> npt.NDArray[Any]:
    """One file as stored: ``(frames,)`` or ``(frames, channels)`` (module docstring, "Stored dtype")."""
    convert = options.sample_rate is not None or options.mono
    dtype = "float32" if convert else options.dtypes[feature]
    try:
        with soundfile.SoundFile(path) as handle:
            rate, channels = int(handle.samplerate), int(handle.channels)
            data = handle.read(dtype=dtype, always_2d=True)
    except soundfile.LibsndfileError as exc:
        raise DecodeError(path, f"soundfile cannot decode it: {exc.error_string.strip() or exc}") from None
    except (RuntimeError, OSError, ValueError) as exc:
        raise DecodeError(path, f"soundfile cannot decode it: {exc}") from None
    if options.sample_rate is None and rate != options.rates[feature]:
        raise DecodeError(path, f"its rate changed to {rate} Hz since it was checked ({options.rates[feature]} Hz)")
    if not options.mono and channels != options.channels[feature]:
        raise DecodeError(
            path, f"its channel count changed to {channels} since it was checked ({options.channels[feature]})"
        )
    samples: npt.NDArray[Any]
    if options.mono:
        samples = np.asarray(np.mean(data, axis=1, dtype=np.float32))
    elif channels == 1:
        samples = data.reshape(-1)
    else:
        samples = data
    if options.sample_rate is not None and rate != options.sample_rate and samples.shape[0] > 0:
        samples = np.asarray(soxr.resample(samples, rate, options.sample_rate), dtype=np.float32)
    return samples


def _decode_sample(item: SourceItem, options: _Options) -> dict[str, Any]:
    """``{feature: samples, "id": sample id}`` of one item (a module-level function: it runs in workers)."""
    out: dict[str, Any] = {ID_FEATURE: item.sample_id}
    for feature, path in item.parts:
        out[feature] = _decode_file(path, feature, options)
    return out


# --------------------------------------------------------------------------
# feature options


def pair_roles(features: Sequence[str]) -> dict[str, str]:
    """Roles of the audio features: input/target for a recognised pair, none otherwise (§6.1).

    Parameters
    ----------
    features
        The audio feature names of the whole tree (the ``id`` feature excluded).

    Returns
    -------
    dict of str to str
        ``{input_feature: "input", target_feature: "target"}`` when there are
        exactly two features and their names, compared in lower case, name
        one of :data:`INPUT_NAMES` and/or one of :data:`TARGET_NAMES` without
        naming two inputs or two targets (``["noisy", "clean"]``,
        ``["data", "speech"]``, ``["mixture", "y"]``); else ``{}``.
    """
    if len(features) != 2:
        return {}
    inputs = [f for f in features if f.lower() in INPUT_NAMES]
    targets = [f for f in features if f.lower() in TARGET_NAMES]
    if len(inputs) == 1 and len(targets) <= 1:
        other = next(f for f in features if f != inputs[0])
        if not targets or targets[0] == other:
            return {inputs[0]: "input", other: "target"}
    if len(targets) == 1 and not inputs:
        other = next(f for f in features if f != targets[0])
        return {other: "input", targets[0]: "target"}
    return {}


def _describe(feature: str, dtype: str, subtypes: Sequence[str], options: _Options) -> str:
    scale = _FULL_SCALE.get(dtype, "full scale 1.0")
    text = f"Audio of the files in the {feature!r} folders ({', '.join(sorted(set(subtypes)))}), "
    if options.sample_rate is None and not options.mono:
        return text + f"as soundfile decodes them to {dtype} ({scale})."
    steps = ["decoded by soundfile to float32"]
    if options.mono:
        steps.append("averaged over channels")
    if options.sample_rate is not None:
        steps.append(f"resampled to {options.sample_rate:g} Hz by soxr (HQ)")
    return text + ", ".join(steps) + " (full scale 1.0)."


# --------------------------------------------------------------------------
# public API


def convert_audio_folder(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    sample_rate: float | None = None,
    mono: bool = False,
    split_ratios: Mapping[str, float] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert a folder of WAV/FLAC/Ogg files into an h5ml file, one ragged feature per folder (§6.3, §6.1, §7.6).

    The folder layout, the stored dtypes, the rate and channel rules and the
    roles are described in this module's docstring. Every file is checked
    with ``soundfile.info`` before any is decoded.

    Parameters
    ----------
    root
        ``ROOT`` of ``ROOT/<split>/<feature>/<id>.<ext>`` or ``ROOT/<feature>/<id>.<ext>``.
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
    split_ratios
        ``{"train": 0.8, "test": 0.2}``: assign the samples of a folder
        without split level to splits (not stratified: audio has no label).
        ``None``: everything goes to ``train``.
    metadata
        Root metadata (§4.2) over :func:`h5ml.ingest.pipeline.conversion_metadata`'s defaults.
    compression
        ``"gzip"`` or ``None``, as :class:`h5ml.Writer`.
    shuffle, seed
        Store each split in the order ``numpy.random.default_rng(seed).permutation(n)``
        of its naturally sorted ids and record ``shuffle_seed`` (§7.6).
        ``seed`` also seeds ``split_ratios`` (0 when None).
    workers
        Threads (or processes, with ``processes``) that check and decode
        files; ``<= 1`` works in this thread. The decoders release the GIL,
        so threads use every core without pickling samples.
    processes
        Decode in a pool of worker processes (:mod:`concurrent.futures`,
        ``forkserver`` where available) instead of threads.
    on_error
        ``"stop"`` raises on the first bad sample; ``"skip"`` leaves it out
        and records its files in the output's ``h5ml-ingest:skipped``
        attribute and in the report.
    progress
        Progress bar on stderr: True, False, or None (when stderr is a terminal).
    overwrite
        Replace an existing output file.

    Returns
    -------
    IngestReport
        Samples written per split, skipped files with their reasons, time taken.

    Notes
    -----
    Each split of the output holds one ``ragged`` feature (§6.3) per feature
    folder, sample i of shape ``(frames,)`` (mono) or ``(frames, channels)``,
    dtype int16, int32, float32 or float64 (see "Stored dtype"), with the
    ``sample_rate`` attribute in Hz (§6.1), and the string feature ``id``
    ``(N,)``. Samples are in natural id order unless ``shuffle``.

    Raises
    ------
    IngestError
        With ``on_error="stop"``: a file soundfile cannot read, a missing
        counterpart, two files with one id, files of a feature with different
        rates or channel counts (naming both files). In any mode: a tree
        that fits neither layout, or a folder name that cannot name a split
        or feature. The output is left as it was.
    FileNotFoundError
        If ``root`` is not a directory, or the output's directory does not exist.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.pipeline.check_output`.
    ValueError
        If ``sample_rate`` is not a finite number > 0 or changes a file's
        rate by more than :data:`MAX_RESAMPLE_FACTOR` times, ``on_error`` is not
        ``"stop"`` or ``"skip"``, ``split_ratios`` are invalid or given for
        a folder that has splits.
    """
    source = Path(root)
    if sample_rate is not None and not (math.isfinite(sample_rate) and sample_rate > 0):
        raise ValueError(f"sample_rate must be a number of Hz > 0, got {sample_rate!r}")
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    out = check_output(output, overwrite, [source])
    tree, where = _scan(source, split_ratios, seed)
    splits, problems = _samples(tree, where)
    skipped: list[Skipped] = []
    if on_error == "stop":
        _raise_first(problems, out)
    splits = _drop(splits, problems, skipped)

    probed: list[tuple[SourceItem, Mapping[str, Any] | BaseException]] = list(
        ordered_map(_probe_item, [i for items in splits.values() for i in items], workers, processes=processes)
    )
    unreadable: list[_Problem] = []
    infos: dict[str, list[tuple[SourceItem, str, _Info]]] = {}
    for item, result in probed:
        if isinstance(result, BaseException):  # _probe_item reports file errors itself: this is a bug or a crash
            unreadable.append(
                _Problem(item.split, item.sample_id, item.first_path, f"{type(result).__name__}: {result}")
            )
            continue
        for feature, path in item.parts:
            info = result[path]
            if isinstance(info, str):
                unreadable.append(_Problem(item.split, item.sample_id, path, info))
            else:
                infos.setdefault(feature, []).append((item, path, info))
    if on_error == "stop":
        _raise_first(unreadable, out)
    bad = {(p.split, p.sample_id) for p in unreadable}
    infos = {f: [e for e in files if (e[0].split, e[0].sample_id) not in bad] for f, files in infos.items()}
    _check_resampling(infos, sample_rate)
    mismatched = _mismatches(infos, sample_rate, mono)
    if on_error == "stop":
        _raise_first(mismatched, out)
    splits = _drop(splits, [*unreadable, *mismatched], skipped)
    splits = {name: items for name, items in splits.items() if items}
    if not splits:
        raise IngestError(
            f"{source}: every sample was left out, nothing to write to {out}: "
            + "; ".join(f"{s.path}: {s.reason}" for s in skipped[:3]),
            path=str(source),
        )

    kept = {(i.split, i.sample_id) for items in splits.values() for i in items}
    files = {f: [e for e in entries if (e[0].split, e[0].sample_id) in kept] for f, entries in infos.items()}
    files = {f: entries for f, entries in files.items() if entries}
    options = _Options(
        dtypes={f: common_dtype([subtype_dtype(e[2].subtype) for e in entries]) for f, entries in files.items()},
        rates={f: entries[0][2].samplerate for f, entries in files.items()},
        channels={f: entries[0][2].channels for f, entries in files.items()},
        sample_rate=None if sample_rate is None else float(sample_rate),
        mono=mono,
    )
    convert = sample_rate is not None or mono
    roles = pair_roles(sorted(files, key=natural_key))
    features: dict[str, FeatureSpec] = {
        ID_FEATURE: FeatureSpec(
            encoding="string",
            role="metadata",
            description="Sample id: the audio file name without its extension, the same in every feature folder.",
        )
    }
    for feature, entries in files.items():
        dtype = "float32" if convert else options.dtypes[feature]
        features[feature] = FeatureSpec(
            encoding="ragged",
            dtype=dtype,
            role=roles.get(feature),
            sample_rate=float(sample_rate) if sample_rate is not None else float(options.rates[feature]),
            description=_describe(feature, dtype, [e[2].subtype for e in entries], options),
        )
    return ingest(
        out,
        splits,
        functools.partial(_decode_sample, options=options),
        metadata=conversion_metadata("audio folder", source, metadata),
        features=features,
        compression=compression,
        shuffle=shuffle,
        seed=seed,
        workers=workers,
        processes=processes,
        on_error=on_error,
        progress=progress,
        skipped=skipped,
        overwrite=overwrite,
    )
