"""Finishing a file: sample counts, fingerprints, statistics, then ``complete`` (§4.4, §5.3, §6.7, §8).

:func:`finish_file` writes what only a whole file knows, in this order:

1. every split's last buffered samples, then its ``num_samples`` (§5.3);
2. every chunk still compressing is stored and the writer's threads stop;
3. the root attribute ``required_filters`` gains every non-core filter
   (zstd) a dataset uses (§3.5-R1, :func:`h5ml.writer.compress.declare_filters`);
   then the per-chunk checksums of every feature dataset (§8.4,
   :func:`h5ml.writer.checksums.write_checksums`), or none with ``checksums=False``;
4. the fingerprint (§8.2) and statistics (§6.7) of every feature this writer
   created or extended, and the fingerprint of every feature of the file that
   has none yet (:func:`write_fingerprints`);
5. the file fingerprint (§8.3), then ``complete = 1`` last (§4.4); the file
   is flushed and closed.

Moving it over the target is :meth:`h5ml.writer.atomic.AtomicFile.close`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import h5py

from h5ml import spec
from h5ml.model.fingerprint import FINGERPRINT_PATTERN, file_fingerprint
from h5ml.spec.attrs import read_attr, write_attr
from h5ml.writer.checksums import write_checksums
from h5ml.writer.compress import declare_filters
from h5ml.writer.feeder import Feeder
from h5ml.writer.sinks import FeatureSink, SplitSink

__all__ = ["finish_file", "write_fingerprints"]

_STATS_ATTRS: Final = spec.STATS_ATTRS


def write_fingerprints(splits: Sequence[SplitSink], path: str) -> dict[tuple[str, str], str]:
    """Write the fingerprints and statistics of new and extended features (and fingerprints that are missing).

    Parameters
    ----------
    splits
        Every split of the file, their samples all written.
    path
        The target, for error messages.

    Returns
    -------
    dict
        ``{(split, feature): fingerprint}`` for every feature of the file.

    Notes
    -----
    A feature this writer created or extended gets the fingerprint it fed
    and its statistics (old statistics are removed: they described fewer
    samples). An untouched feature of an existing file keeps a valid
    fingerprint; one without it is read back once to compute it (§8.2).
    """
    out: dict[tuple[str, str], str] = {}
    for split in splits:
        for feature in split.features.values():
            obj, hasher = feature.obj, feature.hasher
            assert obj is not None and hasher is not None
            out[(split.name, feature.name)] = fp = hasher.fingerprint()
            write_attr(obj, "fingerprint", fp)
            for key in _STATS_ATTRS:
                if key in obj.attrs:
                    del obj.attrs[key]
            if feature.stats is not None:  # SPEC §6.7-R3: floats, written as float64 by write_attr
                for key, value in feature.stats.attrs().items():
                    write_attr(obj, key, value)
        for name, obj in split.stored.items():  # untouched features of the existing file
            fp = read_attr(obj, "fingerprint", None)
            if not isinstance(fp, str) or not FINGERPRINT_PATTERN.match(fp):
                stored = FeatureSink.from_stored(split.name, name, obj, split.num_samples, path)
                stored.rehash()
                assert stored.hasher is not None
                fp = stored.hasher.fingerprint()
                write_attr(obj, "fingerprint", fp)
            out[(split.name, name)] = fp
    return out


def finish_file(
    h5file: h5py.File, splits: Sequence[SplitSink], feeder: Feeder, path: str, checksums: bool = True
) -> None:
    """Write the last samples and what only a whole file knows, mark it complete and close it (§4.4, §5.3, §8.3).

    Parameters
    ----------
    h5file
        The temporary file being written.
    splits
        Every split of the file.
    feeder
        The writer's feeder: its buffers are flushed and its threads stopped.
    path
        The target, for error messages.
    checksums
        Write the per-chunk checksums (SPEC §8.4); False removes every one.

    Raises
    ------
    OSError, WriterError
        If storing the last samples or the attributes fails; the file is then
        not complete and the caller discards it.
    """
    for split in splits:
        feeder.flush_final(split)
        if not split.stored:  # new, or loaded to be extended
            write_attr(split.group, "num_samples", split.num_samples)
    feeder.close()
    declare_filters(h5file)  # SPEC §3.5-R1: zstd datasets are declared in required_filters
    write_checksums(h5file, splits, checksums)  # SPEC §8.4-S1: written by default, after the last chunk
    write_attr(h5file, "fingerprint", file_fingerprint(write_fingerprints(splits, path)))
    write_attr(h5file, "complete", 1)  # last (SPEC §4.4-R2): after every other object and attribute
    h5file.flush()
    h5file.close()
