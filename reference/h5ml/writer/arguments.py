"""Checks of what a caller hands the writer: names, descriptions, seeds, sizes, compression (§3.4, §3.5, §5).

Each check raises a :class:`~h5ml.errors.WriterError` that names the file and
the HDF5 path the argument was meant for, and says what to give instead:

- :func:`check_name`: a split or feature name (§5.1.1);
- :func:`check_text`: a description stored as an attribute (§3.4);
- :func:`check_seed`: a shuffle seed (§5.3, §7.6);
- :func:`check_expected_samples`: a split's expected number of samples (§7.3);
- :func:`check_compression`: the writer's or a feature's compression,
  ``"gzip"`` or the opt-in ``"zstd"`` (§3.5); :func:`is_level`: a level of
  either; :func:`check_options`: the writer's mode, compression and level;
- :func:`check_lengths`: the features of a split (or of a batch) have one
  number of samples (§5.3);
- :func:`located`: attaches the file and HDF5 path to an h5ml error raised
  inside a block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

import numpy as np

from h5ml import spec
from h5ml.errors import H5MLError, WriterError
from h5ml.model.filters import ZSTD_FILTER, ZSTD_INSTALL, filter_available
from h5ml.model.values import text_problem

__all__ = [
    "COMPRESSIONS",
    "ZSTD_DEFAULT_LEVEL",
    "ZSTD_LEVELS",
    "check_compression",
    "check_expected_samples",
    "check_lengths",
    "check_name",
    "check_options",
    "check_page_size",
    "check_seed",
    "check_text",
    "is_level",
    "located",
]

#: The compressions the writer stores (§3.5): deflate (core) and, opt-in, the HDF5 zstd filter (32015).
COMPRESSIONS: Final = (None, "gzip", "zstd")
#: The zstd levels the writer accepts, lowest and highest (zstd's own range; HDF5 stores the level unsigned,
#: so zstd's negative "fast" levels are left out).
ZSTD_LEVELS: Final = (1, 22)
#: The zstd level when ``compression_opts`` is not given: zstd's own default.
ZSTD_DEFAULT_LEVEL: Final = 3


@contextlib.contextmanager
def located(path: str, hdf5_path: str) -> Iterator[None]:
    """Attach the file and HDF5 path to an h5ml error raised inside (the message already names them).

    Parameters
    ----------
    path
        The file, set as the error's ``path`` unless it has one.
    hdf5_path
        The object, set as the error's ``hdf5_path`` unless it has one.
    """
    try:
        yield
    except H5MLError as exc:
        exc.path = exc.path or path
        exc.hdf5_path = exc.hdf5_path or hdf5_path
        raise


def check_name(name: Any, kind: str, path: str, parent: str) -> None:
    """Refuse a split or feature name that breaks §5.1.1 or that HDF5 cannot store (NUL, lone surrogates).

    Parameters
    ----------
    name
        The name as given.
    kind
        ``"split"`` or ``"feature"``, for the message.
    path
        The file, for the message.
    parent
        The HDF5 path of the group the name goes in (``/`` or ``/split``):
        the name itself appears in the message only as its ``repr``, which
        stays printable whatever it holds.

    Raises
    ------
    WriterError
        If ``name`` is not a ``str``, holds a NUL or a lone surrogate, or is
        not a valid name (§5.1, §5.2).
    """
    where = f"{parent.rstrip('/')}/{name}" if isinstance(name, str) else parent
    if not isinstance(name, str):
        raise WriterError(
            f"{path}: {kind} name {name!r} in {parent} is a {type(name).__name__}; names are str (§5.1.1)",
            path=path,
            hdf5_path=parent,
        )
    problem = text_problem(name)
    if problem:
        raise WriterError(
            f"{path}: {kind} name {name!r} in {parent} {problem}; rename it (§5.1.1)", path=path, hdf5_path=parent
        )
    # SPEC §5.4-R1: the naming rule refuses a leading "_", so no split or feature gets a reserved name
    if not spec.is_valid_name(name):
        raise WriterError(
            f"{path}: {kind} name {name!r} at {where} is invalid (§5.1, §5.2): a name is non-empty, has no "
            "'/', does not start with '.', '_' or whitespace nor end with whitespace, and is at most 255 UTF-8 bytes",
            path=path,
            hdf5_path=where,
        )


def check_text(value: Any, what: str, path: str, hdf5_path: str) -> str:
    """Return a description given to the writer: a ``str`` that HDF5 can store (§3.4).

    Raises
    ------
    WriterError
        If ``value`` is not a ``str`` or holds a NUL or a lone surrogate;
        ``what`` names it in the message.
    """
    if not isinstance(value, str):
        raise WriterError(f"{path}: {what} must be a str, got a {type(value).__name__}", path=path, hdf5_path=hdf5_path)
    problem = text_problem(value)
    if problem:
        raise WriterError(f"{path}: {what} {value!r} {problem} (§3.4)", path=path, hdf5_path=hdf5_path)
    return value


def check_seed(seed: Any, what: str, path: str, hdf5_path: str | None = None) -> int:
    """Return a shuffle seed as an ``int`` in [0, 2**63) (§5.3, §7.6; stored as a signed 64-bit integer, §4.3).

    Raises
    ------
    WriterError
        If ``seed`` is a bool, not an integer, or out of range; ``what`` names
        it in the message.
    """
    if not spec.is_shuffle_seed(seed):
        raise WriterError(
            f"{path}: {what} must be an integer in [0, 2**63) (a non-negative int64, §5.3), got {seed!r}",
            path=path,
            hdf5_path=hdf5_path,
        )
    return int(seed)


def check_expected_samples(expected: Any, path: str, hdf5_path: str) -> int | None:
    """Return a split's expected number of samples as an ``int`` >= 0, or ``None`` when not given (§7.3).

    Raises
    ------
    WriterError
        If ``expected`` is a bool, not an integer, or negative.
    """
    if expected is None:
        return None
    if isinstance(expected, (bool, np.bool_)) or not isinstance(expected, (int, np.integer)) or expected < 0:
        raise WriterError(
            f"{path}: expected_samples of {hdf5_path} must be an integer >= 0 (or None), got {expected!r}",
            path=path,
            hdf5_path=hdf5_path,
        )
    return int(expected)


def check_compression(compression: Any, path: str) -> str | None:
    """Return ``"gzip"``, ``"zstd"`` or ``None``, the compressions the writer stores (§3.5).

    ``"gzip"`` is deflate, a core filter every HDF5 decodes. ``"zstd"`` is
    the HDF5 zstd filter (id 32015, through the ``hdf5plugin`` package): 2-4
    times faster to decode, but only readers with the plugin can read the
    data (h5dump and h5wasm cannot), so it is opt-in and the finished file
    declares it in ``required_filters`` (§3.5-R1).

    Raises
    ------
    WriterError
        For any other value, or for ``"zstd"`` when ``hdf5plugin`` is not
        installed (the message says ``pip install "h5ml[zstd]"``).
    """
    if compression not in COMPRESSIONS:
        raise WriterError(
            f"{path}: compression must be 'gzip', 'zstd' or None, got {compression!r}; other filters make files "
            "that HDF5 builds without plugins cannot read (§3.5)",
            path=path,
        )
    if compression == "zstd" and not filter_available(ZSTD_FILTER):
        raise WriterError(
            f"{path}: compression='zstd' needs the HDF5 zstd filter (32015), which this Python cannot load: "
            f"the hdf5plugin package is not installed; {ZSTD_INSTALL}, or use compression='gzip'",
            path=path,
        )
    return compression  # type: ignore[no-any-return]


def is_level(compression: str | None, level: object) -> bool:
    """Whether ``level`` is a level of ``compression``: gzip 0-9, zstd 1-22 (a bool is not one; §3.5)."""
    if compression == "zstd":
        return _is_int(level) and ZSTD_LEVELS[0] <= level <= ZSTD_LEVELS[1]  # type: ignore[operator]
    return spec.is_gzip_level(level)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_options(mode: Any, compression: Any, compression_opts: Any, path: str, page_size: Any = None) -> str | None:
    """Check a writer's ``mode``, ``compression``, ``compression_opts`` and ``page_size``; return the compression (§3.5).

    ``compression_opts`` is the level of the writer's compression: 0-9 for
    gzip (default 4), 1-22 for zstd (default :data:`ZSTD_DEFAULT_LEVEL`, 3).

    Raises
    ------
    WriterError
        If ``mode`` is not ``"w"`` or ``"a"``, the compression is not one the
        writer stores (:func:`check_compression`), or ``compression_opts`` is
        not a level of that compression, or ``page_size`` is refused by :func:`check_page_size`.
    """
    check_page_size(page_size, path)
    if mode not in ("w", "a"):
        raise WriterError(f"{path}: mode must be 'w' or 'a', got {mode!r}", path=path)
    checked = check_compression(compression, path)
    if compression_opts is not None and not is_level(checked, compression_opts):
        what = "the zstd level 1-22" if checked == "zstd" else "the gzip level 0-9"
        raise WriterError(
            f"{path}: compression_opts is {what} with compression={checked!r}, got {compression_opts!r}", path=path
        )
    return checked


def check_page_size(page_size: Any, path: str) -> None:
    """Refuse a ``page_size`` (paged file-space aggregation, :class:`h5ml.Writer`) that HDF5 or object stores cannot use.

    ``page_size=N`` writes the file with ``fs_strategy="page"`` and pages of N bytes: its metadata then sits
    in a few pages, so a reader at a URL opens it in a few range requests (:mod:`h5ml.model.remote`; measured
    on 4500 gzip photo tiles with 4 MiB pages: 2 requests instead of 3). Read by HDF5 1.10.1 and later
    (h5dump 1.10.8 checked, §3.1). It costs space: raw data is aggregated by page, so a 40.5 MB gzip file
    took 46.1 MB with 4 MiB pages and 73.4 MB with 1 MiB pages (chunks of ~570 KB leave pages part empty),
    and any file takes at least two pages. Mode ``"a"`` keeps the existing file's strategy.

    Raises
    ------
    WriterError
        Unless ``page_size`` is None or an int, a power of two from 4096 (4 KiB) to 1 << 30 (1 GiB).
    """
    if page_size is None:
        return
    ok = isinstance(page_size, int) and not isinstance(page_size, bool) and 4096 <= page_size <= 1 << 30
    if not ok or page_size & (page_size - 1):
        raise WriterError(
            f"{path}: page_size must be None or a power of two from 4096 to {1 << 30} bytes (1 << 20 = 1 MiB suits "
            f"object stores), got {page_size!r}",
            path=path,
        )


def check_lengths(lengths: Mapping[str, int], what: str, rule: str, path: str, split: str) -> None:
    """Refuse features of one split (or of one batch) that have different numbers of samples (§5.3).

    Parameters
    ----------
    lengths
        ``{feature: number of samples}``.
    what
        What holds the features, for the message (``"split /train"``, ``"a
        batch of /train"``).
    rule
        The end of the message: the rule that was broken, with its clause.
    path, split
        The file and the split, for the message and the error's location.

    Raises
    ------
    WriterError
        If the numbers differ; the message lists every feature and its number.
    """
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{f}: {n}" for f, n in lengths.items())
        raise WriterError(
            f"{path}: the features of {what} have different numbers of samples ({listed}); {rule}",
            path=path,
            hdf5_path=f"/{split}",
        )
