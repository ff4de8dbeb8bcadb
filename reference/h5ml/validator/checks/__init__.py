"""The rules the validator checks (SPEC.md §9), one module per part of the specification.

The public API is :mod:`h5ml.validator.runner`; this subpackage holds the checks it
runs. Each check is a generator that yields :class:`Issue` objects and shares
what it learns through a :class:`FileState`.

Modules, in the order the checks run:

- :mod:`~h5ml.validator.checks.file`: opening the file, its superblock, the order of the checks (§3.1, §10.3).
- :mod:`~h5ml.validator.checks.root`: the root attributes: format, versions, ``must_understand``,
  completion, the root metadata schema (§1, §4).
- :mod:`~h5ml.validator.checks.storage`: links, external storage, virtual datasets, datatypes,
  filters (§3.2-§3.6, §10.1).
- :mod:`~h5ml.validator.checks.splits`: splits, names, ``num_samples``, features and their common
  attributes, unknown objects (§5, §6.1).
- :mod:`~h5ml.validator.checks.encodings`: the structure of each encoding (§6.2-§6.6).
- :mod:`~h5ml.validator.checks.chunking`: chunk and layout rules of feature datasets (§7).
- :mod:`~h5ml.validator.checks.deep`: sample data and fingerprints, in a deep validation, after every
  metadata check (§3.3, §3.4, §6, §8, §10.4).

Shared by them: :mod:`~h5ml.validator.checks.issue` (the issue record),
:mod:`~h5ml.validator.checks.state` (the state of one file's checks) and
:mod:`~h5ml.validator.checks.attributes` (attribute checks used at every level).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from h5ml.validator.checks.issue import Issue

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.checks.file import METADATA_DONE as METADATA_DONE
    from h5ml.validator.checks.file import check_events as check_events
    from h5ml.validator.checks.file import check_path as check_path
    from h5ml.validator.checks.state import FileState as FileState

__all__ = ["METADATA_DONE", "FileState", "Issue", "check_events", "check_path"]

#: Imported on first use (issue 15): a process that only receives issues (the CLI's parent, whose child runs
#: the checks) needs :class:`Issue`, not the checks, which import h5py and jsonschema (about 0.13 s).
_LAZY = {
    "METADATA_DONE": "h5ml.validator.checks.file",
    "check_events": "h5ml.validator.checks.file",
    "check_path": "h5ml.validator.checks.file",
    "FileState": "h5ml.validator.checks.state",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'h5ml.validator.checks' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
