"""What ``h5ml verify`` found: :class:`FeatureCheck` per feature, :class:`VerifyReport` per file, and its JSON (§8).

The JSON document is ``schema/h5ml-verify-1.0.schema.json``; the statuses:

==============  ===================================================================
``ok``          the fingerprint computed from the data equals the stored one
``differs``     it does not, or a chunk's stored bytes do not have the CRC32C its
                checksum dataset records (§8.4): the data changed after the file
                was written (even when the fingerprint could not be computed)
``unverified``  no fingerprint could be compared: none is stored, or the data
                cannot be read, or a checksum dataset is malformed (E163) so its
                chunks could not be checked (``reason`` says which)
==============  ===================================================================

Each feature also says what its chunk checksums showed (§8.4,
:attr:`FeatureCheck.checksum_status`): ``ok`` (every dataset of the feature has
a checksum dataset and every chunk matches), ``partial`` (the datasets that
have one match; the others have none), ``differs``, ``malformed``, ``absent``
(no checksum dataset: a file written with ``checksums=False``, or a 1.0 file;
not an error), ``skipped`` (``checksums=False``, ``--no-checksums``) or
``unchecked`` (the feature could not be read, or its stored bytes not reached).

A file verifies (:attr:`VerifyReport.ok`) when every feature is ``ok`` and
the file fingerprint, when the root stores one, equals the one computed from
the features (§8.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from h5ml._version import __version__
from h5ml.model.checksums import ChecksumMismatch

__all__ = [
    "CHECKSUM_STATUSES",
    "DIFFERS",
    "OK",
    "UNVERIFIED",
    "VERIFY_REPORT_VERSION",
    "VERIFY_SCHEMA",
    "FeatureCheck",
    "VerifyReport",
]

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
#: What a feature's chunk checksums showed (§8.4), :attr:`FeatureCheck.checksum_status`.
CHECKSUM_STATUSES: Final = ("ok", "partial", "differs", "malformed", "absent", "skipped", "unchecked")


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
        Why the feature is unverified, or why its fingerprint could not be computed when a chunk checksum
        differs (None otherwise): the reader's error, "no fingerprint stored", a malformed checksum dataset.
    stored_bytes
        The bytes of its datasets as stored in the file.
    checksummed
        The HDF5 paths of its datasets whose chunk checksums were compared (§8.4-R2).
    unprotected
        The HDF5 paths of its datasets that have no checksum dataset (not an error: checksums are optional).
    mismatches
        Every chunk (or block) whose stored bytes do not have the recorded CRC32C (E162), in dataset then
        entry order: dataset path, entry, expected and computed CRC32C, rows.
    malformed
        ``(checksum dataset path, what is wrong)`` for each malformed checksum dataset (E163): its chunks
        are not compared.
    contiguous
        The HDF5 paths, among ``checksummed``, of contiguous datasets: their entries are blocks of
        :data:`~h5ml.model.checksums.BLOCK_BYTES`, not chunks.
    checksum_step
        ``"done"``: the checksum step ran to its end for this feature; ``"skipped"``: ``checksums=False``;
        ``"unchecked"``: the feature or its stored bytes could not be read (``reason`` says why).
    """

    split: str
    feature: str
    hdf5_path: str
    encoding: str
    expected: str | None
    actual: str | None
    reason: str | None
    stored_bytes: int
    checksummed: tuple[str, ...] = ()
    unprotected: tuple[str, ...] = ()
    mismatches: tuple[ChecksumMismatch, ...] = ()
    malformed: tuple[tuple[str, str], ...] = ()
    contiguous: tuple[str, ...] = ()
    checksum_step: str = "skipped"

    @property
    def status(self) -> str:
        """``"ok"``, ``"differs"`` or ``"unverified"``.

        A checksum mismatch is ``"differs"`` whatever the fingerprint (the stored bytes are not those
        written); a malformed checksum dataset, or a checksum step that could not read the stored bytes,
        leaves the feature ``"unverified"`` unless its fingerprint differs.
        """
        if self.mismatches:
            return DIFFERS
        if self.expected is None or self.actual is None:
            return UNVERIFIED
        if self.expected != self.actual:
            return DIFFERS
        return UNVERIFIED if self.malformed or self.checksum_step == "unchecked" else OK

    @property
    def checksum_status(self) -> str:
        """What its chunk checksums showed: one of :data:`CHECKSUM_STATUSES` (see the module docstring)."""
        if self.mismatches:
            return "differs"
        if self.malformed:
            return "malformed"
        if self.checksum_step != "done":
            return self.checksum_step
        if not self.checksummed:
            return "absent"
        return "partial" if self.unprotected else OK

    @property
    def protected(self) -> bool:
        """Whether at least one of its datasets had its chunk checksums compared."""
        return bool(self.checksummed)

    def checksums_json(self) -> dict[str, Any]:
        """The feature's ``checksums`` member of the JSON document."""
        return {
            "status": self.checksum_status,
            "checksummed": list(self.checksummed),
            "unprotected": list(self.unprotected),
            "mismatches": [
                {"dataset": m.path, "entry": m.entry, "expected": m.expected, "actual": m.actual, "rows": list(m.rows)}
                for m in self.mismatches
            ],
            "malformed": [{"dataset": path, "problem": problem} for path, problem in self.malformed],
        }

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
            "checksums": self.checksums_json(),
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
    checksums
        Whether the chunk checksums were compared (§8.4; ``checksums=False`` skips them).
    """

    path: str
    features: tuple[FeatureCheck, ...]
    file_expected: str | None
    file_actual: str | None
    jobs: int
    seconds: float
    checksums: bool = True

    @property
    def checksummed(self) -> tuple[FeatureCheck, ...]:
        """The features checked by chunk checksums: at least one of their datasets had its checksums compared."""
        return tuple(f for f in self.features if f.protected)

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
            "seconds", "stored_bytes", "checksums": {"compared", "features_checked"},
            "file": {"status", "expected", "actual"}, "features": [...]}``.
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
            "checksums": {"compared": self.checksums, "features_checked": len(self.checksummed)},
            "file": {"status": self.file_status, "expected": self.file_expected, "actual": self.file_actual},
            "features": [f.to_json() for f in self.features],
        }
