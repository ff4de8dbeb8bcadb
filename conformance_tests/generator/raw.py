"""Raw and damaged files: bytes derived from a recipe rather than written by HDF5.

A ``raw`` recipe is empty, text, deterministic random bytes, or another
fixture's bytes with patches: truncated, overwritten at an offset, its local
heap signature broken, its chunks overwritten or one of their bytes flipped,
a dataset's current extent changed in its dataspace message without
touching its chunk index (so that chunks may lie outside the extent), or the
key of one chunk in a version 1 B-tree chunk index rewritten to repeat the
offset of another (so that the index lists one chunk twice and another not).
Offsets are found by reading the built file (HDF5 file format specification).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
from h5py import h5o

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.foreign import FOREIGN_MAKER
from conformance_tests.generator.values import deterministic_bytes

__all__ = ["raw_bytes"]


def _local_heap_address(f: h5py.File, group_path: str) -> int:
    """The file offset of the local heap of an old-style group, read from its symbol-table message.

    Walks the messages of the group's version-1 object header, following
    continuation messages (HDF5 file format specification, sections IV.A.1.a,
    IV.A.2.q and IV.A.2.r). Addresses are relative to the superblock, which
    follows the user block.
    """
    base = f.userblock_size
    addr = h5o.get_info(f[group_path].id).addr
    with open(f.filename, "rb") as fh:
        fh.seek(base + addr)
        head = fh.read(16)
        if head[0] != 1:
            raise RecipeError(f"{group_path}: object header version {head[0]} is not 1")
        nmesgs, _refs, size = struct.unpack("<HII", head[2:12])
        blocks = [(base + addr + 16, size)]
        seen = 0
        while blocks and seen < nmesgs:
            start, length = blocks.pop(0)
            fh.seek(start)
            body = fh.read(length)
            pos = 0
            while pos + 8 <= len(body) and seen < nmesgs:
                mtype, msize = struct.unpack("<HH", body[pos : pos + 4])
                data = body[pos + 8 : pos + 8 + msize]
                seen += 1
                if mtype == 0x0011:
                    _btree, heap = struct.unpack("<QQ", data[:16])
                    return int(base + heap)
                if mtype == 0x0010:
                    offset, block = struct.unpack("<QQ", data[:16])
                    blocks.append((base + int(offset), int(block)))
                pos += 8 + msize
    raise RecipeError(f"{group_path} has no symbol-table message (not an old-style group)")


def _chunk_spans(f: h5py.File, path: str) -> list[tuple[int, int]]:
    dset = f[path]
    if dset.chunks is None:
        return [(dset.id.get_offset() + f.userblock_size, dset.id.get_storage_size())]
    spans = []
    for i in range(dset.id.get_num_chunks()):
        info = dset.id.get_chunk_info(i)
        spans.append((info.byte_offset + f.userblock_size, info.size))
    return spans


def _extent_offset(f: h5py.File, path: str, data: bytes) -> int:
    """The file offset of the current dimensions in the dataspace message of dataset ``path``.

    A dataspace message holds the current dimensions, then the maximum ones,
    each an 8-byte little-endian length, an unlimited one all ones (HDF5 file
    format specification, section IV.A.2.b); the 16 bytes per axis are looked
    for in the whole file and must occur exactly once.
    """
    dset = f[path]
    unlimited = (1 << 64) - 1
    maxdims = [unlimited if m is None else int(m) for m in (dset.maxshape or dset.shape)]
    pattern = b"".join(int(d).to_bytes(8, "little") for d in dset.shape)
    pattern += b"".join(m.to_bytes(8, "little") for m in maxdims)
    hits = []
    at = data.find(pattern)
    while at >= 0:
        hits.append(at)
        at = data.find(pattern, at + 1)
    if len(hits) != 1:
        raise RecipeError(f"{path}: its dataspace {dset.shape}/{dset.maxshape} occurs {len(hits)} times, not once")
    return hits[0]


def _chunk_key_offset(f: h5py.File, path: str, chunk: list[int], data: bytes) -> int:
    """The file offset of the chunk offsets in the version 1 B-tree key of the chunk of ``path`` at ``chunk``.

    A key of a chunk B-tree node is the chunk's size in bytes (4), its filter mask (4), then its offset on
    each axis and a last 0 for the datatype (8 bytes each; HDF5 file format specification, section III.A.1);
    the 8 + 8 * (rank + 1) bytes are looked for in the whole file and must occur exactly once.
    """
    dset = f[path]
    if dset.chunks is None or len(chunk) != dset.ndim:
        raise RecipeError(f"{path}: repeat_chunk_offset needs a chunked dataset and an offset of its rank")
    info = dset.id.get_chunk_info_by_coord(tuple(int(c) for c in chunk))
    key = struct.pack("<II", info.size, info.filter_mask) + b"".join(int(c).to_bytes(8, "little") for c in [*chunk, 0])
    if data.count(key) != 1:
        raise RecipeError(f"{path}: the B-tree key of chunk {chunk} occurs {data.count(key)} times, not once")
    return data.index(key) + 8


def raw_bytes(recipe: dict[str, Any], source: Callable[[str], Path]) -> bytes:
    """The bytes of a ``raw`` recipe; ``source(id)`` gives the built fixture of another recipe."""
    raw = recipe["raw"]
    if "empty" in raw:
        return b""
    if "text" in raw:
        return str(raw["text"]).encode("utf-8")
    if "random" in raw:
        return deterministic_bytes(int(raw["random"]["seed"]), int(raw["random"]["size"]))
    if "foreign" in raw:
        raise RecipeError(
            f"{recipe['id']}: a foreign file is made by {FOREIGN_MAKER} with its own library; generate.py only checks it"
        )
    if "from" not in raw:
        raise RecipeError(f"{recipe['id']}: unknown raw recipe {raw}")
    base_path = source(raw["from"])
    data = bytearray(base_path.read_bytes())
    for patch in raw.get("patches", []):
        op = patch["op"]
        if op == "truncate":
            size = patch["size"]
            data = data[: len(data) // 2 if size == "half" else int(size) if int(size) >= 0 else len(data) + int(size)]
        elif op == "set_bytes":
            offset = int(patch["offset"])
            new = bytes.fromhex(patch["hex"])
            data[offset : offset + len(new)] = new
        elif op == "break_group_heap":
            with h5py.File(base_path, "r") as f:
                offset = _local_heap_address(f, patch["group"])
            if data[offset : offset + 4] != b"HEAP":
                raise RecipeError(f"{recipe['id']}: no local heap signature at {offset}")
            data[offset : offset + 4] = b"XXXX"
        elif op == "overwrite_chunks":
            with h5py.File(base_path, "r") as f:
                spans = _chunk_spans(f, patch["path"])
            fill = bytes.fromhex(patch["hex"])
            for offset, size in spans[: patch.get("count", len(spans))]:
                data[offset : offset + size] = (fill * (size // len(fill) + 1))[:size]
        elif op == "flip_chunk_byte":
            with h5py.File(base_path, "r") as f:
                offset, _size = _chunk_spans(f, patch["path"])[int(patch.get("chunk", 0))]
            data[offset + int(patch.get("byte", 0))] ^= 0xFF
        elif op == "set_extent":
            with h5py.File(base_path, "r") as f:
                offset = _extent_offset(f, patch["path"], bytes(data))
                if len(patch["dims"]) != f[patch["path"]].ndim:
                    raise RecipeError(f"{recipe['id']}: set_extent gives {patch['dims']} for a dataset of another rank")
            new = b"".join(int(d).to_bytes(8, "little") for d in patch["dims"])
            data[offset : offset + len(new)] = new
        elif op == "repeat_chunk_offset":
            with h5py.File(base_path, "r") as f:
                offset = _chunk_key_offset(f, patch["path"], patch["chunk"], bytes(data))
            new = b"".join(int(c).to_bytes(8, "little") for c in patch["as"])
            data[offset : offset + len(new)] = new
        else:
            raise RecipeError(f"{recipe['id']}: unknown patch {op!r}")
    return bytes(data)
