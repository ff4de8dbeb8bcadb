"""The source of a Hugging Face conversion: the loaded dataset, its card, and the rows of each target split (§4.2, §5.1).

A ``datasets.Dataset``, a ``datasets.DatasetDict`` or the directory of one
saved with ``save_to_disk`` (:func:`load_source`); its ``DatasetInfo`` card
gives root metadata (:func:`card_metadata`); :func:`target_splits` maps the
source's splits to h5ml split names, or cuts a Dataset without splits by
``split_ratios`` (stratified on its label column), each target a :class:`Part`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import IngestError
from h5ml.ingest.hf.columns import Column, import_datasets
from h5ml.ingest.naming import name_list, name_problem, standard_split_name
from h5ml.ingest.options import parameter_error
from h5ml.ingest.splitting import assign_splits, check_ratios, split_seed
from h5ml.model.values import text_problem

__all__ = [
    "DEFAULT_SPLIT_RATIOS",
    "Part",
    "card_metadata",
    "dataset_label",
    "first_info",
    "load_source",
    "target_splits",
]

#: Splits of a ``Dataset`` that has none (§5.1).
DEFAULT_SPLIT_RATIOS: Final[Mapping[str, float]] = {"train": 0.8, "test": 0.2}


@dataclass
class Part:
    """The rows of one target split: a source split's dataset (arrow format) and which of its rows, in order."""

    source_split: str | None
    dataset: Any
    rows: npt.NDArray[np.int64] | None  # None: every row in order
    columns: tuple[Column, ...] = ()

    @property
    def count(self) -> int:
        """The rows of the target split."""
        return len(self.dataset) if self.rows is None else int(self.rows.shape[0])


def load_source(hf: Any, source: Any) -> tuple[Any, str, Path | None]:
    """The loaded dataset(s), the label naming the source in messages, and the source path when it is one."""
    if isinstance(source, (hf.Dataset, hf.DatasetDict)):
        if isinstance(source, hf.DatasetDict):
            streaming = [k for k, v in source.items() if not isinstance(v, hf.Dataset)]
            if streaming:
                raise TypeError(
                    f"the DatasetDict's splits {streaming} are not Dataset objects (streaming datasets "
                    "are not converted); load them without streaming=True"
                )
        return source, dataset_label(source), None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such directory (a dataset saved with save_to_disk was expected)")
        try:
            loaded = hf.load_from_disk(os.fspath(path))
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise IngestError(
                f"{path}: cannot be loaded with datasets.load_from_disk ({type(exc).__name__}: {exc}); give the "
                "directory written by Dataset.save_to_disk or DatasetDict.save_to_disk",
                path=str(path),
            ) from exc
        return loaded, str(path), path
    kind = type(source).__name__
    raise TypeError(
        f"source must be a datasets.Dataset, a datasets.DatasetDict or the path of a dataset saved with "
        f"save_to_disk, got a {kind}" + (" (streaming datasets are not converted)" if "Iterable" in kind else "")
    )


def dataset_label(source: Any) -> str:
    """How an in-memory dataset is named in messages and in the root attribute ``source``."""
    first = next(iter(source.values()), None) if isinstance(source, dict) else source
    name = getattr(getattr(first, "info", None), "dataset_name", None)
    return f"Hugging Face dataset {name!r}" if name else f"in-memory datasets.{type(source).__name__}"


def first_info(loaded: Any) -> Any:
    """The ``DatasetInfo`` of a loaded ``Dataset``, or of the first split of a ``DatasetDict`` (None when empty)."""
    if hasattr(loaded, "info"):
        return loaded.info
    first = next(iter(loaded.values()), None)
    return None if first is None else first.info


