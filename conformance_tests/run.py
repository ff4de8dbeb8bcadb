#!/usr/bin/env python3
"""Run the h5ml conformance suite against a validator or a reader, whatever language it is written in.

Usage::

    python conformance_tests/run.py validator [options] -- COMMAND [ARG...]
    python conformance_tests/run.py reader    [options] -- COMMAND [ARG...]

For every case of ``manifest.json`` that applies, the runner copies the case's
fixture into a fresh temporary folder, runs ``COMMAND ARG... <fixture path>``
(or puts the path where an argument is exactly ``{}``), and compares what the
command prints on standard output with what the case expects:

- ``validator``: the JSON validation report of SPEC §9.3, checked against
  ``schema/h5ml-report-1.0.schema.json`` and the issue registry of §9.2; the
  issues the case lists (code and HDF5 path, never message text), the file's
  ``valid``, ``readable`` and ``format_version``, no error the case does not
  expect, the exit status of §9.3.2, and that the fixture was not modified.
- ``reader``: for a "decode" case, a JSON document in the mapping of SPEC
  Appendix B (what ``h5ml dump --format json`` prints) equal to
  ``expected/<case>.json``, numbers compared by value; for a "refuse" case, a
  non-zero exit status.

Validators are judged by level (``--level errors|warnings|info``, default
``info``: every level; CONTRACT.md §8, ``levels.py``): ``errors`` checks every
expected error, no other error, ``valid``, ``readable``, ``format_version``,
the exit status and the report format; ``warnings`` adds the expected
warnings; ``info`` the expected infos.

It prints one line per case (``PASS``, ``FAIL``, ``ERROR`` or ``SKIP``; a
validator's failure names the first level that failed) and a summary (for
validators, the passes per level), and exits 0 when every case passed at the
level asked, 1 when any failed, 2 when any could not be run (the command was
not found, timed out, died from a signal or printed no JSON) or on a usage
error.

Only the standard library is needed; ``jsonschema``, when installed, checks
reports against the full report schema (otherwise a built-in structural check
is used). CONTRACT.md is the normative contract this runner applies (how the
command is called, what it prints, exit codes, modes, batches, time limits,
optional features, levels); README.md explains the options.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The report format and the validator levels are judged by the modules conformance_tests.report_format and
# conformance_tests.levels beside this script. Run as a program,
# the script puts the folder above the suite first on the module search path (as generate.py does): the
# repository root, or the parent of a copy of the suite (a folder named conformance_tests holding __init__.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance_tests.levels import ERRORS, LEVELS, compare_report, expected_exit_status, first_failure
from conformance_tests.report_format import report_problems, schema_checker

HERE = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HERE / "manifest.json"

PASS, FAIL, ERROR, SKIP = "PASS", "FAIL", "ERROR", "SKIP"
#: How much of a command's standard error a failure message quotes.
_STDERR_TAIL = 400


@dataclass
class Outcome:
    """The result of one case: status, case id, the reasons of a failure or an error, and the level that failed.

    ``level`` is the first validator level (CONTRACT.md §8) the case failed, None when it passed every level
    checked, was skipped, could not run, or is a reader case; each reason of a validator case starts with
    ``level NAME: ``.
    """

    case: str
    status: str
    reasons: list[str] = field(default_factory=list)
    level: str | None = None

    def line(self) -> str:
        """One line of output: ``STATUS id`` and, for anything but a pass, the first reason."""
        text = f"{self.status:<5} {self.case}"
        if self.reasons:
            text += f": {self.reasons[0]}"
            if len(self.reasons) > 1:
                text += f" (+{len(self.reasons) - 1} more)"
        return text


@dataclass
class Run:
    """The completed run of a command on some fixture paths."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    missing: str = ""

    def stderr_tail(self) -> str:
        """The end of standard error, on one line."""
        tail = self.stderr.strip().replace("\n", " | ")
        return tail[-_STDERR_TAIL:] if tail else "(nothing on stderr)"


# --------------------------------------------------------------------------- running commands


