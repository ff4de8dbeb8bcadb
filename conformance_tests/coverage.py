#!/usr/bin/env python3
"""Check that every requirement of SPEC.md is named by a case, by the code that enforces it and by a test.

Usage::

    python conformance_tests/coverage.py             # a table of every requirement, then a summary
    python conformance_tests/coverage.py --failed    # only the requirements that are not covered
    python conformance_tests/coverage.py --verbose   # the table with every citation

The script reads SPEC.md and finds every requirement (a sentence with
``MUST``, ``MUST NOT``, ``REQUIRED``, ``SHALL`` or ``SHALL NOT``) and every
recommendation (``SHOULD``, ``RECOMMENDED``) with the tag that follows it, the
conformance class and the id: ``[file §6.3-R2]`` (SPEC §1.7, §1.7.1). It checks
the ids (every tagged sentence has one, of its own clause and kind, none twice)
and that every requirement is named, by its id:

- by a conformance case: the case's ``requirements`` in ``manifest.json``.
  For ``[file]``, one such case is invalid, and for every error code the
  requirement gives, a case naming it expects that code (or allows it, for a
  code no HDF5 library can make required, such as E109). For ``[reader]``, one
  such case has a reader expectation. A ``[validator]`` requirement that
  ``run.py`` checks on every case (:data:`RUNNER_CHECKS`) needs no case;
- by the implementation: a line (a comment or a docstring) of a Python file
  under ``reference/h5ml`` or ``adapters`` (``--code``), at the code that
  enforces it;
- by a test: a test function under ``tests/`` that names it.

It also checks that every id a case, the code or a test names exists, that
every code of the issue registry (SPEC §9.2) is expected by some case, and
that every clause a case cites exists in SPEC.md.

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
    "§9.1.1-R3": "run.py fails a case whose report holds an error the file does not have",
    "§9.1.1-R4": "run.py fails a case whose fixture changed during validation (SHA-256 before and after)",
    "§9.3-R1": "run.py checks every report against schema/h5ml-report-1.0.schema.json and the registry of §9.2",
    "§9.3.2-R1": "run.py checks the exit status of every validator run (2 unreadable, 1 invalid, 0 valid)",
}

_HEADING = re.compile(r"^#{2,4}\s+(?:(§[0-9]+(?:\.[0-9]+)*)|Appendix ([A-Z]))\b")
_INLINE = re.compile(r"^(§[0-9]+(?:\.[0-9]+)+)\s")
_TAG = re.compile(r"(?<!`)\[(file|writer|reader|validator)(?: (§[0-9]+(?:\.[0-9]+)*-[RS][0-9]+))?\](?!`)")
_REQUIREMENT = re.compile(r"\b(?:MUST|REQUIRED|SHALL)\b")
_RECOMMENDATION = re.compile(r"\b(?:SHOULD|RECOMMENDED)\b")
_CODE = re.compile(r"\b([EWI][0-9]{3})\b")
_INLINE_HEADING = re.compile(r"^§[0-9]+(?:\.[0-9]+)+\s+(?:\*\*[^*]+\*\*\s*)?")
_CITED_ID = re.compile(r"§[0-9]+(?:\.[0-9]+)*-[RS][0-9]+(?![0-9])")
_SENTENCE = re.compile(r"(?<=[.:;])\s+(?=[A-Z§`(])")


@dataclass
class Requirement:
    """One tagged requirement or recommendation of SPEC.md."""

    rid: str
    clause: str
    kind: str
    tags: tuple[str, ...]
    text: str
    codes: tuple[str, ...]
    cases: list[str] = field(default_factory=list)
    code_refs: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    covered_by: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ident(self) -> str:
        """The requirement's id as SPEC.md writes it (``§6.3-R2``), or its clause when it has none."""
        return self.rid or f"{self.clause}-?"

    @property
    def covered(self) -> bool:
        """Whether nothing is missing."""
        return not self.missing


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
    """The tagged requirements and recommendations of SPEC.md, in document order, with their ids (SPEC §1.7)."""
    musts: list[Requirement] = []
    shoulds: list[Requirement] = []
    for clause, text in paragraphs(spec_text):
        start = 0
        for m in _TAG.finditer(text):
            segment, tag, rid = text[start : m.start()], m.group(1), m.group(2) or ""
            start = m.end()
            sentences = _SENTENCE.split(segment.strip())
            normative = next((i for i, s in enumerate(sentences) if _REQUIREMENT.search(s)), None)
            if normative is not None:
                body = _INLINE_HEADING.sub("", " ".join(sentences[normative:]))
                musts.append(Requirement(rid, clause, "R", (tag,), body, tuple(_CODE.findall(body))))
                continue
            advice = next((i for i, s in enumerate(sentences) if _RECOMMENDATION.search(s)), None)
            if advice is not None:
                body = _INLINE_HEADING.sub("", " ".join(sentences[advice:]))
                shoulds.append(Requirement(rid, clause, "S", (tag,), body, tuple(_CODE.findall(body))))
    return musts, shoulds


