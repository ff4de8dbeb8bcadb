"""The validator: every requirement of SPEC.md checked, with issue codes, in a time-limited child (§9, §10).

Validating never imports the reader or the writer: it reads files with h5py
itself, so that a defect of the reader cannot hide a defect of a file.
"""

from h5ml.validator.report import DEFAULT_MAX_ISSUES_PER_CODE, REPORT_VERSION, FileReport, Report
from h5ml.validator.runner import Issue, iter_issues, validate, validate_many

__all__ = [
    "DEFAULT_MAX_ISSUES_PER_CODE",
    "REPORT_VERSION",
    "FileReport",
    "Issue",
    "Report",
    "iter_issues",
    "validate",
    "validate_many",
]
