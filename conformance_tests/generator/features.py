"""One feature of a recipe expanded: its HDF5 objects, its fingerprint and its Appendix B entry (SPEC §6-§8).

:class:`FeatureExpander` turns the spec of one feature (dense, string,
categorical, ragged or bytes, SPEC §6) into the datasets and groups of the
file plan, with the default chunking of §7 unless the recipe gives its own
storage, computes its §8.2 fingerprint (or a wrong one made the way a faulty
implementation would make it) and the entry a reader must decode (Appendix B).
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from conformance_tests.generator.datatypes import HType, parse_type
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.fingerprints import canonical_dtype, feature_fingerprint, le_bytes, string_stream
from conformance_tests.generator.json_mapping import Unmappable, numbers_json, stored_text
from conformance_tests.generator.plans import AttrPlan, NodePlan, attrs_of
from conformance_tests.generator.values import shape_of

__all__ = ["TARGET_CHUNK_BYTES", "VLEN_BYTES", "FeatureExpander"]

#: Bytes a variable-length string takes in a chunk (SPEC §7.3).
VLEN_BYTES = 16
#: Bytes per chunk the default chunking aims at (SPEC §7.3).
TARGET_CHUNK_BYTES = 1 << 20


def _default_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
    """Chunks of whole rows, a power of two of them, about TARGET_CHUNK_BYTES at most (SPEC §7.1-§7.3)."""
    row = itemsize * math.prod(max(1, s) for s in shape[1:])
    rows = 1
    while rows < max(1, shape[0]) and rows * 2 * row <= TARGET_CHUNK_BYTES:
        rows *= 2
    chunks = (rows, *(max(1, s) for s in shape[1:]))
    maxshape = (None, *(s if s > 0 else None for s in shape[1:]))
    return chunks, maxshape


class FeatureExpander:
    """Expands the features of one recipe into the nodes of its file plan, with their fingerprints.

    ``nodes`` is the file plan's list of objects: each feature appends its
    group and datasets to it, in creation order. ``fingerprints`` collects
    the §8.2 fingerprint of every feature (and alias) by (split, name), for
    the file fingerprint; ``decodable`` turns false when a feature has no
    Appendix B form (bytes that are not UTF-8, raw components, no values).
    """

    def __init__(self, rid: str, nodes: list[NodePlan]) -> None:
        self.rid = rid
        self.nodes = nodes
        self.fingerprints: dict[tuple[str, str], str] = {}
        self.decodable = True
        self._raw_streams: tuple[str, list[bytes]] | None = None

    def dataset(
        self,
        path: str,
        htype: HType,
        data: Any,
        shape: tuple[int, ...],
        storage: dict[str, Any],
        attrs: list[AttrPlan] | None = None,
    ) -> NodePlan:
        """A feature dataset (or component) with the default chunking unless ``storage`` says otherwise."""
        storage = dict(storage)
        layout = storage.get("layout", "chunked")
        maxshape: tuple[int | None, ...] | None = None
        if layout == "chunked" and "chunks" not in storage:
            itemsize = VLEN_BYTES if htype.kind == "vlen-str" else htype.np_dtype.itemsize
            chunks, maxshape = _default_chunks(shape, itemsize) if shape else ((), ())
            storage["chunks"] = list(chunks)
        if "maxshape" in storage:
            maxshape = tuple(storage["maxshape"])
        elif layout == "chunked" and maxshape is None:
            maxshape = (None, *shape[1:]) if shape else ()
        node = NodePlan(path, "dataset", attrs or [], htype, shape, maxshape, data, storage=storage)
        if "written" in storage:
            node.written = (int(storage["written"][0]), int(storage["written"][1]))
        self.nodes.append(node)
        return node

    def feature(self, split: str, name: str, spec: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        """Expand one feature; returns its number of samples and its Appendix B entry (None: not decodable)."""
        encoding = spec["encoding"]
        path = f"/{split}/{name}"
        storage = spec.get("storage", {})
        member_storage = spec.get("member_storage", {})
        attrs = {"encoding": encoding, "encoding_version": "1.0", **spec.get("attrs", {})}
        as_bool = spec.get("bool", False)
        if as_bool:
            attrs.setdefault("logical_dtype", "bool")
        self._raw_streams = None
        expand = {
            "dense": self._dense,
            "string": self._string,
            "categorical": self._categorical,
            "ragged": self._ragged,
            "bytes": self._bytes,
        }
        if encoding not in expand:
            raise RecipeError(f"{self.rid}: feature {path}: unknown encoding {encoding!r} (use 'objects')")
        n, fp_args, entry, holder = expand[encoding](path, spec, storage, member_storage, as_bool)
        computed = feature_fingerprint(encoding, *fp_args)
        self.fingerprints[(split, name)] = computed
        fingerprint = spec.get("fingerprint", "auto")
        if isinstance(fingerprint, dict):
            fingerprint = self._fingerprint_variant(path, encoding, fingerprint, fp_args, computed)
        if fingerprint == "auto":
            attrs = {**attrs, "fingerprint": computed} if "fingerprint" not in attrs else attrs
        elif fingerprint is not None:
            attrs = {**attrs, "fingerprint": fingerprint}
        holder.attrs = attrs_of(attrs)
        for alias in spec.get("aliases", []):
            self.nodes.append(NodePlan(f"/{split}/{alias}", "hard", target=path))
            self.fingerprints[(split, alias)] = computed
        return n, None if spec.get("decode", True) is False else entry

    def _fingerprint_variant(
        self, path: str, encoding: str, variant: dict[str, Any], fp_args: tuple[Any, ...], computed: str
    ) -> str:
        """A wrong fingerprint made the way a faulty implementation would make it (for E160 and E161 fixtures).

        ``{"suffix": s}`` and ``{"upper": true}`` alter the right value's text;
        ``{"mistake": "native-byte-order"}`` hashes the stored bytes with the
        stored dtype string, ``{"mistake": "stored-width"}`` hashes categorical
        codes in their stored width, ``{"mistake": "raw-strings"}`` hashes
        fixed-length strings with their NUL padding.
        """
        if "suffix" in variant:
            return computed + str(variant["suffix"])
        if variant.get("upper"):
            return "sha256:" + computed[7:].upper()
        mistake = variant.get("mistake")
        raw = self._raw_streams
        if mistake in ("native-byte-order", "stored-width", "raw-strings") and raw is not None:
            dtype, shape, n, _streams = fp_args
            return feature_fingerprint(encoding, raw[0] or dtype, shape, n, raw[1])
        raise RecipeError(f"{path}: unknown or inapplicable fingerprint variant {variant}")

    def _dense(
        self, path: str, spec: dict[str, Any], storage: dict[str, Any], _ms: dict[str, Any], as_bool: bool
    ) -> tuple[int, tuple[Any, ...], dict[str, Any], NodePlan]:
        htype = parse_type(spec["dtype"])
        if spec.get("values") is None:  # declared but never written: only its shape is known
            shape = tuple(int(d) for d in spec["shape"])
            node = self.dataset(path, htype, None, shape, storage)
            self.decodable = False
            n = shape[0]
            return n, ("", list(shape[1:]), n, []), {"encoding": "dense"}, node
        values = spec["values"]
        arr = htype.buffer(values, shape_of(values) if isinstance(values, list) else tuple(values["shape"]))
        if arr.ndim == 0:
            raise RecipeError(f"{path}: a dense feature needs a sample axis")
        node = self.dataset(path, htype, arr, arr.shape, storage)
        is_bool = as_bool or htype.kind == "bool-enum"
        n = arr.shape[0]
        fp = (canonical_dtype(arr.dtype, as_bool=is_bool), list(arr.shape[1:]), n, [le_bytes(arr, as_bool=is_bool)])
        self._raw_streams = (arr.dtype.str, [np.ascontiguousarray(arr).tobytes()])
        entry = {
            "encoding": "dense",
            "dtype": "bool" if is_bool else arr.dtype.name,
            "sample_shape": list(arr.shape[1:]),
            "values": numbers_json(arr, as_bool=is_bool) if spec.get("decode", True) else None,
        }
        return n, fp, entry, node

    def _strings(self, values: Any, htype: HType) -> tuple[np.ndarray, list[bytes]]:
        count = int(values["count"]) if isinstance(values, dict) else len(values)
        arr = htype.buffer(values, (count,))
        raw = [bytes(v) for v in arr.tolist()]
        stored = [htype.unpad(r) for r in raw]
        return arr, stored

    def _texts(self, stored: list[bytes], htype: HType) -> list[str] | None:
        try:
            return [stored_text(r, htype) for r in stored]
        except Unmappable:
            self.decodable = False
            return None

    def _string(
        self, path: str, spec: dict[str, Any], storage: dict[str, Any], _ms: dict[str, Any], _b: bool
    ) -> tuple[int, tuple[Any, ...], dict[str, Any], NodePlan]:
        htype = parse_type(spec.get("type", "vlen-utf8"))
        arr, stored = self._strings(spec["values"], htype)
        node = self.dataset(path, htype, arr, arr.shape, storage)
        n = len(stored)
        entry = {"encoding": "string", "dtype": "str", "values": self._texts(stored, htype)}
        if htype.kind == "fixed-str":  # every stored byte, NUL padding included
            padded = [row.tobytes() for row in np.ascontiguousarray(arr).view(np.uint8).reshape(n, htype.length)]
        else:
            padded = stored
        self._raw_streams = ("", [string_stream(padded)])
        return n, ("str", [], n, [string_stream(stored)]), entry, node

    def group(self, path: str) -> NodePlan:
        """A group at ``path``, appended to the plan (its attributes are set later)."""
        node = NodePlan(path, "group")
        self.nodes.append(node)
        return node

    def _member_storage(self, storage: dict[str, Any], member_storage: dict[str, Any], member: str) -> dict[str, Any]:
        return {**storage, **member_storage.get(member, {})}

    def _categorical(
        self, path: str, spec: dict[str, Any], storage: dict[str, Any], ms: dict[str, Any], _b: bool
    ) -> tuple[int, tuple[Any, ...], dict[str, Any], NodePlan]:
        group = self.group(path)
        ctype = parse_type(spec.get("codes_dtype", "<i2"))
        codes = ctype.buffer(spec["codes"], (len(spec["codes"]),))
        self.dataset(f"{path}/codes", ctype, codes, codes.shape, self._member_storage(storage, ms, "codes"))
        ntype = parse_type(spec.get("class_names_type", "vlen-utf8"))
        names, stored = self._strings(spec["class_names"], ntype)
        names_storage = {"layout": "contiguous", **ms.get("class_names", {})}
        self.dataset(f"{path}/class_names", ntype, names, names.shape, names_storage)
        n = len(codes)
        codes64 = codes.astype(np.int64) if codes.dtype.kind in "iu" else codes
        streams = [le_bytes(codes64.astype("<i8")), string_stream(stored)]
        self._raw_streams = ("", [le_bytes(codes), string_stream(stored)])
        entry = {
            "encoding": "categorical",
            "dtype": codes.dtype.name,
            "values": [int(c) for c in codes.tolist()],
            "class_names": self._texts(stored, ntype),
        }
        return n, ("<i8", [], n, streams), entry, group

    def _ragged(
        self, path: str, spec: dict[str, Any], storage: dict[str, Any], ms: dict[str, Any], as_bool: bool
    ) -> tuple[int, tuple[Any, ...], dict[str, Any], NodePlan]:
        group = self.group(path)
        htype = parse_type(spec["dtype"])
        is_bool = as_bool or htype.kind == "bool-enum"
        shapes_spec = spec.get("shapes")
        otype = parse_type(spec.get("offsets_dtype", "<i8"))
        samples: list[np.ndarray] = []
        if spec.get("samples") is not None:
            inner = tuple(spec.get("inner_shape", []))
            for i, sample in enumerate(spec["samples"]):
                arr = htype.buffer(sample, shape_of(sample))
                if shapes_spec is None:
                    if arr.size == 0:
                        arr = arr.reshape((0, *inner))
                    if arr.shape[1:] != inner:
                        raise RecipeError(f"{path}: sample {i} has shape {arr.shape}, not (L, *{inner})")
                elif isinstance(shapes_spec, list):
                    arr = arr.reshape(tuple(shapes_spec[i]))
                samples.append(arr)
            if shapes_spec is None:
                values = np.concatenate(samples) if samples else np.zeros((0, *inner), dtype=htype.np_dtype)
                lengths = [len(s) for s in samples]
            else:
                values = np.concatenate([s.reshape(-1) for s in samples]) if samples else np.zeros(0, htype.np_dtype)
                lengths = [s.size for s in samples]
            offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))).astype(otype.np_dtype)
            shapes = None
            if shapes_spec is not None:
                rank = int(spec.get("shape_rank", samples[0].ndim if samples else 1))
                shapes = np.array([list(s.shape) for s in samples], dtype=np.int64).reshape(len(samples), rank)
        else:  # raw components, for broken files
            values = htype.buffer(spec["values"], shape_of(spec["values"]))
            offsets = otype.buffer(spec["offsets"], (len(spec["offsets"]),))
            shapes = None if shapes_spec is None else np.array(shapes_spec, dtype=np.int64)
        values = values.astype(htype.np_dtype)
        self.dataset(f"{path}/values", htype, values, values.shape, self._member_storage(storage, ms, "values"))
        self.dataset(f"{path}/offsets", otype, offsets, offsets.shape, self._member_storage(storage, ms, "offsets"))
        stype = parse_type(spec.get("shapes_dtype", "<i8"))
        if shapes is not None:
            shapes = shapes.astype(stype.np_dtype)
            self.dataset(f"{path}/shapes", stype, shapes, shapes.shape, self._member_storage(storage, ms, "shapes"))
        n = len(offsets) - 1
        streams = [
            le_bytes(offsets.astype("<i8")),
            le_bytes(values, as_bool=is_bool),
            b"" if shapes is None else le_bytes(shapes.astype("<i8")),
        ]
        entry: dict[str, Any] = {"encoding": "ragged", "dtype": "bool" if is_bool else values.dtype.name}
        if spec.get("samples") is not None:
            entry["values"] = [numbers_json(s, as_bool=is_bool) for s in samples]
            if shapes is not None:
                entry["shapes"] = [list(s.shape) for s in samples]
        else:
            self.decodable = False
        return n, (canonical_dtype(values.dtype, as_bool=is_bool), [], n, streams), entry, group

    def _bytes(
        self, path: str, spec: dict[str, Any], storage: dict[str, Any], ms: dict[str, Any], _b: bool
    ) -> tuple[int, tuple[Any, ...], dict[str, Any], NodePlan]:
        group = self.group(path)
        vtype = parse_type(spec.get("values_dtype", "|u1"))
        otype = parse_type(spec.get("offsets_dtype", "<i8"))
        if spec.get("samples") is not None:
            blobs = [base64.b64decode(s, validate=True) for s in spec["samples"]]
            values = np.frombuffer(b"".join(blobs), dtype=np.uint8).astype(vtype.np_dtype)
            offsets = np.concatenate(([0], np.cumsum([len(b) for b in blobs], dtype=np.int64))).astype(otype.np_dtype)
        else:
            values = vtype.buffer(spec["values"], (len(spec["values"]),))
            offsets = otype.buffer(spec["offsets"], (len(spec["offsets"]),))
            blobs = []
            self.decodable = False
        self.dataset(f"{path}/values", vtype, values, values.shape, self._member_storage(storage, ms, "values"))
        self.dataset(f"{path}/offsets", otype, offsets, offsets.shape, self._member_storage(storage, ms, "offsets"))
        n = len(offsets) - 1
        entry: dict[str, Any] = {
            "encoding": "bytes",
            "dtype": "bytes",
            "values": [base64.b64encode(b).decode("ascii") for b in blobs],
        }
        media = spec.get("attrs", {}).get("media_type")
        if media is not None:
            entry["media_type"] = media
        streams = [le_bytes(offsets.astype("<i8")), le_bytes(values)]
        return n, ("|u1", [], n, streams), entry, group