def id_problems(reqs: Sequence[Requirement]) -> list[str]:
    """What is wrong with the ids themselves: missing, of another clause or kind, or given twice."""
    problems: list[str] = []
    seen: set[str] = set()
    for req in reqs:
        if not req.rid:
            problems.append(
                f"{req.clause}: a {'requirement' if req.kind == 'R' else 'recommendation'} has no id: {req.text[:70]}"
            )
            continue
        clause, _, rest = req.rid.partition("-")
        if clause != req.clause or rest[0] != req.kind:
            problems.append(
                f"{req.rid} stands in {req.clause} as a {'requirement' if req.kind == 'R' else 'recommendation'} (ids are {req.clause}-{req.kind}<n>)"
            )
        if req.rid in seen:
            problems.append(f"{req.rid} is given twice")
        seen.add(req.rid)
    return problems


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


def id_pattern(rid: str) -> re.Pattern[str]:
    """A regex that finds the requirement id ``rid`` in text, but not a longer one (§6.3-R2 not in §6.3-R21)."""
    return re.compile(re.escape(rid) + r"(?![0-9])")


@dataclass
class Sources:
    """The Python files in which requirement ids are looked for: the implementation and the tests."""

    code: dict[str, str]
    tests: dict[str, str]

    @classmethod
    def read(cls, code_dirs: Sequence[Path], tests_dir: Path) -> Sources:
        """Every ``*.py`` under ``code_dirs`` and every ``test_*.py`` under ``tests_dir``, by path from the root."""
        code = {
            _relative(path): path.read_text(encoding="utf-8")
            for folder in code_dirs
            for path in sorted(folder.rglob("*.py"))
        }
        tests = {_relative(path): path.read_text(encoding="utf-8") for path in sorted(tests_dir.rglob("test_*.py"))}
        return cls(code, tests)


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def code_citations(sources: Sources, rid: str) -> list[str]:
    """``path:line`` of every line of the implementation that names ``rid`` (a comment or a docstring)."""
    pattern = id_pattern(rid)
    return [
        f"{path}:{number}"
        for path, source in sources.code.items()
        if pattern.search(source)
        for number, line in enumerate(source.splitlines(), start=1)
        if pattern.search(line)
    ]


def test_citations(sources: Sources, rid: str) -> list[str]:
    """``<file>::<test>`` for every test function whose source (decorators included) names ``rid``.

    A file that names the id only outside its test functions (in a module
    docstring or a helper) is listed as the file alone.
    """
    pattern = id_pattern(rid)
    found: list[str] = []
    for path, source in sources.tests.items():
        if not pattern.search(source):
            continue
        lines = source.splitlines()
        hits = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if pattern.search("\n".join(lines[first - 1 : node.end_lineno])):
                    hits.append((first, f"{path}::{node.name}"))
        found += [label for _, label in sorted(hits)] or [path]
    return found


def _brief(items: Sequence[str], limit: int = 3) -> str:
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit})" if len(items) > limit else "")


