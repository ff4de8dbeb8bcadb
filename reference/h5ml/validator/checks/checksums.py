"""Per-chunk checksums: E163 for a malformed checksum dataset (shallow), E162 for a damaged chunk (deep) (§8.4).

A member ``_crc32c.<name>`` of a split or of a feature group is the checksum
dataset of the feature dataset ``<name>`` beside it (SPEC §8.4): it is
defined by 1.1, so it is checked here instead of being reported as a
reserved name (I301). :func:`check_checksum_member` checks its form from its
metadata and the protected dataset's chunk index (no data is read);
:func:`check_feature_checksums` compares every entry with the CRC32C of the
chunk's stored bytes, in deep validation only.
"""

from __future__ import annotations

from collections.abc import Iterator

import h5py

from h5ml.model.checksums import checksum_problem, protected_name, stored_layout, verify_checksums
from h5ml.validator.checks.issue import Issue
from h5ml.validator.checks.state import CheckedFeature

__all__ = ["check_checksum_member", "check_feature_checksums", "is_checksum_member"]

#: Mismatching chunks named in one E162 message (the others are counted).
_NAMED: int = 4


def is_checksum_member(name: str | bytes) -> bool:
    """Whether the member ``name`` of a split or feature group is a checksum dataset's name (§8.4).

    A name that is not UTF-8 (h5py gives it as bytes) is none: it is checked as any other name (E120).
    """
    return isinstance(name, str) and protected_name(name) is not None


def check_checksum_member(group: h5py.Group, path: str, name: str, in_feature: bool) -> Iterator[Issue]:
    """E163 for the checksum dataset ``name`` of ``group`` when it is malformed or protects nothing (§8.4-R1).

    Parameters
    ----------
    group
        The split (``in_feature=False``) or the feature group holding it.
    path
        The checksum dataset's HDF5 path.
    name
        Its name, ``_crc32c.<protected>``.
    in_feature
        Whether ``group`` is a feature group (the protected dataset is a
        component) rather than a split (a dense or string feature).
    """
    target = protected_name(name)
    assert target is not None
    where = "feature group" if in_feature else "split"
    link = group.get(target, getlink=True)
    node = group.get(target) if isinstance(link, h5py.HardLink) else None
    if not isinstance(node, h5py.Dataset):
        # SPEC §8.4-R1: a checksum dataset protects a feature dataset beside it
        yield Issue.of(
            "E163",
            path,
            f"{path} is named as a checksum dataset, but its {where} has no dataset {target!r} for it to protect; "
            "delete it, or rewrite the file with h5ml.write / h5ml convert",
        )
        return
    problem = checksum_problem(group[name], stored_layout(node))
    if problem is not None:
        # SPEC §8.4-R1: one-dimensional uint32, one entry per chunk of the grid or block of contiguous storage
        yield Issue.of(
            "E163",
            path,
            f"the checksum dataset {path} of {node.name} {problem}; it cannot be checked: rewrite the file "
            "(h5ml.Writer writes checksums on close) or delete it",
        )


def check_feature_checksums(feature: CheckedFeature) -> Iterator[Issue]:
    """E162 for each dataset of ``feature`` with a chunk whose stored bytes differ from its checksum (§8.4-R5).

    Only well-formed checksum datasets are compared (a malformed one is
    E163, from the shallow checks). A chunk that also fails to decode gets
    E145 too, from the data checks: each code names its own finding.
    """
    datasets = [d for d in feature.members.values() if isinstance(d, h5py.Dataset)]
    mismatches, _unprotected, _malformed = verify_checksums(feature.obj.file, datasets=datasets)
    by_path: dict[str, list[tuple[int, int, int, tuple[int, int]]]] = {}
    for m in mismatches:
        by_path.setdefault(m.path, []).append((m.entry, m.expected, m.actual, m.rows))
    for path, found in by_path.items():
        named = "; ".join(
            f"chunk {entry} (rows [{rows[0]}, {rows[1]})): recorded 0x{expected:08x}, stored bytes 0x{actual:08x}"
            for entry, expected, actual, rows in found[:_NAMED]
        )
        more = f"; and {len(found) - _NAMED} more" if len(found) > _NAMED else ""
        # SPEC §8.4-R5: deep validation compares every chunk's stored bytes with its checksum
        yield Issue.of(
            "E162",
            path,
            f"{path}: {len(found)} chunk(s) do not match their CRC32C checksum: {named}{more}; the file was damaged "
            "after it was written (the chunk, or its entry in the checksum dataset): restore it from a good copy",
        )
