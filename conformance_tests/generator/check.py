"""``generate.py --check``: the committed suite compared with what its recipes describe, nothing written.

:func:`check` verifies the fixtures' SHA-256 against SHA256SUMS, each
fixture's content against its recipe (:class:`SuiteChecker`: objects,
datatypes, dataspaces, layouts, filters, values, attributes; raw fixtures
byte for byte; foreign ones through
:class:`~conformance_tests.generator.foreign.ForeignChecker`), the manifest
and expected documents, and runs the fingerprint self-test (SPEC §8).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from h5py import h5d, h5o, h5s

from conformance_tests.generator.checksums import checksum_values, edit_target
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.filters import FILTER_IDS, filter_mask_problems, filter_name
from conformance_tests.generator.fingerprints import self_test
from conformance_tests.generator.foreign import FOREIGN_HINT, ForeignChecker, foreign_spec, is_foreign
from conformance_tests.generator.paths import (
    EXPECTED_DIR,
    FIXTURES_DIR,
    MANIFEST_PATH,
    MANIFEST_SCHEMA_PATH,
    SUITE_DIR,
    SUMS_PATH,
)
from conformance_tests.generator.plans import AttrPlan, FilePlan, NodePlan, attrs_after_edits
from conformance_tests.generator.raw import raw_bytes
from conformance_tests.generator.recipes import fixture_name
from conformance_tests.generator.sharded import check_sharded, is_sharded
from conformance_tests.generator.suite import Suite, describe, file_digest, sum_names
from conformance_tests.generator.values import numeric_array
from conformance_tests.generator.write import parent_and_name

__all__ = ["SuiteChecker", "check", "manifest_schema_problems"]


class SuiteChecker:
    """Compares the committed fixtures with what their recipes describe."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.problems: list[str] = []

    def fail(self, where: str, message: str) -> None:
        """Record one problem of ``where`` (a recipe id)."""
        self.problems.append(f"{where}: {message}")

    def check_all(self, only: set[str] | None = None) -> list[str]:
        """Check every fixture of the suite, or those of the recipe ids in ``only``."""
        by_id = {r["id"]: r for r in self.suite.recipes}
        for recipe in self.suite.recipes:
            if only is not None and recipe["id"] not in only:
                continue
            if is_sharded(recipe):  # a folder (SPEC §12): its files, each shard's content, its index
                if not (FIXTURES_DIR / recipe["id"]).is_dir():
                    self.fail(recipe["id"], f"fixture folder {recipe['id']}/ is missing")
                else:
                    self.problems += check_sharded(recipe, self.check_plan)
                continue
            path = FIXTURES_DIR / fixture_name(recipe)
            if not path.is_file():
                hint = f"; {FOREIGN_HINT}" if is_foreign(recipe) else ""
                self.fail(recipe["id"], f"fixture {path.name} is missing{hint}")
                continue
            try:
                if is_foreign(recipe):
                    ForeignChecker(self.problems).check_foreign(recipe["id"], foreign_spec(recipe), path)
                elif "raw" in recipe:
                    expected = raw_bytes(recipe, lambda rid: FIXTURES_DIR / fixture_name(by_id[rid]))
                    if path.read_bytes() != expected:
                        self.fail(recipe["id"], "the bytes differ from those the recipe derives")
                else:
                    plan = self.suite.plan(recipe)
                    assert plan is not None
                    self.check_plan(recipe["id"], plan, path)
            except (RecipeError, OSError, KeyError, ValueError) as exc:
                self.fail(recipe["id"], f"cannot check: {exc}")
        return self.problems

    def check_plan(self, rid: str, plan: FilePlan, path: Path) -> None:
        """Compare an HDF5 fixture with its plan: user block, root and object attributes, objects, no other links."""
        if plan.driver:
            return  # a member of a multi-file set: HDF5 opens it only with all its members (SHA-256 checked)
        with h5py.File(path, "r") as f:
            if f.userblock_size != plan.userblock_size:
                self.fail(rid, f"user block of {f.userblock_size} bytes, not {plan.userblock_size}")
            if plan.userblock_text and not path.read_bytes().startswith(plan.userblock_text.encode()):
                self.fail(rid, "the user block text differs")
            planned_paths = {"/"}
            for node in plan.nodes:
                planned_paths.add(node.path)
            deleted, written = self._deleted_and_written(plan.edits)
            self.check_attrs(rid, f, "/", attrs_after_edits([*plan.root_attrs, *plan.final_attrs], plan.edits))
            for node in plan.nodes:
                if node.path in deleted:
                    continue
                node_attrs = attrs_after_edits(node.attrs, plan.edits, node.path)
                self.check_node(rid, f, node, node_attrs, written.get(node.path, []))
            for edit in plan.edits:  # SPEC §8.4: checksum datasets, computed again from the fixture's chunks
                if edit["op"] == "checksums":
                    target = edit_target(edit)
                    planned_paths.add(target)
                    want = checksum_values(
                        f, edit["path"], edit.get("dtype", "<u4"), int(edit.get("damage", 0)), int(edit.get("extra", 0))
                    )
                    got = f.get(target)
                    if (
                        not isinstance(got, h5py.Dataset)
                        or got.dtype != want.dtype
                        or got[()].tolist() != want.tolist()
                    ):
                        self.fail(rid, f"{target} does not hold the checksums its edit describes")
            found = self._all_links(f) | {"/"}
            unexpected = sorted(found - planned_paths)
            missing = sorted((planned_paths - deleted) - found)
            if unexpected:
                self.fail(rid, f"objects the recipe does not describe: {unexpected}")
            if missing:
                self.fail(rid, f"objects missing: {missing}")

    @staticmethod
    def _deleted_and_written(edits: list[dict[str, Any]]) -> tuple[set[str], dict[str, list[dict[str, Any]]]]:
        """The paths the edits delete, and the ``write`` edits made to each dataset, in order."""
        deleted: set[str] = set()
        written: dict[str, list[dict[str, Any]]] = {}
        for edit in edits:
            path = edit.get("path", "/")
            if edit["op"] == "delete":
                deleted.add(path)
            elif edit["op"] == "write":
                written.setdefault(path, []).append(edit)
        return deleted, written

    @staticmethod
    def _all_links(f: h5py.File) -> set[str]:
        """Every link path of the file, without following soft or external links."""
        found: set[str] = set()

        def walk(group: Any, prefix: str) -> None:
            names: list[bytes] = []
            group.id.links.iterate(lambda name: names.append(name))
            for raw in names:
                text = raw.decode("utf-8", "surrogateescape")
                if not _printable_name(raw):
                    text = "\\x" + raw.hex()
                path = f"{prefix.rstrip('/')}/{text}"
                found.add(path)
                info = group.id.links.get_info(raw)
                if info.type == h5py.h5l.TYPE_HARD and isinstance(group[raw], h5py.Group) and path not in seen:
                    seen.add(path)
                    walk(group[raw], path)

        seen: set[str] = set()
        walk(f, "/")
        return found

    def check_attrs(self, rid: str, obj: Any, where: str, attrs: dict[str, AttrPlan]) -> None:
        """Compare the attributes of one object with the planned ones: names, dataspaces, datatypes, values."""
        names = {n.decode("utf-8", "surrogateescape") if isinstance(n, bytes) else n for n in obj.attrs}
        if names != set(attrs):
            self.fail(rid, f"{where}: attributes {sorted(names)}, not {sorted(attrs)}")
            return
        for name, attr in attrs.items():
            aid = obj.attrs.get_id(name)
            if aid.shape != attr.shape:
                self.fail(rid, f"{where}@{name}: dataspace {aid.shape}, not {attr.shape}")
                continue
            if aid.get_type() != attr.htype.tid():
                self.fail(rid, f"{where}@{name}: datatype differs from {attr.htype.label}")
                continue
            if attr.shape is None:
                continue
            want = attr.htype.buffer(attr.value, attr.shape, obj.file)
            got = np.empty(want.shape, dtype=want.dtype)
            if attr.htype.kind in ("fixed-str", "custom-int", "array"):
                aid.read(got, mtype=attr.htype.tid())
            elif attr.htype.kind == "ref":
                continue  # references compare by target, which the link walk already covers
            else:
                aid.read(got)
            if not _same(got, want):
                self.fail(rid, f"{where}@{name}: value differs from the recipe")

    def check_node(
        self, rid: str, f: h5py.File, node: NodePlan, attrs: dict[str, AttrPlan], edits: list[dict[str, Any]]
    ) -> None:
        """Compare one planned object with the file: a link's kind and target, or an object's kind and attributes."""
        where = node.path
        if node.kind in ("soft", "external", "hard"):
            parent, name = parent_and_name(f, node.path)
            info = parent.id.links.get_info(name)
            kind = {h5py.h5l.TYPE_SOFT: "soft", h5py.h5l.TYPE_EXTERNAL: "external", h5py.h5l.TYPE_HARD: "hard"}
            if kind.get(info.type) != node.kind:
                self.fail(rid, f"{where}: a {kind.get(info.type)} link, not {node.kind}")
            elif node.kind == "soft" and parent.id.links.get_val(name) != node.target.encode():
                self.fail(rid, f"{where}: soft link target differs")
            elif node.kind == "external" and parent.id.links.get_val(name) != (
                node.target_file.encode(),
                node.target.encode(),
            ):
                self.fail(rid, f"{where}: external link target differs")
            elif node.kind == "hard" and h5o.get_info(parent[name].id).addr != h5o.get_info(f[node.target].id).addr:
                self.fail(rid, f"{where}: not a hard link to {node.target}")
            return
        parent, name = parent_and_name(f, node.path)
        obj = parent[name]
        if node.kind == "group":
            if not isinstance(obj, h5py.Group):
                self.fail(rid, f"{where}: not a group")
                return
        elif node.kind == "datatype":
            if not isinstance(obj, h5py.Datatype) or obj.id != node.htype.tid():  # type: ignore[union-attr]
                self.fail(rid, f"{where}: not the committed datatype {node.htype.label}")  # type: ignore[union-attr]
                return
        elif node.kind == "virtual":
            if not (isinstance(obj, h5py.Dataset) and obj.is_virtual):
                self.fail(rid, f"{where}: not a virtual dataset")
                return
        else:
            if not isinstance(obj, h5py.Dataset):
                self.fail(rid, f"{where}: not a dataset")
                return
            self.check_dataset(rid, obj, node, edits)
        self.check_attrs(rid, obj, where, attrs)

    def check_dataset(self, rid: str, dset: h5py.Dataset, node: NodePlan, edits: list[dict[str, Any]]) -> None:
        """Compare one dataset with its plan: datatype, shape, layout, chunks, filters, storage and data (after edits)."""
        where = node.path
        assert node.htype is not None
        if dset.id.get_type() != node.htype.tid():
            self.fail(rid, f"{where}: datatype differs from {node.htype.label}")
            return
        if dset.shape != node.shape:
            self.fail(rid, f"{where}: shape {dset.shape}, not {node.shape}")
            return
        if node.maxshape is not None and dset.maxshape != node.maxshape:
            self.fail(rid, f"{where}: maxshape {dset.maxshape}, not {node.maxshape}")
        storage = node.storage
        layout = storage.get("layout", "chunked")
        plist = dset.id.get_create_plist()
        want_layout = {"chunked": h5d.CHUNKED, "contiguous": h5d.CONTIGUOUS, "compact": h5d.COMPACT}[layout]
        if plist.get_layout() != want_layout:
            self.fail(rid, f"{where}: layout {plist.get_layout()}, not {layout}")
        if layout == "chunked" and dset.chunks != tuple(storage["chunks"]):
            self.fail(rid, f"{where}: chunks {dset.chunks}, not {tuple(storage['chunks'])}")
        filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
        want = [
            FILTER_IDS[filter_name(item)] if filter_name(item) != "filter" else int(item["filter"]["id"])
            for item in storage.get("filters", [])
        ]
        if filters != want:
            self.fail(rid, f"{where}: filters {filters}, not {want}")
        elif storage.get("expect_filtered"):
            for problem in filter_mask_problems(dset.file, node):
                self.fail(rid, problem)
        if plist.get_external_count() != len(storage.get("external", [])):
            self.fail(rid, f"{where}: external storage differs")
        if node.data is None or storage.get("external") or dset.size == 0:
            return
        if node.written is not None:
            if dset.id.get_num_chunks() * dset.chunks[0] < node.written[1] - node.written[0]:
                self.fail(rid, f"{where}: fewer rows written than planned")
            return
        want_data = node.data
        if node.htype.kind == "ref":
            return
        got = np.empty(want_data.shape, dtype=want_data.dtype)
        try:
            if node.htype.kind in ("fixed-str", "custom-int", "array", "bool-enum"):  # raw bytes, no conversion
                dset.id.read(h5s.ALL, h5s.ALL, got, mtype=node.htype.tid())
            elif node.htype.kind in ("vlen-str", "vlen-seq"):
                got = dset[...]
            else:
                dset.id.read(h5s.ALL, h5s.ALL, got)
        except (OSError, RuntimeError) as exc:
            self.fail(rid, f"{where}: data cannot be read ({exc})")
            return
        if edits:
            want_data = want_data.copy()
            for edit in edits:
                want_data[tuple(edit["index"])] = numeric_array(edit["value"], want_data.dtype)
        if not _same(got, want_data):
            self.fail(rid, f"{where}: data differs from the recipe")


