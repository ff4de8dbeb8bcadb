"""What ``h5ml verify`` found: :class:`FeatureCheck` per feature, :class:`VerifyReport` per file, and its JSON (§8).

The JSON document is ``schema/h5ml-verify-1.0.schema.json``; the statuses:

==============  ===================================================================
``ok``          the fingerprint computed from the data equals the stored one
``differs``     it does not: the data changed after the file was written
``unverified``  no fingerprint could be compared: none is stored, or the data
                cannot be read (``reason`` says which)
==============  ===================================================================

A file verifies (:attr:`VerifyReport.ok`) when every feature is ``ok`` and
the file fingerprint, when the root stores one, equals the one computed from
the features (§8.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from h5ml._version import __version__

__all__ = ["DIFFERS", "OK", "UNVERIFIED", "VERIFY_REPORT_VERSION", "VERIFY_SCHEMA", "FeatureCheck", "VerifyReport"]

#: The ``$id`` of the JSON document of :meth:`VerifyReport.to_json`.
VERIFY_SCHEMA: Final = "https://h5ml.org/schema/h5ml-verify-1.0.schema.json"
#: The version of the document :meth:`VerifyReport.to_json` writes.
VERIFY_REPORT_VERSION: Final = "1.0"
#: Status: the fingerprints agree.
OK: Final = "ok"
#: Status: the fingerprints differ.
DIFFERS: Final = "differs"
#: Status: no fingerprint could be compared.
UNVERIFIED: Final = "unverified"


@dataclass(frozen=True)
class FeatureCheck:
    """The verification of one feature (§8.1, §8.2).

    Attributes
    ----------
    split, feature
        The split and feature names.
    hdf5_path
        The feature's HDF5 path, ``/<split>/<feature>``.
    encoding
        Its encoding (``""`` when the reader cannot tell).
    expected
        The stored ``fingerprint`` attribute, or None when there is none.
    actual
        The fingerprint computed from the data, or None when it could not be computed.
    reason
        Why the feature is unverified (None otherwise): the reader's error, or "no fingerprint stored".
    stored_bytes
        The bytes of its datasets as stored in the file.
    """

    split: str
    feature: str
    hdf5_path: str
    encoding: str
    expected: str | None
    actual: str | None
    reason: str | None
    stored_bytes: int

    @property
    def status(self) -> str:
        """``"ok"``, ``"differs"`` or ``"unverified"``."""
        if self.expected is None or self.actual is None:
            return UNVERIFIED
        return OK if self.expected == self.actual else DIFFERS

    def to_json(self) -> dict[str, Any]:
        """The feature's entry of the JSON document (``features[]``)."""
        return {
            "split": self.split,
            "feature": self.feature,
            "hdf5_path": self.hdf5_path,
            "encoding": self.encoding,
            "status": self.status,
            "expected": self.expected,
            "actual": self.actual,
            "reason": self.reason,
            "stored_bytes": self.stored_bytes,
        }


@dataclass(frozen=True)
class VerifyReport:
    """The verification of one file: every feature's fingerprint, then the file's (§8).

    Attributes
    ----------
    path
        The file path.
    features
        One :class:`FeatureCheck` per feature, by split then feature in the file's order.
    file_expected
        The root ``fingerprint`` attribute, or None when the root stores none.
    file_actual
        The file fingerprint computed from every feature's (§8.3), or None when a feature's could not be computed.
    jobs
        The threads used.
    seconds
        Wall-clock time of the run.
    """

    path: str
    features: tuple[FeatureCheck, ...]
    file_expected: str | None
    file_actual: str | None
    jobs: int
    seconds: float

    @property
    def differing(self) -> tuple[FeatureCheck, ...]:
        """The features whose fingerprint differs."""
        return tuple(f for f in self.features if f.status == DIFFERS)

    @property
    def unverified(self) -> tuple[FeatureCheck, ...]:
        """The features that could not be verified."""
        return tuple(f for f in self.features if f.status == UNVERIFIED)

    @property
    def file_status(self) -> str:
        """The file fingerprint's status: ``"ok"``, ``"differs"``, ``"unverified"``, or ``"absent"`` (none stored)."""
        if self.file_expected is None:
            return "absent"
        if self.file_actual is None:
            return UNVERIFIED
        return OK if self.file_actual == self.file_expected else DIFFERS

    @property
    def ok(self) -> bool:
        """Whether every feature verified and the file fingerprint, when stored, agrees."""
        return all(f.status == OK for f in self.features) and self.file_status in (OK, "absent")

    @property
    def stored_bytes(self) -> int:
        """The stored bytes of every feature's datasets."""
        return sum(f.stored_bytes for f in self.features)

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``schema/h5ml-verify-1.0.schema.json``.

        Returns
        -------
        dict
            ``{"$schema", "report_version": "1.0", "tool": {"name", "version"}, "path", "ok", "jobs",
            "seconds", "stored_bytes", "file": {"status", "expected", "actual"}, "features": [...]}``.
        """
        return {
            "$schema": VERIFY_SCHEMA,
            "report_version": VERIFY_REPORT_VERSION,
            "tool": {"name": "h5ml", "version": __version__},
            "path": self.path,
            "ok": self.ok,
            "jobs": self.jobs,
            "seconds": round(self.seconds, 6),
            "stored_bytes": self.stored_bytes,
            "file": {"status": self.file_status, "expected": self.file_expected, "actual": self.file_actual},
            "features": [f.to_json() for f in self.features],
        }
