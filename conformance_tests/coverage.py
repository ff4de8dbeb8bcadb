#!/usr/bin/env python3
"""Check that the conformance suite covers every requirement of SPEC.md.

Usage::

    python conformance_tests/coverage.py            # a table of every requirement, then a summary
    python conformance_tests/coverage.py --failed   # only the requirements that are not covered

The script reads SPEC.md, finds every requirement (a sentence with ``MUST``,
``MUST NOT``, ``REQUIRED``, ``SHALL`` or ``SHALL NOT``, SPEC §1.7) with the
conformance tags that follow it and the clause it belongs to, and decides
whether each is covered:

- ``[file]``: some case of ``manifest.json`` cites the clause (as its clause or
  a related one) and, for every error code the requirement names, some case
  citing the clause expects that code (or allows it, for a code no HDF5 library
  can make required, such as E109).
- ``[validator]``: some case cites the clause, or the runner enforces the
  requirement on every case (the report format, exit statuses, not modifying
  the file, no unexpected errors; see :data:`RUNNER_CHECKS`).
- ``[writer]`` and ``[reader]``: the project's own tests test these. The script
  lists the tests under ``tests/`` that cite the clause (by its number, such as
  ``§4.4``) and the reader cases of the manifest that cite it; none is a failure.

It also checks that every code of the issue registry (SPEC §9.2) is expected by
some case, and that every clause a case cites exists in SPEC.md.

Exit status: 0 when everything is covered, 1 otherwise, 2 for a usage error.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Requirements on validators that run.py checks for every case it runs, whatever the case cites.
RUNNER_CHECKS = {
    "§9.1.1": "run.py fails a case whose report holds an error the file does not have, misses an expected one, "
    "or whose fixture changed during validation (SHA-256 before and after)",
    "§9.3": "run.py checks every report against schema/h5ml-report-1.0.schema.json and the registry of §9.2",
    "§9.3.2": "run.py checks the exit status of every validator run (2 unreadable, 1 invalid, 0 valid)",
}

_HEADING = re.compile(r"^#{2,4}\s+(?:(§[0-9]+(?:\.[0-9]+)*)|Appendix ([A-Z]))\b")
_INLINE = re.compile(r"^(§[0-9]+(?:\.[0-9]+)+)\s")
_TAG = re.compile(r"(?<!`)\[(file|writer|reader|validator)\](?!`)")
_REQUIREMENT = re.compile(r"\b(?:MUST|REQUIRED|SHALL)\b")
_RECOMMENDATION = re.compile(r"\b(?:SHOULD|RECOMMENDED)\b")
_CODE = re.compile(r"\b([EWI][0-9]{3})\b")
_SENTENCE = re.compile(r"(?<=[.:;])\s+(?=[A-Z§`(])")


@dataclass
class Requirement:
    """One tagged requirement of SPEC.md."""

    clause: str
    number: int
    tags: tuple[str, ...]
    text: str
    codes: tuple[str, ...]
    covered_by: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ident(self) -> str:
        """A stable name: the clause and the requirement's rank in it."""
        return f"{self.clause}#{self.number}"

    @property
    def covered(self) -> bool:
        """Whether nothing is missing."""
        return not self.missing and bool(self.covered_by)


def paragraphs(spec_text: str) -> Iterator[tuple[str, str]]:
    """``(clause, text)`` for every paragraph of SPEC.md outside code blocks, joined into one line."""
    clause = ""
    lines: list[str] = []
    fenced = False

    def flush() -> Iterator[tuple[str, str]]:
        if lines:
            yield clause, " ".join(line.strip() for line in lines)
            lines.clear()

    for line in spec_text.splitlines():
        if line.startswith("```"):
            yield from flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = _HEADING.match(line)
        if heading:
            yield from flush()
            clause = heading.group(1) or f"§{heading.group(2)}"
            continue
        if not line.strip():
            yield from flush()
            continue
        inline = _INLINE.match(line)
        if inline and not lines:
            clause = inline.group(1)
        lines.append(line)
    yield from flush()


