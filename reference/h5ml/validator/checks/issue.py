"""The record of one broken rule: :class:`Issue` (SPEC.md §9.1, §9.2).

Every check of :mod:`h5ml.validator.checks` yields issues; :mod:`h5ml.validator.runner`
collects them into reports and re-exports :class:`Issue` as part of its API.
"""

from __future__ import annotations

from dataclasses import dataclass

from h5ml.model.failures import is_library_failure
from h5ml.spec.codes import CODES, Severity

__all__ = ["Issue", "damaged"]


@dataclass(frozen=True)
class Issue:
    """One broken rule found in one file (§9.1, §9.2).

    Attributes
    ----------
    code
        The registry code, such as ``"E106"`` (see :data:`h5ml.spec.codes.CODES`).
    name
        The code's stable snake_case name, such as ``"incomplete"``.
    severity
        error (a MUST broken), warning (a SHOULD) or info.
    path
        HDF5 path of the object concerned; ``"/"`` for the file and its root
        group. Issues about an attribute name it in ``message``.
    message
        What is wrong, where, and what to do.
    clause
        The SPEC clause the code enforces, such as ``"§4.4"``.
    """

    code: str
    name: str
    severity: Severity
    path: str
    message: str
    clause: str

    @classmethod
    def of(cls, code: str, path: str, message: str) -> Issue:
        """Make an issue of a registry code, taking name, severity and clause from the registry (§9.2).

        Parameters
        ----------
        code
            A code of :data:`h5ml.spec.codes.CODES`.
        path
            HDF5 path of the object concerned.
        message
            What is wrong, where, and what to do.

        Returns
        -------
        Issue
            The issue.

        Raises
        ------
        KeyError
            If ``code`` is not in the registry.
        """
        entry = CODES[code]
        return cls(code, entry.name, entry.severity, path, message, entry.clause)

    def to_json(self) -> dict[str, str]:
        """Return the issue as the JSON object of the report format (§9.3).

        Returns
        -------
        dict
            ``code``, ``name``, ``severity``, ``path``, ``message``, ``clause``, all strings.
        """
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
            "clause": self.clause,
        }

    def __str__(self) -> str:
        clause = "" if self.message.endswith(f"({self.clause})") else f" ({self.clause})"
        return f"{self.code} {self.severity.value} {self.path}: {self.message}{clause}"


def damaged(exc: BaseException, path: str, doing: str, what: str | None = None) -> Issue:
    """E101 for the HDF5 library failing while ``doing`` the object at ``path`` (§10.3); the validator's form of
    :func:`h5ml.model.failures.damaged_file`.

    Parameters
    ----------
    exc
        What was caught (one of :data:`h5ml.model.failures.LIBRARY_ERRORS`).
    path
        The HDF5 path of the object.
    doing
        A verb phrase before the path: ``"reading"``, ``"opening"``, ``"listing the members of"``.
    what
        What the message names after ``doing``, when not ``path`` (the file's path for ``"/"``).

    Returns
    -------
    Issue
        ``E101`` at ``path``; its message ends with what to do: the file is damaged, restore it from a good
        copy or write it again.

    Raises
    ------
    Exception
        ``exc`` itself when the library did not raise it (:func:`h5ml.model.failures.is_library_failure`):
        a defect of the validator is never reported as a damaged file.
    """
    if not is_library_failure(exc):
        raise exc  # SPEC §9.1.1-R3: a defect of ours must not become an error of a file that meets the rules
    # SPEC §10.3-R1: every object, attribute and chunk must be readable by HDF5 without error
    return Issue.of(
        "E101",
        path,
        f"the HDF5 library failed while {doing} {what or path}: {exc}; the file is damaged: restore it from a good "
        "copy, or write it again",
    )