def assess(reqs: Sequence[Requirement], cases: Sequence[dict[str, Any]], sources: Sources) -> None:
    """Fill in the citations, ``covered_by`` and ``missing`` of every requirement (``kind`` "R").

    A requirement is covered when a conformance case names its id (in the
    case's ``requirements``), a line of the implementation names it, and a test
    names it; and, by its class:

    - ``[file]``: an invalid case names it, and for every error code the
      requirement gives, a case naming it expects that code (or allows it, for
      a code no HDF5 library can make required, such as E109);
    - ``[reader]``: a case naming it has a reader expectation;
    - ``[validator]``: a case names it, or the runner checks it on every case
      (:data:`RUNNER_CHECKS`).
    """
    for req in reqs:
        citing = [c for c in cases if req.rid and req.rid in c.get("requirements", [])]
        req.cases = [c["id"] for c in citing]
        req.code_refs = code_citations(sources, req.rid) if req.rid else []
        req.tests = test_citations(sources, req.rid) if req.rid else []
        tag = req.tags[0]
        if req.rid in RUNNER_CHECKS:
            req.covered_by.append(f"runner: {RUNNER_CHECKS[req.rid]}")
        elif not citing:
            req.missing.append("no conformance case names it")
        if tag == "file" and citing:
            if not any(not c["valid"] for c in citing):
                req.missing.append("no invalid case names it")
            for code in dict.fromkeys(c for c in req.codes if c.startswith("E")):
                if not any(
                    code in {i["code"] for i in c.get("issues", [])} or code in c.get("allowed", []) for c in citing
                ):
                    req.missing.append(f"no case naming it expects {code}")
        if tag == "reader" and citing and not any("reader" in c for c in citing):
            req.missing.append("no case naming it has a reader expectation")
        if citing:
            req.covered_by.append(f"cases {_brief(req.cases)}")
        if req.code_refs:
            req.covered_by.append(f"code {_brief(req.code_refs)}")
        else:
            req.missing.append("no line under reference/ or adapters/ names it")
        if req.tests:
            req.covered_by.append(f"tests {_brief(req.tests)}")
        else:
            req.missing.append("no test under tests/ names it")


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
    parser = argparse.ArgumentParser(description="Check that every requirement of SPEC.md is cited and covered.")
    parser.add_argument("--spec", type=Path, default=ROOT / "SPEC.md", help="the specification (default: ../SPEC.md)")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.json", help="the manifest")
    parser.add_argument("--tests", type=Path, default=ROOT / "tests", help="the project's tests (default: ../tests)")
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="a folder of the implementation (repeatable; default: ../reference/h5ml and ../adapters)",
    )
    parser.add_argument("--failed", action="store_true", help="list only what is not covered")
    parser.add_argument("--verbose", action="store_true", help="list the citations of every requirement")
    args = parser.parse_args(argv)
    spec_text = args.spec.read_text(encoding="utf-8")
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    cases = manifest["cases"]
    musts, shoulds = requirements(spec_text)
    sources = Sources.read(args.code or [ROOT / "reference" / "h5ml", ROOT / "adapters"], args.tests)
    assess(musts, cases, sources)
    problems = 0
    for problem in id_problems([*musts, *shoulds]):
        print(f"MISS {problem}")
        problems += 1
    print(
        "Each requirement of SPEC.md by its id: the conformance cases that name it ('runner': run.py checks it on "
        "every case), the lines of the implementation and the test functions that name it."
    )
    print(f"{'id':<12} {'class':<10} {'cases':>6} {'lines':>5} {'tests':>5}  requirement")
    for req in musts:
        if args.failed and req.covered:
            continue
        status = "" if req.covered else "  MISS"
        named = "runner" if req.rid in RUNNER_CHECKS and not req.cases else str(len(req.cases))
        print(
            f"{req.ident:<12} {req.tags[0]:<10} {named:>6} {len(req.code_refs):>5} {len(req.tests):>5}  "
            f"{req.text[:70]}{status}"
        )
        for item in req.covered_by if args.verbose else []:
            print(f"{'':<13}covered by {item}")
        for item in req.missing:
            print(f"{'':<13}missing: {item}")
    by_class: dict[str, list[Requirement]] = {}
    for req in musts:
        by_class.setdefault(req.tags[0], []).append(req)
    for tag in sorted(by_class):
        done = sum(1 for r in by_class[tag] if r.covered)
        print(f"[{tag}] requirements: {done}/{len(by_class[tag])} covered")
    problems += sum(1 for r in musts if not r.covered)
    known_ids = {r.rid for r in [*musts, *shoulds] if r.rid}
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
        for rid in case.get("requirements", []):
            if rid not in known_ids:
                print(f"MISS case {case['id']} names {rid}, which SPEC.md does not define")
                problems += 1
    for path, source in [*sources.code.items(), *sources.tests.items()]:
        for rid in dict.fromkeys(_CITED_ID.findall(source)):
            if rid not in known_ids:
                print(f"MISS {path} names {rid}, which SPEC.md does not define")
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
        print(f"  note {req.ident}: {req.text[:90]}")
    covered = sum(1 for r in musts if r.covered)
    print(
        f"{'FAILED' if problems else 'OK'}: {covered}/{len(musts)} requirements covered "
        f"(each named by a case, the code and a test), {len(shoulds)} recommendations, {len(cases)} cases"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
