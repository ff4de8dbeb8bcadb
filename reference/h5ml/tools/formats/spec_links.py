"""Links into SPEC.md by clause: the ``helpUri`` of each issue code in a SARIF report (§9.2).

The specification is published as one page (SPEC.md, rendered by the
documentation site at :data:`SPEC_URI`); each ``##``/``###`` heading of it
(``### §9.2 Issue-code registry``) has the anchor that GitHub and MkDocs give
it (``92-issue-code-registry``: the heading's text lowercased, what is not a
letter, digit, ``-``, ``_`` or space left out, spaces made ``-``).
:data:`CLAUSE_ANCHORS` lists them; ``tests/test_validate_formats.py`` checks
that it agrees with SPEC.md for every clause the registry names, so that a
renamed heading fails a test instead of a link.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CLAUSE_ANCHORS", "H5ML_URI", "SPEC_URI", "clause_uri"]

#: The project's home page (a SARIF tool's ``informationUri``).
H5ML_URI: Final = "https://h5ml.org/"
#: The specification's page; a clause's link is this URI with the clause's anchor.
SPEC_URI: Final = "https://h5ml.org/spec/"

#: Clause (``"§9.2"``) -> the anchor of its heading in SPEC.md.
CLAUSE_ANCHORS: Final = {
    "§1": "1-status-versioning-and-compatibility",
    "§1.1": "11-status",
    "§1.2": "12-format-version",
    "§1.3": "13-higher-major",
    "§1.4": "14-higher-minor",
    "§1.5": "15-must_understand",
    "§1.6": "16-compatibility-of-minor-releases",
    "§1.7": "17-notation-and-conformance-tags",
    "§2": "2-terminology-and-conformance-classes",
    "§2.1": "21-terminology",
    "§2.2": "22-conformance-classes",
    "§3": "3-hdf5-storage-profile",
    "§3.1": "31-readable-by-hdf5-110",
    "§3.2": "32-datatypes",
    "§3.3": "33-booleans",
    "§3.4": "34-strings",
    "§3.5": "35-filters",
    "§3.6": "36-forbidden-storage",
    "§3.7": "37-scalar-dataspaces",
    "§4": "4-root-attributes",
    "§4.1": "41-format",
    "§4.2": "42-table-of-root-attributes",
    "§4.3": "43-one-attribute-per-item",
    "§4.4": "44-completion-marker",
    "§4.5": "45-large-metadata",
    "§4.6": "46-json-mapping-and-schema",
    "§4.7": "47-user-attributes",
    "§5": "5-layout",
    "§5.1": "51-splits",
    "§5.2": "52-features",
    "§5.3": "53-samples-per-split",
    "§5.4": "54-reserved-names",
    "§5.5": "55-unknown-objects",
    "§6": "6-encodings",
    "§6.1": "61-feature-attributes",
    "§6.2": "62-dense",
    "§6.3": "63-ragged",
    "§6.4": "64-string",
    "§6.5": "65-categorical",
    "§6.6": "66-bytes",
    "§6.7": "67-statistics",
    "§7": "7-chunks",
    "§7.1": "71-chunks-hold-whole-rows",
    "§7.2": "72-rows-per-chunk",
    "§7.3": "73-chunk-size-and-chunk-cache",
    "§7.4": "74-contiguous-and-compact-storage",
    "§7.5": "75-components",
    "§7.6": "76-shuffle-on-write",
    "§8": "8-integrity",
    "§8.1": "81-fingerprint-attributes",
    "§8.2": "82-canonical-bytes-of-a-feature",
    "§8.3": "83-file-fingerprint",
    "§8.4": "84-chunk-checksums-11",
    "§9": "9-validation",
    "§9.1": "91-severities",
    "§9.2": "92-issue-code-registry",
    "§9.3": "93-report",
    "§10": "10-security-considerations",
    "§10.1": "101-external-data",
    "§10.2": "102-content-is-data",
    "§10.3": "103-untrusted-files",
    "§10.4": "104-resource-limits",
    "§11": "11-change-log",
    "§12": "12-sharded-datasets",
    "§12.1": "121-the-index",
    "§12.2": "122-agreement",
    "§12.3": "123-index-fingerprint",
    "§12.4": "124-writing",
    "§12.5": "125-reading-and-sampling",
    "§12.6": "126-view-files",
}


def clause_uri(clause: str) -> str:
    """The link to a clause of SPEC.md: its heading, or the nearest heading above it (§9.3.2 -> §9.3).

    Parameters
    ----------
    clause
        A clause as the registry writes it (``"§4.4"``, ``"§9.3.2"``).

    Returns
    -------
    str
        ``SPEC_URI#<anchor>`` of the clause, of its enclosing section when it has no heading of its own,
        or :data:`SPEC_URI` alone when not even its chapter is known.
    """
    parts = clause.split(".")
    while parts:
        anchor = CLAUSE_ANCHORS.get(".".join(parts))
        if anchor is not None:
            return f"{SPEC_URI}#{anchor}"
        parts.pop()
    return SPEC_URI
