"""Fingerprints (SPEC §8), computed independently of any implementation, and their self-test.

:func:`self_test` reproduces the worked examples of SPEC §8.2.3 and
Appendix A; ``generate.py`` runs it before building and as part of ``--check``.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "canonical_dtype",
    "feature_fingerprint",
    "file_fingerprint",
    "le_bytes",
    "self_test",
    "string_stream",
]


def canonical_dtype(dtype: np.dtype[Any], *, as_bool: bool = False) -> str:
    """The little-endian numpy dtype string a fingerprint header records ("|b1" for booleans, §8.2.1)."""
    if as_bool or dtype.kind == "b":
        return "|b1"
    return dtype.newbyteorder("<").str


def le_bytes(arr: np.ndarray, *, as_bool: bool = False) -> bytes:
    """The bytes of ``arr`` in little-endian byte order and C order (booleans as one byte 0/1, §8.2.2)."""
    arr = np.ascontiguousarray(arr)
    if as_bool or arr.dtype.kind == "b":
        return arr.astype(bool).astype(np.uint8).tobytes()
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def string_stream(items: Sequence[bytes]) -> bytes:
    """§8.2.2: each string as its UTF-8 length (uint64 little-endian), then its bytes."""
    return b"".join(struct.pack("<Q", len(item)) + item for item in items)


def feature_fingerprint(
    encoding: str, dtype: str, sample_shape: Sequence[int], num_samples: int, streams: Sequence[bytes]
) -> str:
    """§8.2: "sha256:" + hex(SHA-256(header + 0x0A + digest_1 + ... + digest_k))."""
    header = json.dumps(
        {"encoding": encoding, "dtype": dtype, "sample_shape": list(sample_shape), "num_samples": num_samples},
        sort_keys=True,
        separators=(",", ":"),
    ).encode("utf-8")
    outer = hashlib.sha256(header + b"\n")
    for stream in streams:
        outer.update(hashlib.sha256(stream).digest())
    return "sha256:" + outer.hexdigest()


def file_fingerprint(features: dict[tuple[str, str], str], *, line_order: bool = False) -> str:
    """§8.3: SHA-256 of the lines "<split>/<feature> <fingerprint>\\n", ordered by (split, feature).

    ``line_order=True`` sorts the lines as whole strings instead: a common
    mistake, used to build a fixture whose file fingerprint is wrong.
    """
    lines = [f"{split}/{feature} {fp}\n" for (split, feature), fp in sorted(features.items())]
    if line_order:
        lines.sort()
    return "sha256:" + hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def self_test() -> list[str]:
    """Check the fingerprint code against the worked examples of SPEC §8.2.3 and Appendix A."""
    problems = []
    ints = np.array([[1, 2], [3, 4]], dtype="<i4")
    got = feature_fingerprint("dense", "<i4", [2], 2, [le_bytes(ints)])
    if got != "sha256:31a0f70f8d025470037f84229d6b252588f814613cf15cdf4f08b87f6d42acc7":
        problems.append(f"§8.2.3 worked example gives {got}")
    x = np.array([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]], dtype=np.float32)
    fx = feature_fingerprint("dense", "<f4", [3], 2, [le_bytes(x)])
    if fx != "sha256:aa332b914996d80a15fbc291904b5723a08c6d5b6f804431a58e7be3effa12dc":
        problems.append(f"Appendix A feature fingerprint gives {fx}")
    ff = file_fingerprint({("train", "x"): fx})
    if ff != "sha256:c667d73fd0a655aafeaed1cf527100c08b21d283143ba33e40bf555d422e58be":
        problems.append(f"Appendix A file fingerprint gives {ff}")
    if hashlib.sha256(b"").hexdigest() != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855":
        problems.append("SHA-256 of the empty stream is wrong")
    return problems