def run_command(command: Sequence[str], paths: Sequence[str], timeout: float, cwd: Path) -> Run:
    """Run ``command`` on ``paths`` in its own process group, killing the whole group when the time limit passes."""
    if any(arg == "{}" for arg in command):
        argv = [p for arg in command for p in (paths if arg == "{}" else [arg])]
    else:
        argv = [*command, *paths]
    posix = os.name == "posix"
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=posix,
        )
    except OSError as exc:
        return Run(None, "", "", missing=f"cannot start {argv[0]!r}: {exc.strerror or exc}")

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if posix:
                os.killpg(proc.pid, signal.SIGKILL)  # the command and anything it started
            else:
                proc.kill()

    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill()
        out, err = proc.communicate()
        return Run(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out=True)
    finally:
        if posix:
            kill()  # whatever the command left running in its process group
    return Run(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def _run_error(run: Run, timeout: float) -> str | None:
    """Why a run gave no usable result (None when it ran to its end)."""
    if run.missing:
        return run.missing
    if run.timed_out:
        return f"did not finish within {timeout:g} s (killed)"
    if run.returncode is not None and run.returncode < 0:
        return f"died from signal {-run.returncode}; stderr: {run.stderr_tail()}"
    return None


def sha256(path: Path) -> str:
    """The hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digest(folder: Path) -> str:
    """The SHA-256 of a fixture folder (CONTRACT.md §2.6): of '<sha256>  <relative path>\\n' per file, paths sorted."""
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file())
    return hashlib.sha256("".join(f"{sha256(p)}  {rel}\n" for rel, p in files).encode("utf-8")).hexdigest()


def fixture_digest(case: dict[str, Any], copy: Path) -> str:
    """The digest of a case's copy as the manifest's ``sha256`` gives it: of the file, or of its dataset's folder."""
    if "dataset" not in case:
        return sha256(copy)
    depth = len(Path(case["file"]).relative_to(case["dataset"]).parts)
    return tree_digest(copy.parents[depth - 1])


# --------------------------------------------------------------------------- reader cases


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare_documents(got: Any, want: Any, where: str = "") -> Iterator[str]:
    """Differences between a reader's document and the expected one; numbers compare by value (1 equals 1.0)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            yield f"{where or '/'}: expected an object, got {json.dumps(got)[:60]}"
            return
        for key in sorted(set(want) - set(got)):
            yield f"{where}/{key}: missing"
        for key in sorted(set(got) - set(want)):
            yield f"{where}/{key}: not expected"
        for key in sorted(set(want) & set(got)):
            yield from compare_documents(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list):
        if not isinstance(got, list):
            yield f"{where}: expected an array, got {json.dumps(got)[:60]}"
        elif len(got) != len(want):
            yield f"{where}: {len(got)} entries, expected {len(want)}"
        else:
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                yield from compare_documents(g, w, f"{where}[{i}]")
    elif _is_number(want):
        if not _is_number(got) or got != want:
            yield f"{where}: {json.dumps(got)[:60]}, expected {json.dumps(want)}"
    elif got != want or type(got) is not type(want):
        yield f"{where}: {json.dumps(got, ensure_ascii=False)[:60]}, expected {json.dumps(want, ensure_ascii=False)[:60]}"


# --------------------------------------------------------------------------- the suite


class Suite:
    """The manifest, the selected cases, and how to run one batch of them."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.manifest_path: Path = args.manifest.resolve()
        self.root = self.manifest_path.parent
        self.manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        self.registry: dict[str, Any] = self.manifest.get("registry", {})
        self.features = {"core", *args.feature}
        for path in args.features_file:
            self.features.update(_read_features(path))
        unknown = self.features - set(self.manifest.get("levels", {}))
        if unknown:
            optional = sorted(set(self.manifest.get("levels", {})) - {"core"})
            print(
                f"run.py: unknown feature(s) {sorted(unknown)}; the optional features are {optional}", file=sys.stderr
            )
            raise SystemExit(2)
        self.checker = schema_checker() if args.kind == "validator" else None

    def select(self) -> tuple[list[dict[str, Any]], list[Outcome]]:
        """The cases to run and the outcomes of those skipped (with the reason)."""
        chosen: list[dict[str, Any]] = []
        skipped: list[Outcome] = []
        for case in self.manifest["cases"]:
            if self.args.case and not any(fnmatch.fnmatchcase(case["id"], pat) for pat in self.args.case):
                continue
            if self.args.kind == "reader" and "reader" not in case:
                continue
            if self.args.kind == "validator" and case["mode"] not in ("any", self.args.mode):
                skipped.append(Outcome(case["id"], SKIP, [f"holds in {case['mode']} validation only"]))
                continue
            if case["level"] not in self.features:
                if self.args.kind == "reader" and case["reader"]["expect"] == "decode":
                    # CONTRACT §10.3: a reader without the feature must refuse the file, never return other values
                    chosen.append({**case, "reader": {"expect": "refuse", "without": case["level"]}})
                    continue
                skipped.append(Outcome(case["id"], SKIP, [f"needs the optional feature {case['level']}"]))
                continue
            chosen.append(case)
        if self.args.case and not chosen and not skipped:
            print(f"run.py: no case of the manifest matches --case {' '.join(self.args.case)}", file=sys.stderr)
            raise SystemExit(2)
        return chosen, skipped

    def _prepare(self, case: dict[str, Any], workdir: Path) -> tuple[Path | None, str]:
        """Copy the case's fixture into its own folder; returns the copy, or None and why it cannot run.

        A case with ``dataset`` (a sharded dataset, SPEC §12) copies the whole fixture folder and returns the
        copy of its ``file`` inside it: the index, or a view file beside it (§12.6; CONTRACT.md §2.6).
        """
        source = self.root / case["file"]
        if not source.is_file():
            return None, f"fixture {case['file']} is missing"
        dataset = self.root / case["dataset"] if "dataset" in case else None
        if (tree_digest(dataset) if dataset is not None else sha256(source)) != case["sha256"]:
            return None, f"fixture {case['file']} does not match the manifest's SHA-256 (run generate.py --check)"
        folder = workdir / case["id"]
        folder.mkdir()
        if dataset is not None:
            shutil.copytree(dataset, folder / dataset.name, symlinks=True)
            return folder / dataset.name / source.relative_to(dataset), ""
        target = folder / source.name
        shutil.copyfile(source, target)
        return target, ""

    def run_batch(self, cases: Sequence[dict[str, Any]], workdir: Path) -> list[Outcome]:
        """Run the command once on the fixtures of ``cases`` and judge each case."""
        copies: list[Path] = []
        for case in cases:
            copy, problem = self._prepare(case, workdir)
            if copy is None:
                return [Outcome(c["id"], ERROR, [problem]) for c in cases]
            copies.append(copy)
        timeout = self.args.timeout * len(cases)
        run = run_command(self.args.command, [str(p) for p in copies], timeout, workdir)
        failure = _run_error(run, timeout)
        if failure is not None:
            return [Outcome(c["id"], ERROR, [failure]) for c in cases]
        if self.args.kind == "reader":
            return [self._judge_reader(cases[0], run)]
        return self._judge_validator(cases, copies, run)

    def _judge_validator(self, cases: Sequence[dict[str, Any]], copies: Sequence[Path], run: Run) -> list[Outcome]:
        try:
            report = json.loads(run.stdout)
        except ValueError:
            why = f"no JSON report on stdout (exit {run.returncode}); stderr: {run.stderr_tail()}"
            return [Outcome(c["id"], ERROR, [why]) for c in cases]
        common = report_problems(report, self.checker)
        files = report.get("files") if isinstance(report, dict) else None
        if not isinstance(files, list) or len(files) != len(cases):
            common.append(
                f"the report has {len(files) if isinstance(files, list) else 'no'} file entries for {len(cases)} file(s)"
            )
            files = None
        if not self.args.no_exit_status:
            want = expected_exit_status(cases)
            if run.returncode != want:
                common.append(f"exit status {run.returncode}, SPEC §9.3.2 asks for {want}")
        outcomes = []
        for i, (case, copy) in enumerate(zip(cases, copies, strict=True)):
            levels: dict[str, list[str]] = {}
            general = list(common)  # checks that are not about one issue code belong to the level errors
            if fixture_digest(case, copy) != case["sha256"]:
                general.append("the validator modified the file it checked (SPEC §9.1.1)")
            if files is not None:
                entry = files[i]
                if not isinstance(entry, dict):
                    general.append(f"files[{i}] is not an object")
                else:
                    if entry.get("path") != str(copy):
                        general.append(f"path is {entry.get('path')!r}, not the path given ({copy})")
                    levels = compare_report(case, entry, self.registry)
            levels[ERRORS] = levels.get(ERRORS, []) + general  # the missing or unexpected codes first
            failed, reasons = first_failure(levels, self.args.level)
            outcomes.append(Outcome(case["id"], FAIL if failed else PASS, reasons, failed))
        return outcomes

    def _judge_reader(self, case: dict[str, Any], run: Run) -> Outcome:
        expect = case["reader"]
        if expect["expect"] == "refuse":
            if run.returncode == 0:
                why = (
                    f"without the optional feature {expect['without']} (not declared with --feature) a reader must "
                    "refuse this file, never return other values (CONTRACT.md §10.3)"
                    if "without" in expect
                    else f"SPEC {expect['clause']}"
                )
                return Outcome(case["id"], FAIL, [f"exited 0 on a file it must refuse ({why})"])
            return Outcome(case["id"], PASS)
        if run.returncode != 0:
            return Outcome(
                case["id"], FAIL, [f"refused a valid file (exit {run.returncode}); stderr: {run.stderr_tail()}"]
            )
        try:
            got = json.loads(run.stdout)
        except ValueError:
            return Outcome(case["id"], ERROR, [f"no JSON document on stdout; stderr: {run.stderr_tail()}"])
        want = json.loads((self.root / expect["expected"]).read_text(encoding="utf-8"))
        differences = list(compare_documents(got, want))
        return Outcome(case["id"], FAIL if differences else PASS, differences[:20])


def _read_features(path: Path) -> set[str]:
    """Feature names from a file: a JSON object ``{"features": [...]}`` or one name per line (# comments)."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        return set(json.loads(text).get("features", []))
    return {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}


def run_suite(args: argparse.Namespace) -> int:
    """Run the selected cases in parallel, print one line per case and a summary; return the exit status."""
    suite = Suite(args)
    cases, skipped = suite.select()
    size = args.batch if args.kind == "validator" else 1
    batches = [cases[i : i + size] for i in range(0, len(cases), size)]
    results: dict[str, Outcome] = {o.case: o for o in skipped}
    wanted = {c["id"] for c in cases} | set(results)
    order = [c["id"] for c in suite.manifest["cases"] if c["id"] in wanted]
    position = 0

    def flush() -> None:
        nonlocal position
        while position < len(order) and order[position] in results:
            _print(results[order[position]], args.verbose)
            position += 1

    with tempfile.TemporaryDirectory(prefix="h5ml-conformance-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        workdir = Path(tmp)
        futures: list[Future[list[Outcome]]] = [pool.submit(suite.run_batch, batch, workdir) for batch in batches]
        flush()
        for future in futures:
            for outcome in future.result():
                results[outcome.case] = outcome
            flush()
    counts = {status: sum(1 for o in results.values() if o.status == status) for status in (PASS, FAIL, ERROR, SKIP)}
    unchecked = ", exit status not checked" if args.no_exit_status else ""
    label = f"{args.kind} ({args.mode}, level {args.level}{unchecked})" if args.kind == "validator" else "reader"
    print(
        f"{label}: {len(results)} cases: {counts[PASS]} passed, {counts[FAIL]} failed, "
        f"{counts[ERROR]} errors, {counts[SKIP]} skipped"
    )
    passed_per_level = _passed_per_level(results.values(), args.level) if args.kind == "validator" else {}
    if passed_per_level:
        ran = counts[PASS] + counts[FAIL] + counts[ERROR]
        print("levels: " + ", ".join(f"{level} {n}/{ran} passed" for level, n in passed_per_level.items()))
    if args.results:
        args.results.write_text(
            json.dumps(
                {
                    "kind": args.kind,
                    "mode": args.mode,
                    **(
                        {
                            "level": args.level,
                            "exit_status_checked": not args.no_exit_status,
                            "passed_per_level": passed_per_level,
                        }
                        if args.kind == "validator"
                        else {}
                    ),
                    "command": args.command,
                    "counts": counts,
                    "cases": [
                        {"id": o.case, "status": o.status, "failed_level": o.level, "reasons": o.reasons}
                        for o in results.values()
                    ],
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    if counts[ERROR]:
        return 2
    return 1 if counts[FAIL] else 0


def _passed_per_level(outcomes: Iterable[Outcome], up_to: str) -> dict[str, int]:
    """How many cases that ran pass each level up to ``up_to``: a case that failed at a level passed those before it."""
    checked = LEVELS[: LEVELS.index(up_to) + 1]
    passed = dict.fromkeys(checked, 0)
    for outcome in outcomes:
        if outcome.status not in (PASS, FAIL):
            continue
        for level in checked:
            if outcome.level == level:
                break
            passed[level] += 1
    return passed


def _print(outcome: Outcome, verbose: bool) -> None:
    print(outcome.line(), flush=True)
    if verbose and len(outcome.reasons) > 1:
        for reason in outcome.reasons[1:]:
            print(f"      - {reason}", flush=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``run.py validator|reader [options] -- COMMAND...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        own, command = argv, []
    else:
        split = argv.index("--")
        own, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(
        prog="run.py",
        description="Run the h5ml conformance suite against a validator or reader command.",
        epilog="Example: python run.py validator --mode deep -- h5ml validate --format json --deep",
    )
    parser.add_argument("kind", choices=("validator", "reader"), help="what the command is")
    parser.add_argument(
        "--mode",
        choices=("deep", "shallow"),
        default="deep",
        help="the validation the command does (SPEC §9.1); default: deep",
    )
    parser.add_argument(
        "--level",
        choices=LEVELS,
        default=None,
        help="validator: the conformance level checked (CONTRACT.md §8): errors (every expected error, no other "
        "error), warnings (and every expected warning) or info (and every expected info: the whole case); "
        "default: info",
    )
    parser.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="NAME",
        help="an optional feature the implementation supports (see the manifest's levels); repeatable",
    )
    parser.add_argument(
        "--features-file",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help='a file naming supported features: JSON {"features": [...]} or one per line',
    )
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only the cases whose id matches (fnmatch); repeatable",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once (default: CPUs)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per case (default 60)")
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="validator: fixtures given to one command run (its report lists each); default 1",
    )
    parser.add_argument(
        "--no-exit-status",
        action="store_true",
        help="validator: do not check the exit status of SPEC §9.3.2 (for commands that are not CLIs)",
    )
    parser.add_argument(
        "--manifest", type=Path, default=DEFAULT_MANIFEST, help="the manifest (default: next to run.py)"
    )
    parser.add_argument("--results", type=Path, help="also write every outcome to this JSON file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every reason of a failure")
    args = parser.parse_args(own)
    if not command:
        parser.error("give the command to test after '--'")
    if args.kind == "reader":
        given = [flag for flag, value in (("--level", args.level), ("--batch", args.batch)) if value is not None]
        given += ["--no-exit-status"] if args.no_exit_status else []
        if given:
            parser.error(f"{', '.join(given)}: for validators only; a reader runs one fixture at a time, judged whole")
    args.level = LEVELS[-1] if args.level is None else args.level
    args.batch = 1 if args.batch is None else args.batch
    if args.jobs < 1 or args.batch < 1 or args.timeout <= 0:
        parser.error("--jobs and --batch must be at least 1, --timeout positive")
    args.command = command
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    return run_suite(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