def requirements(spec_text: str) -> tuple[list[Requirement], list[Requirement]]:
    """The tagged requirements and recommendations of SPEC.md, in document order."""
    musts: list[Requirement] = []
    shoulds: list[Requirement] = []
    counters: dict[str, int] = {}
    for clause, text in paragraphs(spec_text):
        start = 0
        pending_tags: list[str] = []
        pieces: list[tuple[str, list[str]]] = []
        for m in _TAG.finditer(text):
            between = text[start : m.start()]
            if between.strip():
                pieces.append((between, [m.group(1)]))
            elif pieces:
                pieces[-1][1].append(m.group(1))  # "[file] [validator]": one more tag for the same sentence
            else:
                pending_tags.append(m.group(1))
            start = m.end()
        for segment, tags in pieces:
            sentences = _SENTENCE.split(segment.strip())
            normative = next((i for i, s in enumerate(sentences) if _REQUIREMENT.search(s)), None)
            if normative is None:
                advice = next((i for i, s in enumerate(sentences) if _RECOMMENDATION.search(s)), None)
                if advice is not None:
                    body = " ".join(sentences[advice:])
                    shoulds.append(Requirement(clause, 0, tuple(tags), body, tuple(_CODE.findall(body))))
                continue
            body = " ".join(sentences[normative:])
            counters[clause] = counters.get(clause, 0) + 1
            musts.append(Requirement(clause, counters[clause], tuple(tags), body, tuple(_CODE.findall(body))))
    return musts, shoulds


def clauses_of(spec_text: str) -> set[str]:
    """Every clause number SPEC.md defines (headings, inline clauses, appendices)."""
    found: set[str] = set()
    for line in spec_text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            found.add(heading.group(1) or f"§{heading.group(2)}")
        inline = _INLINE.match(line)
        if inline:
            found.add(inline.group(1))
    return found


def _clause_pattern(clause: str) -> re.Pattern[str]:
    """A regex that finds ``clause`` in text, but not a sub-clause of it (§4.4 not in §4.4.1)."""
    return re.compile(re.escape(clause) + r"(?![0-9]|\.[0-9])")