def card_metadata(info: Any) -> dict[str, Any]:
    """Root attributes from a ``DatasetInfo`` (§4.2): the fields it sets, in the forms the schema takes."""
    out: dict[str, Any] = {}
    if info is None:
        return out
    for key in ("description", "license", "citation"):
        value = getattr(info, key, None)
        if isinstance(value, str) and value.strip() and text_problem(value) is None:
            out[key] = value.strip()
    homepage = getattr(info, "homepage", None)
    if (
        isinstance(homepage, str)
        and homepage.startswith(("http://", "https://"))
        and not any(c.isspace() for c in homepage)
    ):
        out["homepage"] = homepage
    name = getattr(info, "dataset_name", None)
    if isinstance(name, str) and name.strip():
        out["name"] = name.strip()
    return out


def target_splits(
    hf: Any,
    loaded: Any,
    label_text: str,
    splits: Sequence[str] | Mapping[str, str] | None,
    ratios: Mapping[str, float] | None,
    label: str | None,
    seed: int | None,
) -> dict[str, Part]:
    """Target split name -> its rows, after renaming, selection and (for a Dataset without a split) assignment."""
    if isinstance(loaded, hf.DatasetDict):
        if ratios is not None:
            raise parameter_error(
                "split_ratios",
                f"{label_text} has splits {list(loaded)}; split_ratios applies to a Dataset without splits only",
            )
        sources: dict[str, Any] = dict(loaded.items())
    else:
        own = getattr(loaded, "split", None)
        if own is None or ratios is not None:
            return _assigned(loaded, label_text, splits, ratios, label, seed)
        sources = {str(own): loaded}
    names = _rename(list(sources), splits, label_text)
    return {target: Part(src, sources[src].with_format("arrow"), None) for src, target in names.items()}


def _rename(available: list[str], splits: Sequence[str] | Mapping[str, str] | None, label_text: str) -> dict[str, str]:
    """Source split -> target name, checked (§5.1)."""
    if splits is None:
        chosen = {name: standard_split_name(name) for name in available}
    elif isinstance(splits, Mapping):
        chosen = dict(splits)
    else:
        chosen = {name: standard_split_name(name) for name in name_list("splits", splits) or []}
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise parameter_error("splits", f"{label_text} has no split(s) {unknown}; its splits are {available}")
    targets: dict[str, str] = {}
    for src, target in chosen.items():
        problem = name_problem("split", target)
        if problem is not None:
            raise IngestError(
                f"{label_text}: split {src!r} would be named {target!r}: {problem}; rename it with "
                "splits={source: name}",
                path=label_text,
            )
        if target in targets:
            raise IngestError(
                f"{label_text}: splits {targets[target]!r} and {src!r} both map to the h5ml split {target!r}; "
                "choose one with splits=[...] or rename one with splits={source: name}",
                path=label_text,
            )
        targets[target] = src
    return {src: target for target, src in targets.items()}


def _assigned(
    dataset: Any,
    label_text: str,
    splits: Sequence[str] | Mapping[str, str] | None,
    ratios: Mapping[str, float] | None,
    label: str | None,
    seed: int | None,
) -> dict[str, Part]:
    """A Dataset without a split, cut by ratios (stratified on the label column), each part in row order."""
    if splits is not None:
        raise parameter_error(
            "splits", f"{label_text} has no splits to choose from; splits= applies to a DatasetDict (use split_ratios=)"
        )
    ratios = check_ratios(DEFAULT_SPLIT_RATIOS if ratios is None else ratios)
    arrow = dataset.with_format("arrow")
    count = len(dataset)
    labels: list[str] | None = None
    column = label if label is not None else _first_classlabel(dataset)
    if column is not None:
        if column not in dataset.column_names:
            raise parameter_error(
                "label", f"label {column!r} is not a column of {label_text}; its columns are {dataset.column_names}"
            )
        labels = [str(v) for v in arrow[column].to_pylist()]
    chosen = np.asarray(assign_splits(count, ratios, split_seed(seed), labels), dtype=object)
    return {name: Part(None, arrow, np.flatnonzero(chosen == name).astype(np.int64)) for name in ratios}


def _first_classlabel(dataset: Any) -> str | None:
    hf = import_datasets()
    return next((name for name, f in dataset.features.items() if isinstance(f, hf.ClassLabel)), None)
