"""One recipe as the plan of its whole file: root attributes, splits, extra objects, edits (SPEC §4, §5).

:func:`plan_recipe` lays the standard root template (§4) under the recipe's
root attributes, expands its splits and features
(:class:`~conformance_tests.generator.features.FeatureExpander`), adds the
extra objects and the edits made after the file was finished, writes the file
fingerprint (§8.3) and the completion marker last, and derives the Appendix B
document a reader must produce.
"""

from __future__ import annotations

from typing import Any

from conformance_tests.generator.datatypes import parse_type
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.features import FeatureExpander
from conformance_tests.generator.fingerprints import file_fingerprint
from conformance_tests.generator.json_mapping import Unmappable
from conformance_tests.generator.plans import LIBVER, FilePlan, NodePlan, attr_json, attrs_after_edits, attrs_of
from conformance_tests.generator.values import shape_of

__all__ = ["FilePlanner", "plan_recipe"]


def plan_recipe(recipe: dict[str, Any]) -> FilePlan:
    """The plan of the HDF5 file a recipe describes (raises :class:`RecipeError` for a malformed recipe)."""
    return FilePlanner(recipe).build_plan()


class FilePlanner:
    """Expands one recipe into a :class:`FilePlan` and the case expectations' raw material."""

    def __init__(self, recipe: dict[str, Any]) -> None:
        self.recipe = recipe
        self.rid = recipe["id"]
        self.plan = FilePlan()
        self.features = FeatureExpander(self.rid, self.plan.nodes)
        self.decodable = True

    def build_plan(self) -> FilePlan:
        """The plan of the whole file: root attributes, splits, objects, file fingerprint and marker, edits."""
        recipe, plan = self.recipe, self.plan
        options = recipe.get("file", {})
        low, high = options.get("libver", LIBVER)
        plan.libver = (str(low), str(high))
        plan.userblock_size = int(options.get("userblock_size", 0))
        plan.userblock_text = options.get("userblock_text", "")
        plan.driver = options.get("driver", "")
        root = recipe.get("root", {})
        template = root.get("template", "standard")
        specs: dict[str, Any] = {}
        if template == "standard":
            specs = {
                "format": "h5ml",
                "format_version": "1.0",
                "name": self.rid,
                "created": "2026-01-01T00:00:00Z",
                "writer": "h5ml-conformance-generator 1.0",
                "must_understand": {"dtype": "vlen-utf8", "value": [], "shape": [0]},
                "license": "CC0-1.0",
                "description": recipe.get("description", ""),
            }
        elif template != "none":
            raise RecipeError(f"{self.rid}: unknown root template {template!r}")
        root_specs = root.get("attrs", {})
        specs.update({k: v for k, v in root_specs.items() if k not in ("fingerprint", "complete")})
        plan.root_attrs = attrs_of(specs)
        splits_doc: dict[str, Any] = {}
        for split, split_spec in recipe.get("splits", {}).items():
            if split_spec is not None:
                splits_doc[split] = self._split(split, split_spec)
        for obj in recipe.get("objects", []):
            plan.nodes.append(self._object(obj))
        final: dict[str, Any] = {}
        if template == "standard":
            final = {"fingerprint": "auto", "complete": 1}
        final.update({k: v for k, v in root_specs.items() if k in ("fingerprint", "complete")})
        fingerprint = final.get("fingerprint")
        if fingerprint == "auto":
            final["fingerprint"] = file_fingerprint(self.features.fingerprints)
        elif fingerprint == "line-order":
            final["fingerprint"] = file_fingerprint(self.features.fingerprints, line_order=True)
        elif isinstance(fingerprint, dict) and "suffix" in fingerprint:
            final["fingerprint"] = file_fingerprint(self.features.fingerprints) + str(fingerprint["suffix"])
        elif isinstance(fingerprint, dict) and fingerprint.get("upper"):
            final["fingerprint"] = "sha256:" + file_fingerprint(self.features.fingerprints)[7:].upper()
        plan.final_attrs = attrs_of({k: final[k] for k in ("fingerprint", "complete") if k in final})
        plan.edits = list(recipe.get("edits", []))
        plan.document = self._document(splits_doc)
        return plan

    def _split(self, split: str, spec: dict[str, Any]) -> dict[str, Any]:
        group = self.features.group(f"/{split}")
        features: dict[str, Any] = {}
        counts = set()
        for name, fspec in spec.get("features", {}).items():
            if fspec is None:
                continue
            n, entry = self.features.feature(split, name, fspec)
            counts.add(n)
            if entry is not None:
                features[name] = entry
                for alias in fspec.get("aliases", []):
                    features[alias] = entry
        attrs = {"num_samples": "auto", "shuffle_seed": 1, **spec.get("attrs", {})}
        if attrs["num_samples"] == "auto":
            if len(counts) > 1:
                raise RecipeError(f"{self.rid}: split {split} has features of {sorted(counts)} samples")
            attrs["num_samples"] = counts.pop() if counts else 0
        group.attrs = attrs_of(attrs)
        num = attrs.get("num_samples")
        if isinstance(num, dict):
            num = num.get("value")
        if not isinstance(num, int) or isinstance(num, bool):
            self.decodable = False
        return {"num_samples": num, "features": features}

    def _object(self, obj: dict[str, Any]) -> NodePlan:
        kind = obj["kind"]
        path = obj["path"]
        attrs = attrs_of(obj.get("attrs", {}))
        if kind == "group":
            return NodePlan(path, "group", attrs)
        if kind in ("soft", "external", "hard"):
            return NodePlan(path, kind, target=obj["target"], target_file=obj.get("file", ""))
        if kind == "datatype":
            return NodePlan(path, "datatype", attrs, htype=parse_type(obj["dtype"]))
        if kind == "virtual":
            return NodePlan(
                path,
                "virtual",
                attrs,
                htype=parse_type(obj["dtype"]),
                shape=tuple(obj["shape"]),
                target=obj["target"],
                target_file=obj["file"],
            )
        if kind == "dataset":
            htype = parse_type(obj["dtype"])
            data = obj.get("data")
            if "shape" in obj:
                shape = tuple(int(s) for s in obj["shape"])
            elif htype.kind == "array":
                shape = (len(data or []),)
            else:
                shape = shape_of(data) if not isinstance(data, dict) else tuple(data["shape"])
            buf = None if data is None else htype.buffer(data, shape) if htype.kind != "ref" else data
            storage = obj.get("storage", {"layout": "contiguous"})
            maxshape = tuple(storage["maxshape"]) if "maxshape" in storage else None
            node = NodePlan(path, "dataset", attrs, htype, shape, maxshape, buf, storage=storage)
            if "written" in storage:
                node.written = (int(storage["written"][0]), int(storage["written"][1]))
            return node
        raise RecipeError(f"{self.rid}: unknown object kind {kind!r}")

    def _document(self, splits: dict[str, Any]) -> dict[str, Any] | None:
        """The Appendix B document a reader must produce, or None when the file is not decodable."""
        if not (self.decodable and self.features.decodable):
            return None
        metadata: dict[str, Any] = {}
        attrs = attrs_after_edits([*self.plan.root_attrs, *self.plan.final_attrs], self.plan.edits)
        try:
            metadata = {name: attr_json(attr) for name, attr in attrs.items()}
        except Unmappable:
            return None
        version = metadata.get("format_version")
        if not isinstance(version, str):
            return None
        out_splits = {}
        for split in sorted(splits):
            entry = splits[split]
            if any(v is None for f in entry["features"].values() for v in f.values()):
                return None
            out_splits[split] = {
                "num_samples": entry["num_samples"],
                "features": {name: entry["features"][name] for name in sorted(entry["features"])},
            }
        return {"format_version": version, "metadata": metadata, "splits": out_splits}