def project_tests(tests_dir: Path, clause: str) -> list[str]:
    """``tests/<file>::<test>`` for every test function whose source (decorators included) cites ``clause``.

    A file that cites the clause only outside its test functions (in a module
    docstring or a helper) is listed as ``tests/<file>``.
    """
    pattern = _clause_pattern(clause)
    found: list[str] = []
    for path in sorted(tests_dir.glob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        if not pattern.search(source):
            continue
        lines = source.splitlines()
        hits = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                body = "\n".join(lines[first - 1 : node.end_lineno])
                if pattern.search(body):
                    hits.append((first, f"tests/{path.name}::{node.name}"))
        found += [label for _, label in sorted(hits)] or [f"tests/{path.name}"]
    return found


def cite(case: dict[str, Any], clause: str) -> bool:
    """Whether a case cites ``clause`` as its clause or a related one."""
    return case["clause"] == clause or clause in case.get("related", [])


def assess(musts: Sequence[Requirement], cases: Sequence[dict[str, Any]], tests_dir: Path) -> None:
    """Fill in ``covered_by`` and ``missing`` of every requirement."""
    for req in musts:
        citing = [c for c in cases if cite(c, req.clause)]
        for tag in req.tags:
            if tag == "file":
                errors = [code for code in dict.fromkeys(req.codes) if code.startswith("E")]
                invalid = [c for c in citing if not c["valid"]]
                if not invalid:
                    req.missing.append(f"no invalid case cites {req.clause}")
                for code in errors:
                    expecting = [
                        c["id"]
                        for c in citing
                        if code in {i["code"] for i in c.get("issues", [])} or code in c.get("allowed", [])
                    ]
                    if expecting:
                        req.covered_by.append(
                            f"{code}: {', '.join(expecting[:3])}" + (" ..." if len(expecting) > 3 else "")
                        )
                    else:
                        req.missing.append(f"no case citing {req.clause} expects {code}")
                if invalid and not errors:
                    req.covered_by.append(", ".join(c["id"] for c in invalid[:3]))
            elif tag == "validator":
                if citing:
                    req.covered_by.append(
                        "cases " + ", ".join(c["id"] for c in citing[:3]) + (" ..." if len(citing) > 3 else "")
                    )
                if req.clause in RUNNER_CHECKS:
                    req.covered_by.append(f"runner: {RUNNER_CHECKS[req.clause]}")
                if not citing and req.clause not in RUNNER_CHECKS:
                    req.missing.append(f"no case cites {req.clause}")
            else:
                tests = project_tests(tests_dir, req.clause)
                readers = [
                    c["id"]
                    for c in cases
                    if "reader" in c and (cite(c, req.clause) or c["reader"].get("clause") == req.clause)
                ]
                if tag == "reader" and readers:
                    req.covered_by.append("reader cases " + ", ".join(readers[:3]))
                if tests:
                    req.covered_by.append(
                        "tests " + ", ".join(tests[:4]) + (f" (+{len(tests) - 4})" if len(tests) > 4 else "")
                    )
                if not tests and not (tag == "reader" and readers):
                    req.missing.append(f"no test under tests/ cites {req.clause}")


def code_coverage(
    registry: dict[str, Any], cases: Sequence[dict[str, Any]]
) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """Cases expecting each registry code; codes only allowed (never required); codes no case mentions."""
    expecting: dict[str, list[str]] = {code: [] for code in registry}
    allowed_only: list[str] = []
    for case in cases:
        for issue in case.get("issues", []):
            expecting.setdefault(issue["code"], []).append(case["id"])
    for code in registry:
        if not expecting[code] and any(code in c.get("allowed", []) for c in cases):
            allowed_only.append(code)
    missing = [code for code in registry if not expecting[code] and code not in allowed_only]
    return expecting, allowed_only, missing


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Check that the conformance suite covers every MUST of SPEC.md.")
    parser.add_argument("--spec", type=Path, default=ROOT / "SPEC.md", help="the specification (default: ../SPEC.md)")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.json", help="the manifest")
    parser.add_argument("--tests", type=Path, default=ROOT / "tests", help="the project's tests (default: ../tests)")
    parser.add_argument("--failed", action="store_true", help="list only what is not covered")
    args = parser.parse_args(argv)
    spec_text = args.spec.read_text(encoding="utf-8")
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    cases = manifest["cases"]
    musts, shoulds = requirements(spec_text)
    assess(musts, cases, args.tests)
    problems = 0
    by_class: dict[str, list[Requirement]] = {}
    for req in musts:
        by_class.setdefault("/".join(req.tags), []).append(req)
    for tags in sorted(by_class):
        reqs = by_class[tags]
        done = sum(1 for r in reqs if r.covered)
        print(f"[{tags}] requirements: {done}/{len(reqs)} covered")
        for req in reqs:
            if args.failed and req.covered:
                continue
            status = "ok  " if req.covered else "MISS"
            print(f"  {status} {req.ident:<9} {req.text[:100]}")
            for item in req.covered_by if not args.failed else []:
                print(f"         covered by {item}")
            for item in req.missing:
                print(f"         missing: {item}")
        problems += len(reqs) - done
    known = clauses_of(spec_text)
    for case in cases:
        for clause in [
            case["clause"],
            *case.get("related", []),
            *([case["reader"]["clause"]] if "clause" in case.get("reader", {}) else []),
        ]:
            if clause not in known:
                print(f"MISS case {case['id']} cites {clause}, which SPEC.md does not define")
                problems += 1
    expecting, allowed_only, missing = code_coverage(manifest["registry"], cases)
    print(
        f"issue codes: {len(expecting) - len(missing) - len(allowed_only)}/{len(manifest['registry'])} expected by a case"
    )
    for code in allowed_only:
        print(
            f"  note {code}: only allowed, never required (no HDF5 library opens such a file, so it accompanies E100)"
        )
    for code in missing:
        print(f"  MISS {code}: no case expects it")
    problems += len(missing)
    file_shoulds = [r for r in shoulds if "file" in r.tags]
    warned = {code for code in expecting if code.startswith("W") and expecting[code]}
    untested = [r for r in file_shoulds if r.codes and not set(r.codes) & warned]
    print(
        f"[file] recommendations with a warning code: {len(file_shoulds) - len(untested)}/{len(file_shoulds)} exercised"
    )
    for req in untested:
        print(f"  note {req.clause}: {req.text[:90]}")
    covered = sum(1 for r in musts if r.covered)
    print(f"{'FAILED' if problems else 'OK'}: {covered}/{len(musts)} requirements covered, {len(cases)} cases")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