def _printable_name(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit-exact equality of two buffers (NaN payloads and signed zeros included; strings as bytes)."""
    if got.shape != want.shape:
        return False
    if want.dtype == object:
        flat_got = [bytes(v) if isinstance(v, (bytes, np.bytes_)) else v for v in got.reshape(-1).tolist()]
        flat_want = want.reshape(-1).tolist()
        if flat_want and isinstance(flat_want[0], np.ndarray):
            return all(np.array_equal(a, b) for a, b in zip(flat_got, flat_want, strict=True))
        return [v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v for v in flat_got] == flat_want
    return got.tobytes() == want.astype(got.dtype, copy=False).tobytes()


def check(recipes: list[dict[str, Any]], only: set[str] | None = None) -> list[str]:
    """Every problem of the committed suite (empty when it is consistent).

    With ``only`` (recipe ids), only those recipes' fixtures are checked:
    their SHA-256 against SHA256SUMS and their content against the recipes;
    fixtures no recipe builds, the manifest and the expected documents are
    then left unchecked.
    """
    problems = [f"generator self-test: {p}" for p in self_test()]
    chosen = [r for r in recipes if only is None or r["id"] in only]
    expected_files = {f"fixtures/{name}" for name in sum_names(chosen)}
    if only is None:
        entries = {f"fixtures/{r['id'] if is_sharded(r) else fixture_name(r)}" for r in chosen}
        present = {f"fixtures/{p.name}" for p in FIXTURES_DIR.glob("*")} if FIXTURES_DIR.is_dir() else set()
        for extra in sorted(present - entries):
            problems.append(f"{extra}: no recipe builds it")
    listed: dict[str, str] = {}
    if SUMS_PATH.is_file():
        for line in SUMS_PATH.read_text(encoding="utf-8").splitlines():
            digest, _, name = line.partition("  ")
            listed[name] = digest
    else:
        problems.append("SHA256SUMS is missing")
    if only is None and set(listed) != expected_files:
        problems.append(f"SHA256SUMS lists {sorted(set(listed) ^ expected_files)} wrongly")
    elif only is not None and expected_files - set(listed):
        problems.append(f"SHA256SUMS does not list {sorted(expected_files - set(listed))}")
    for name in sorted(expected_files & set(listed)):
        path = SUITE_DIR / name
        if path.is_file() and file_digest(path) != listed[name]:
            problems.append(f"{name}: SHA-256 differs from SHA256SUMS")
    suite = Suite(recipes)
    problems += SuiteChecker(suite).check_all(only)
    if problems or only is not None:
        return problems
    manifest, documents = describe(suite)
    on_disk = json.loads(MANIFEST_PATH.read_text(encoding="utf-8")) if MANIFEST_PATH.is_file() else None
    if on_disk != manifest:
        problems.append("manifest.json differs from what the recipes produce (run generate.py)")
    problems += manifest_schema_problems(manifest)
    present_docs = {p.name for p in EXPECTED_DIR.glob("*.json")} if EXPECTED_DIR.is_dir() else set()
    for name in sorted(present_docs ^ set(documents)):
        problems.append(f"expected/{name}: {'stale' if name in present_docs else 'missing'}")
    for name in sorted(present_docs & set(documents)):
        if (EXPECTED_DIR / name).read_text(encoding="utf-8") != documents[name]:
            problems.append(f"expected/{name} differs from what its recipe produces")
    return problems


def manifest_schema_problems(manifest: dict[str, Any]) -> list[str]:
    """Where the manifest breaks schema/h5ml-manifest-1.0.schema.json (nothing is checked without jsonschema)."""
    try:
        import jsonschema
    except ImportError:
        return []
    schema = json.loads(MANIFEST_SCHEMA_PATH.read_text(encoding="utf-8"))
    return [
        f"manifest.json breaks its schema at /{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft202012Validator(schema).iter_errors(manifest)
    ]
