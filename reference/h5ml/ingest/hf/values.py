"""Converting a batch of a Hugging Face dataset's rows, column by column, in the workers (§6).

:func:`convert_task` runs the converter of each column's kind (:data:`CONVERTERS`)
on one batch of Arrow arrays and leaves out the rows that do not convert, each
with its reason (:class:`Converted`).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.ingest.hf.columns import NULL_REASON, Column, Problems, RowProblem, numpy_dtype
from h5ml.ingest.hf.media import media_blobs, media_data, natural_mode, pyarrow_module
from h5ml.ingest.hf.nested import nested
from h5ml.ingest.report import Skipped
from h5ml.model.values import text_problem

__all__ = ["CONVERTERS", "Converted", "convert_task"]


@dataclass
class Converted:
    """One converted batch: the values of its good rows, and the rows left out."""

    values: dict[str, Any]
    count: int
    problems: list[tuple[int, Skipped]] = field(default_factory=list)


def convert_task(
    columns: tuple[Column, ...], label: str, split: str | None, task: tuple[npt.NDArray[np.int64], Any]
) -> Converted:
    """Convert one batch (module level: it runs in the workers).

    Parameters
    ----------
    columns
        How each column is read.
    label
        The source, for the skipped rows' paths.
    split
        The source split, or None.
    task
        ``(row numbers, column name -> pyarrow array)``.

    Returns
    -------
    Converted
        The good rows' values, their count, and the bad rows with their reasons.
    """
    rows, payload = task
    arrays = payload
    n = int(rows.shape[0])
    values: dict[str, Any] = {}
    bad: dict[int, tuple[str, RowProblem]] = {}
    for column in columns:
        converted, problems = CONVERTERS[column.kind](column, arrays[column.name])
        values[column.name] = converted
        for pos, problem in problems.items():
            bad.setdefault(pos, (column.name, problem))
    where = label if split is None else f"{label}:{split}"
    result = Converted(values, n - len(bad))
    for pos in sorted(bad):
        name, problem = bad[pos]
        media = f" (file {problem.media_path})" if problem.media_path else ""
        result.problems.append(
            (int(rows[pos]), Skipped(f"{where}[{int(rows[pos])}]", f"column {name!r}{media} {problem.reason}"))
        )
    if bad:
        keep = np.ones(n, dtype=bool)
        keep[list(bad)] = False
        result.values = {
            name: v[keep] if isinstance(v, np.ndarray) else [x for x, k in zip(v, keep.tolist(), strict=True) if k]
            for name, v in values.items()
        }
    return result


def null_rows(array: Any) -> list[int]:
    if not array.null_count:
        return []
    return np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)).tolist()


def _categorical(column: Column, array: Any) -> tuple[Any, Problems]:
    codes = np.array(array.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    count = len(column.class_names or ())
    problems = {
        int(i): RowProblem(f"holds the code {int(codes[i])}, outside [-1, {count}) of its {count} class names")
        for i in np.flatnonzero((codes < -1) | (codes >= count))
    }
    codes[list(problems)] = -1
    return codes, problems


def _numeric(column: Column, array: Any) -> tuple[Any, Problems]:
    problems = {i: RowProblem(NULL_REASON) for i in null_rows(array)}
    if problems:
        array = array.fill_null(False if pyarrow_module().types.is_boolean(array.type) else 0)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=numpy_dtype(column.dtype or "float64")), problems


def _string(column: Column, array: Any) -> tuple[Any, Problems]:
    items = array.to_pylist()
    problems: Problems = {}
    for i, item in enumerate(items):
        problem = NULL_REASON if item is None else text_problem(item)
        if problem:
            problems[i] = RowProblem(problem)
            items[i] = ""
    return items, problems


def _binary(column: Column, array: Any) -> tuple[Any, Problems]:
    items = array.to_pylist()
    problems = {i: RowProblem(NULL_REASON) for i, item in enumerate(items) if item is None}
    return [b"" if item is None else item for item in items], problems


def _media_bytes(column: Column, array: Any) -> tuple[Any, Problems]:
    blobs, paths = media_blobs(array)
    out: list[bytes] = []
    problems: Problems = {}
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        try:
            out.append(media_data(blob, path))
        except RowProblem as exc:
            problems[i] = exc
            out.append(b"")
    return out, problems


def _pixels(column: Column, array: Any) -> tuple[Any, Problems]:
    from PIL import Image

    blobs, paths = media_blobs(array)
    out: list[npt.NDArray[Any]] = []
    problems: Problems = {}
    channels = () if column.channels is None else (column.channels,)
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        pixels: npt.NDArray[Any] | None = None
        try:
            data = media_data(blob, path)
            try:
                with Image.open(io.BytesIO(data)) as image:
                    mode = column.image_mode or natural_mode(image)
                    pixels = np.asarray(image if image.mode == mode else image.convert(mode))
            except Exception as exc:
                raise RowProblem(f"cannot be decoded by Pillow ({type(exc).__name__}: {exc})", path) from None
            if pixels.dtype.newbyteorder("=").name != column.dtype or pixels.shape[2:] != channels:
                raise RowProblem(
                    f"decodes to {pixels.dtype} pixels of shape {pixels.shape}, but the column's first image gave "
                    f"{column.dtype} (H, W{', ' + str(column.channels) if channels else ''}); give every image one "
                    "mode with cast_column(name, Image(mode='RGB')) or keep the files with images='bytes'",
                    path,
                )
            if column.pixel_shape is not None and pixels.shape != column.pixel_shape:
                raise RowProblem(f"has shape {pixels.shape}, not {column.pixel_shape}", path)
        except RowProblem as exc:
            problems[i] = exc
            pixels = None
        out.append(pixels if pixels is not None else np.zeros(column.pixel_shape or (0, 0, *channels), column.dtype))
    if column.pixel_shape is not None:
        return (np.stack(out) if out else np.empty((0, *column.pixel_shape), column.dtype)), problems
    return out, problems


def _audio(column: Column, array: Any) -> tuple[Any, Problems]:
    import soundfile

    blobs, paths = media_blobs(array)
    out: list[npt.NDArray[np.float32]] = []
    problems: Problems = {}
    channels = column.channels or 1
    empty = np.zeros((0,) if channels == 1 else (0, channels), dtype=np.float32)
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        try:
            data = media_data(blob, path)
            try:
                samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=False)
            except Exception as exc:
                raise RowProblem(f"cannot be decoded by soundfile ({type(exc).__name__}: {exc})", path) from None
            found = 1 if samples.ndim == 1 else int(samples.shape[1])
            if column.sample_rate is not None and float(rate) != column.sample_rate:
                raise RowProblem(
                    f"is recorded at {rate} Hz but the column's sample rate is {column.sample_rate:g} Hz (from the "
                    "Audio feature or its first file); h5ml does not resample: resample the files first",
                    path,
                )
            if found != channels:
                raise RowProblem(f"has {found} channel(s) but the column's first file has {channels}", path)
            out.append(np.ascontiguousarray(samples))
        except RowProblem as exc:
            problems[i] = exc
            out.append(empty)
    return out, problems


CONVERTERS: Final[dict[str, Callable[[Column, Any], tuple[Any, Problems]]]] = {
    "categorical": _categorical,
    "numeric": _numeric,
    "string": _string,
    "binary": _binary,
    "nested": nested,
    "media_bytes": _media_bytes,
    "pixels": _pixels,
    "audio": _audio,
}
