"""h5ml: a versioned format for machine-learning datasets in HDF5 (reference implementation).

The public API is this namespace (SPEC.md is the format itself)::

    import h5ml
    h5ml.write("digits.h5", {"train": {"image": x, "label": y}}, metadata={"name": "digits"})
    with h5ml.open("digits.h5") as ds:
        batch = ds["train"][[5, 2, 9]]
    report = h5ml.validate("digits.h5")
    assert h5ml.verify("digits.h5").ok  # every fingerprint recomputed from the data

Submodules are imported on first use, so ``import h5ml`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from h5ml._version import __version__
from h5ml.errors import *  # noqa: F403
from h5ml.errors import __all__ as _errors_all

_LAZY = {
    "write": "h5ml.writer",
    "Writer": "h5ml.writer",
    "ShardedWriter": "h5ml.writer",
    "Categorical": "h5ml.model.values",
    "FeatureSpec": "h5ml.model.values",
    "open": "h5ml.reader",
    "Dataset": "h5ml.reader",
    "Split": "h5ml.reader",
    "ShardedDataset": "h5ml.reader",
    "ShardedSplit": "h5ml.reader",
    "Feature": "h5ml.reader",
    "verify": "h5ml.reader",
    "VerifyReport": "h5ml.reader",
    "validate": "h5ml.validator",
    "iter_issues": "h5ml.validator",
    "Issue": "h5ml.validator",
    "Report": "h5ml.validator",
    "FileReport": "h5ml.validator",
    "RootMetadata": "h5ml.model.metadata",
    "CODES": "h5ml.spec.codes",
    "Severity": "h5ml.spec.codes",
}

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.metadata import RootMetadata as RootMetadata
    from h5ml.model.values import Categorical as Categorical
    from h5ml.model.values import FeatureSpec as FeatureSpec
    from h5ml.reader import Dataset as Dataset
    from h5ml.reader import Feature as Feature
    from h5ml.reader import ShardedDataset as ShardedDataset
    from h5ml.reader import ShardedSplit as ShardedSplit
    from h5ml.reader import Split as Split
    from h5ml.reader import VerifyReport as VerifyReport
    from h5ml.reader import open as open
    from h5ml.reader import verify as verify
    from h5ml.spec.codes import CODES as CODES
    from h5ml.spec.codes import Severity as Severity
    from h5ml.validator import FileReport as FileReport
    from h5ml.validator import Issue as Issue
    from h5ml.validator import Report as Report
    from h5ml.validator import iter_issues as iter_issues
    from h5ml.validator import validate as validate
    from h5ml.writer import ShardedWriter as ShardedWriter
    from h5ml.writer import Writer as Writer
    from h5ml.writer import write as write

__all__ = ["__version__", *_errors_all, *_LAZY]


#: Subpackages reachable as attributes (``h5ml.ingest.convert_audio_folder``), imported on first use.
_SUBMODULES = frozenset({"ingest", "model", "reader", "sampling", "spec", "tools", "validator", "writer"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"h5ml.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'h5ml' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
