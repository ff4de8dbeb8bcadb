"""The in-memory :func:`write`: whole columns of every split written as one file, atomically (§4, §5, §6, §7, §8).

:func:`write` checks the whole input first (names §5.1.1, one number of
samples per split §5.3, the ``features=`` keys, the seed §5.3), then writes
it through a :class:`~h5ml.writer.streaming.Writer`: each split is added with
its number of samples (so its chunks fit it, §7.3), its features are
inferred from their whole columns
(:meth:`~h5ml.writer.streaming.Writer.infer_features`), and the columns are
appended in blocks of about :data:`~h5ml.writer.sinks.BLOCK_BYTES`, in the
seeded shuffled order when ``shuffle`` is set (§7.6).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from h5ml.errors import EncodingError, WriterError
from h5ml.model.values import FeatureSpec, SpecTable, as_categorical, column_length, column_nbytes, take
from h5ml.sampling.seeds import draw_seed, write_order
from h5ml.writer.arguments import check_lengths, check_name, check_seed
from h5ml.writer.sinks import BLOCK_BYTES
from h5ml.writer.streaming import Writer

__all__ = ["write"]


def write(
    path: str | os.PathLike[str],
    splits: Mapping[str, Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
    *,
    compression: str | None = None,
    compression_opts: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    checksums: bool = True,
    page_size: int | None = None,
) -> Path:
    """Write in-memory data as an h5ml file, atomically (§4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file (replaced on success; untouched on failure).
    splits
        ``{split: {feature: values}}``. Values: numeric array ``(N, ...)``
        (dense; bool stored as uint8 0/1, §3.3), numpy str array or list of
        ``str`` (string), :class:`~h5ml.model.values.Categorical` or a
        pandas-like categorical (categorical), list of arrays differing in
        their first axis (ragged) or in more axes (ragged with ``shapes``),
        list of ``bytes`` (bytes).
        Every feature of a split has the same number of samples N.
    metadata
        Root metadata (§4.2); see :class:`Writer`.
    compression, compression_opts
        ``"gzip"``, ``"zstd"`` (opt-in, needs ``hdf5plugin``) or ``None``, and
        its level (gzip 0-9, zstd 1-22); see :class:`Writer`.
    shuffle
        Store each split's samples in a random order (§7.6): the stored sample
        ``i`` is the source sample ``p[i]`` with
        ``p = numpy.random.default_rng(shuffle_seed).permutation(N)``, the same
        for every feature of the split; ``shuffle_seed`` is recorded on the split.
    seed
        The shuffle seed, an integer in [0, 2**63) (recorded as a signed
        64-bit ``shuffle_seed``, §5.3). With ``shuffle=True`` and no seed one
        is drawn from ``numpy.random.SeedSequence`` and recorded.
    features
        Options per feature: ``{"label": {"role": "target"}}`` applies to the
        feature of every split; ``"split/feature"`` keys apply to one split and
        override the general ones field by field. Values are
        :class:`~h5ml.model.values.FeatureSpec` or dicts of its fields.
    checksums
        Write the CRC32C of every stored chunk beside its dataset (SPEC §8.4),
        checked by ``h5ml.open(..., verify=True)``; ``False`` writes none.
        See :class:`Writer`.
    page_size
        HDF5 paged file-space aggregation with pages of this many bytes (1 << 20 for object stores), or None;
        see :class:`Writer`.

    Returns
    -------
    pathlib.Path
        The target path.

    Raises
    ------
    WriterError
        If ``splits`` is not a dict of dicts, names are invalid (§5.1.1, or
        hold a NUL character or a lone surrogate), a split's features have
        different lengths (all are listed), ``features=`` names an unknown
        feature, ``seed`` is given without ``shuffle`` or is not in
        [0, 2**63), or the target is not a regular file (see :class:`Writer`).
    EncodingError
        If a value has no encoding or breaks its encoding's rules (the message
        names the file and the HDF5 path), or does not fit its dtype (see
        :func:`h5ml.writer.batches.normalize`: a value that would overflow to
        infinity is refused; rounding into a float dtype is allowed).
    MetadataError
        If the metadata is invalid or cannot be stored (see
        :func:`h5ml.model.new_root.new_root_metadata`).

    Notes
    -----
    On any error the target is left as it was and no temporary file remains.
    """
    where = str(path)
    if seed is not None and not shuffle:
        raise WriterError(
            f"{where}: seed={seed} was given but shuffle is False; pass shuffle=True or no seed", path=where
        )
    if shuffle:
        seed = draw_seed() if seed is None else check_seed(seed, "seed", where)
    if not isinstance(splits, Mapping):
        raise WriterError(
            f"{where}: splits must be a dict {{split: {{feature: values}}}}, got a {type(splits).__name__}", path=where
        )
    for split, columns in splits.items():
        check_name(split, "split", where, "/")
        if not isinstance(columns, Mapping):
            raise WriterError(
                f"{where}: split /{split} must be given as a dict {{feature: values}}, got a "
                f"{type(columns).__name__}; e.g. {{'{split}': {{'x': array}}}}",
                path=where,
                hdf5_path=f"/{split}",
            )
        for name in columns:
            check_name(name, "feature", where, f"/{split}")
    SpecTable(features).check_used(splits)
    columns_by_split = {s: {f: as_categorical(v) for f, v in cols.items()} for s, cols in splits.items()}
    counts = {split: _num_samples(split, columns, where) for split, columns in columns_by_split.items()}
    with Writer(
        path,
        metadata,
        compression=compression,
        compression_opts=compression_opts,
        features=features,
        checksums=checksums,
        page_size=page_size,
    ) as w:
        for split, columns in columns_by_split.items():
            n = counts[split]
            w.add_split(split, shuffle_seed=seed if shuffle else None, expected_samples=n)
            w.infer_features(split, columns)
            order = write_order(n, seed) if shuffle and seed is not None else None
            sample_bytes = max(1, sum(column_nbytes(c) for c in columns.values()) // max(1, n))
            step = max(1, BLOCK_BYTES // sample_bytes)
            for start in range(0, n, step):
                index: slice | np.ndarray = slice(start, start + step) if order is None else order[start : start + step]
                w.append(split, {name: take(column, index) for name, column in columns.items()})
    return Path(path)


def _num_samples(split: str, columns: Mapping[str, Any], where: str) -> int:
    """The number of samples of a split's columns, which every one of them has (§5.3); 0 for no column."""
    lengths: dict[str, int] = {}
    for name, column in columns.items():
        length = column_length(column)
        if length is None:
            kind = type(column).__name__
            raise EncodingError(
                f"{where}:/{split}/{name}: expected an array or a list of samples, got a {kind}",
                path=where,
                hdf5_path=f"/{split}/{name}",
            )
        lengths[name] = length
    check_lengths(lengths, f"split /{split}", "every feature of a split has num_samples samples (§5.3)", where, split)
    return next(iter(lengths.values()), 0)
