"""The conformance suite of conformance_tests/ against the reference CLI, called as a third party would call it.

Every run goes through a subprocess with a time limit: the generator's
``--check``, the coverage check, and ``run.py`` driving ``h5ml validate`` and
``h5ml dump`` on the committed fixtures. Nothing here imports the suite's
scripts, and the suite never imports ``h5ml``.

Reference bugs the suite found are listed in :data:`KNOWN_FAILURES`, case by
case: the tests pass while exactly those cases fail, and fail as soon as one
of them passes (remove it from the list then) or another case fails.

Time: the reference CLI checks each file in a fresh child interpreter (SPEC
§10.3), about 0.4 s of CPU per file, so the deep run over the ~200 validator
cases dominates (about 40 s of wall time per 2 CPUs; run.py uses them all).
The shallow run covers the valid files, the unreadable ones, another MAJOR and
W209 with E146 (found from the storage size in both modes); every other case
of mode "any" has the same expectation in both modes and runs in the deep run. The full shallow
run is ``python conformance_tests/run.py validator --mode shallow -- h5ml
validate --format json``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "conformance_tests"
H5ML = shutil.which("h5ml", path=str(Path(sys.executable).parent)) or shutil.which("h5ml") or "h5ml"

#: Cases the reference implementation fails, with the defect (SPEC clause; see the conformance report).
KNOWN_FAILURES: dict[str, str] = {}

#: Optional features the reference implementation supports (h5py always ships the LZF filter).
FEATURES = ["--feature", "filter-32000", "--feature", "float16"]


def _python(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``python <args>`` from the repository root with a time limit; output captured as text."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def _runner(kind: str, options: list[str], command: list[str], results: Path, timeout: float) -> dict[str, Any]:
    """Run ``run.py kind options -- command`` and return its exit status, output and per-case results."""
    proc = _python(str(SUITE / "run.py"), kind, *options, "--results", str(results), "--", *command, timeout=timeout)
    outcome = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {"cases": []}
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "cases": outcome["cases"]}


def _statuses(run: dict[str, Any], status: str) -> set[str]:
    return {case["id"] for case in run["cases"] if case["status"] == status}


def _assert_only_known_failures(run: dict[str, Any], known: set[str]) -> None:
    """The run has no error, and exactly the known reference bugs among the cases it ran fail."""
    ran = {case["id"] for case in run["cases"]}
    assert not _statuses(run, "ERROR"), run["stdout"][-3000:] + run["stderr"][-2000:]
    failed = _statuses(run, "FAIL")
    expected = known & ran
    assert failed == expected, (
        f"unexpected failures: {sorted(failed - expected)}; now passing (remove from KNOWN_FAILURES): "
        f"{sorted(expected - failed)}\n{run['stdout'][-4000:]}"
    )
    assert run["rc"] == (1 if expected else 0), run["stdout"][-2000:]


def test_generator_check_passes() -> None:
    """The committed fixtures, SHA256SUMS, manifest and expected documents are what the recipes describe."""
    proc = _python(str(SUITE / "generate.py"), "--check", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith("0 problem(s)")


def _generator_copy(tmp_path: Path) -> Path:
    """A copy of the generator in ``tmp_path/conformance_tests``: generate.py, __init__.py and the package generator/.

    generate.py imports ``conformance_tests.generator`` from the folder above its own, so the copy's folder keeps
    the suite's name, and the copy works on the files beside it (SPEC.md, when a test needs it, goes in ``tmp_path``).
    """
    suite = tmp_path / "conformance_tests"
    shutil.copytree(SUITE / "generator", suite / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(SUITE / "__init__.py", suite / "__init__.py")
    shutil.copyfile(SUITE / "generate.py", suite / "generate.py")
    return suite


def _foreign_copy(tmp_path: Path) -> Path:
    """A copy of the suite's foreign part (the generator, recipes/foreign.json, its fixtures, SHA256SUMS) to alter."""
    suite = _generator_copy(tmp_path)
    (suite / "recipes").mkdir()
    (suite / "fixtures").mkdir()
    shutil.copyfile(SUITE / "SHA256SUMS", suite / "SHA256SUMS")
    shutil.copyfile(SUITE / "recipes" / "foreign.json", suite / "recipes" / "foreign.json")
    for recipe in json.loads((SUITE / "recipes" / "foreign.json").read_text(encoding="utf-8"))["recipes"]:
        shutil.copyfile(SUITE / "fixtures" / f"{recipe['id']}.h5", suite / "fixtures" / f"{recipe['id']}.h5")
    return suite


def _check_foreign(suite: Path) -> subprocess.CompletedProcess[str]:
    """``generate.py --check recipes/foreign.json`` in the copy: only the five foreign fixtures are checked."""
    return _python(str(suite / "generate.py"), "--check", str(suite / "recipes" / "foreign.json"), timeout=120)


def _expected_object(doc: dict[str, Any], rid: str, path: str) -> dict[str, Any]:
    """The object at ``path`` that foreign recipe ``rid`` expects (``raw.foreign.expect.objects``)."""
    recipe = next(r for r in doc["recipes"] if r["id"] == rid)
    found: dict[str, Any] = next(o for o in recipe["raw"]["foreign"]["expect"]["objects"] if o["path"] == path)
    return found


def _wrong_value(doc: dict[str, Any]) -> None:
    _expected_object(doc, "foreign-matlab-v73", "/x")["values"][1][0] = 1.25  # the file holds 1.0


def _wrong_members(doc: dict[str, Any]) -> None:
    _expected_object(doc, "foreign-anndata", "/obs/cell_type")["members"].append("ordered")  # an attribute there


def _absent_but_present(doc: dict[str, Any]) -> None:
    _expected_object(doc, "foreign-netcdf4", "/")["attrs_absent"].append("Conventions")


def _wrong_attribute(doc: dict[str, Any]) -> None:
    _expected_object(doc, "foreign-pandas-table", "/measurements/table")["attrs"]["NROWS"] = 9


def _wrong_userblock(doc: dict[str, Any]) -> None:
    recipe = next(r for r in doc["recipes"] if r["id"] == "foreign-matlab-v73")
    recipe["raw"]["foreign"]["expect"]["userblock"]["bytes"][1]["hex"] = "00000000000000000002" + "4d49"


@pytest.mark.parametrize(
    ("alter", "missing", "line"),
    [
        pytest.param(
            _wrong_value,
            None,
            "FAIL foreign-matlab-v73: /x: value differs from the recipe at [1][0]: 1.0, not 1.25",
            id="value",
        ),
        pytest.param(
            _wrong_members,
            None,
            "FAIL foreign-anndata: /obs/cell_type: members ['categories', 'codes'], not ['categories', 'codes', 'ordered']",
            id="members",
        ),
        pytest.param(
            _absent_but_present,
            None,
            "FAIL foreign-netcdf4: /@Conventions: present, but the recipe says the file has no such attribute",
            id="attribute-listed-absent",
        ),
        pytest.param(
            _wrong_attribute,
            None,
            "FAIL foreign-pandas-table: /measurements/table@NROWS: value differs from the recipe at the top: 8, not 9",
            id="attribute-value",
        ),
        pytest.param(
            _wrong_userblock,
            None,
            "FAIL foreign-matlab-v73: user block bytes at 116: b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02IM', "
            "not b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02MI'",
            id="user-block",
        ),
        pytest.param(
            None,
            "foreign-keras-legacy",
            "FAIL foreign-keras-legacy: fixture foreign-keras-legacy.h5 is missing; make it with "
            "conformance_tests/foreign/make_foreign.py in a virtual environment with "
            "conformance_tests/foreign/requirements.txt (see its docstring)",
            id="missing-fixture",
        ),
    ],
)
def test_generator_check_reports_foreign_files_that_differ_from_their_recipe(
    tmp_path: Path, alter: Callable[[dict[str, Any]], None] | None, missing: str | None, line: str
) -> None:
    """generate.py --check compares each foreign fixture with what its recipe lists (raw.foreign.expect): one
    wrong expectation, or a missing file, is one problem, named with the fixture, the object and both values."""
    suite = _foreign_copy(tmp_path)
    recipes = suite / "recipes" / "foreign.json"
    doc = json.loads(recipes.read_text(encoding="utf-8"))
    if alter is not None:
        alter(doc)
        recipes.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    if missing is not None:
        (suite / "fixtures" / f"{missing}.h5").unlink()
    proc = _check_foreign(suite)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [line, proc.stdout.splitlines()[-1]], proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("FAILED: 5 fixtures of foreign.json (")
    assert proc.stdout.rstrip().endswith(", 1 problem(s)")


def test_generator_check_of_the_unaltered_foreign_copy_passes(tmp_path: Path) -> None:
    """The copy the tests above alter passes as it is, so each of their failures comes from the alteration alone."""
    proc = _check_foreign(_foreign_copy(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK: 5 fixtures of foreign.json (manifest.json and expected/ not checked")


def test_generator_refuses_a_filter_that_was_skipped(tmp_path: Path) -> None:
    """A recipe whose storage says ``expect_filtered`` fails to build, and a fixture fails ``--check``, when HDF5
    stored a chunk without its optional LZF filter (filter mask 1: 16 bytes that LZF does not shrink)."""
    suite = _generator_copy(tmp_path)
    (suite / "recipes").mkdir()
    shutil.copyfile(ROOT / "SPEC.md", tmp_path / "SPEC.md")  # the manifest's registry comes from it
    storage: dict[str, Any] = {"filters": ["lzf"]}
    feature = {"encoding": "dense", "dtype": "<f4", "values": [[1.0, 2.0], [3.0, 4.0]], "storage": storage}
    recipe = {
        "id": "lzf-raw-chunk",
        "description": "LZF on data it does not shrink.",
        "root": {"attrs": {"required_filters": [32000]}},
        "splits": {"train": {"features": {"x": feature}}},
        "cases": [{"valid": True, "level": "filter-32000", "clause": "§3.5", "description": "LZF declared."}],
    }
    recipes = suite / "recipes" / "lzf.json"

    def write_recipes() -> None:
        recipes.write_text(json.dumps({"description": "one recipe", "recipes": [recipe]}), encoding="utf-8")

    write_recipes()
    built = _python(str(suite / "generate.py"), str(recipes), timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    storage["expect_filtered"] = True
    write_recipes()
    problem = (
        "/train/x: chunk 0 (at (0, 0)) has filter mask 0x1: filter 32000 (lzf) was skipped and the chunk is stored "
        "as it is, but the storage says 'expect_filtered'; give the dataset data that every filter shrinks"
    )
    checked = _python(str(suite / "generate.py"), "--check", str(recipes), timeout=120)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.startswith(f"FAIL lzf-raw-chunk: {problem}"), checked.stdout
    rebuilt = _python(str(suite / "generate.py"), str(recipes), timeout=120)
    assert rebuilt.returncode == 2, rebuilt.stdout + rebuilt.stderr
    assert rebuilt.stderr.startswith(f"recipe error: lzf-raw-chunk: {problem}"), rebuilt.stderr


def test_manifest_follows_its_schema() -> None:
    """manifest.json satisfies schema/h5ml-manifest-1.0.schema.json, and its registry is SPEC §9.2's."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "schema" / "h5ml-manifest-1.0.schema.json").read_text(encoding="utf-8"))
    manifest = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(manifest)]
    assert errors == []
    from h5ml.spec.codes import CODES  # the registry the SPEC table is generated from

    assert set(manifest["registry"]) == set(CODES)
    ids = [case["id"] for case in manifest["cases"]]
    assert len(ids) == len(set(ids))


def test_suite_stays_small() -> None:
    """The whole suite (fixtures, expectations, recipes, scripts) stays under 5.2 MB (what npm installs aside): 4.6 MB
    with the 263 cases of SPEC 1.1, 4.9 MB with the 275 of SPEC 1.2 (12 sharded datasets, 38 KB each), 5.0 MB with
    the 285 of later 1.2 (a case's fixture takes about 10 KB)."""
    installed = {"__pycache__", "node_modules"}
    total = sum(p.stat().st_size for p in SUITE.rglob("*") if p.is_file() and not installed & set(p.parts))
    assert total < 5_200_000, total


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="h5dump (Debian hdf5-tools, HDF5 1.10) is not installed")
def test_valid_fixtures_open_in_hdf5_1_10() -> None:
    """§3.1: every valid fixture opens in HDF5 1.10 (h5dump -H reads every object header and attribute)."""
    version = subprocess.run(["h5dump", "--version"], capture_output=True, text=True, timeout=30, check=False)
    manifest = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))
    valid = sorted({case["file"] for case in manifest["cases"] if case["valid"] and "dataset" not in case})
    for case in manifest["cases"]:  # SPEC §12: a sharded dataset's HDF5 files are its shards
        if case["valid"] and "dataset" in case:
            valid += sorted(p.relative_to(SUITE).as_posix() for p in (SUITE / case["dataset"]).rglob("*.h5"))
    failed = []
    for name in valid:
        proc = subprocess.run(
            ["h5dump", "-H", str(SUITE / name)], capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0:
            failed.append(f"{name}: {proc.stderr.strip()[-300:]}")
    assert failed == [], f"{version.stdout.strip()}: {failed}"


def test_coverage_of_spec_requirements() -> None:
    """Every [file] and [validator] MUST of SPEC.md has a case; every [writer]/[reader] MUST a test."""
    proc = _python(str(SUITE / "coverage.py"), "--failed", timeout=60)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"OK: (\d+)/\1 requirements covered", proc.stdout), proc.stdout[-1000:]


def test_appendix_b_example_is_the_expected_document() -> None:
    """The reader expectation of the Appendix B fixture is the example printed in SPEC.md Appendix B."""
    spec = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    appendix = spec[spec.index("## Appendix B") :]
    example = re.findall(r"```json\n(.*?)```", appendix, re.DOTALL)[-1]
    expected = json.loads((SUITE / "expected" / "valid-appendix-b.json").read_text(encoding="utf-8"))
    assert json.loads(example) == expected


@pytest.mark.slow
def test_reference_validator_passes_in_deep_mode(tmp_path: Path) -> None:
    """``h5ml validate --format json --deep`` through run.py: every applicable case passes but the known bugs.

    SPEC §9.1.1-R1 (every error in deep mode), SPEC §9.1.1-R3 and SPEC §9.1.1-R4 (run.py fails an unexpected
    error and a fixture that changed), SPEC §9.3-R1 and SPEC §9.3.2-R1 (run.py checks report and exit status).
    """
    command = [H5ML, "validate", "--format", "json", "--deep"]
    run = _runner("validator", ["--batch", "25", *FEATURES], command, tmp_path / "deep.json", timeout=900)
    assert len(run["cases"]) >= 190
    _assert_only_known_failures(run, set(KNOWN_FAILURES))


@pytest.mark.slow
def test_reference_validator_passes_in_shallow_mode(tmp_path: Path) -> None:
    """``h5ml validate --format json`` (shallow) on the valid files, unreadable files, another MAJOR, and W209.

    SPEC §9.1.1-R2: the errors that are not deep, in shallow mode.
    """
    command = [H5ML, "validate", "--format", "json"]
    selection = ["--case", "valid-*", "--case", "w209-*", "--case", "e100-*", "--case", "e104-*"]
    options = ["--mode", "shallow", "--batch", "25", *selection, *FEATURES]
    run = _runner("validator", options, command, tmp_path / "shallow.json", timeout=600)
    assert "w209-large-contiguous" in _statuses(run, "PASS")
    _assert_only_known_failures(run, set(KNOWN_FAILURES))


@pytest.mark.slow
def test_reference_reader_passes(tmp_path: Path) -> None:
    """``h5ml dump --format json`` decodes every valid fixture to its expected document and refuses the rest."""
    run = _runner("reader", FEATURES, [H5ML, "dump", "--format", "json"], tmp_path / "reader.json", timeout=600)
    assert len(_statuses(run, "PASS")) >= 40
    _assert_only_known_failures(run, set())


def test_a_validator_that_finds_nothing_fails(tmp_path: Path) -> None:
    """A fake validator that reports every file valid without issues makes run.py exit 1."""
    fake = tmp_path / "fake_validator.py"
    fake.write_text(
        "import json, sys\n"
        "files = [{'path': p, 'readable': True, 'valid': True, 'format_version': '1.0', 'issues': []}"
        " for p in sys.argv[1:]]\n"
        "print(json.dumps({'report_version': '1.0', 'tool': {'name': 'fake', 'version': '0'}, 'files': files}))\n",
        encoding="utf-8",
    )
    run = _runner("validator", ["--batch", "50"], [sys.executable, str(fake)], tmp_path / "fake.json", timeout=300)
    assert run["rc"] == 1, run["stdout"][-2000:]
    manifest = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))
    invalid = {c["id"] for c in manifest["cases"] if not c["valid"] and c["mode"] != "shallow" and c["level"] == "core"}
    assert invalid <= _statuses(run, "FAIL")


def test_a_reader_that_decodes_nothing_fails(tmp_path: Path) -> None:
    """A fake reader that prints an empty document for every file fails the reader cases."""
    fake = tmp_path / "fake_reader.py"
    fake.write_text("print('{}')\n", encoding="utf-8")
    run = _runner("reader", [], [sys.executable, str(fake)], tmp_path / "fake.json", timeout=300)
    assert run["rc"] == 1 and len(_statuses(run, "FAIL")) >= 40


def test_reader_never_deserialises_file_content_with_code() -> None:
    """§10.2: no module of the reference package calls pickle, marshal, eval, exec, YAML loaders, or numpy.load with pickles.

    SPEC §10.2-R1, read from the source; tests/test_security.py shows it on a real file.

    (The sandbox exchanges pickled messages with its own child process through
    multiprocessing connections; that is not file content and is not such a call.)
    """
    banned = {
        ("pickle", "load"),
        ("pickle", "loads"),
        ("marshal", "load"),
        ("marshal", "loads"),
        ("yaml", "load"),
        ("yaml", "unsafe_load"),
        ("yaml", "full_load"),
        ("shelve", "open"),
    }
    found = []
    for path in sorted((ROOT / "reference" / "h5ml").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("eval", "exec"):
                found.append(f"{path.name}:{node.lineno} {func.id}")
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                if (func.value.id, func.attr) in banned:
                    found.append(f"{path.name}:{node.lineno} {func.value.id}.{func.attr}")
                allow = [k.value for k in node.keywords if k.arg == "allow_pickle"]
                unsafe = any(not (isinstance(v, ast.Constant) and v.value is False) for v in allow)
                if func.attr == "load" and func.value.id in ("np", "numpy") and unsafe:
                    found.append(f"{path.name}:{node.lineno} numpy.load(allow_pickle=...)")
    assert found == []


@pytest.mark.parametrize(
    ("splits", "match"),
    [
        ({"train": {"a/b": np.zeros(2)}}, "invalid"),
        ({"train": {"x": ["fine", "nul\x00inside"]}}, "NUL"),
        ({"train": {"x": np.zeros(2, np.complex64)}}, "encoding"),
    ],
)
def test_writer_refuses_what_the_format_cannot_hold(tmp_path: Path, splits: dict[str, Any], match: str) -> None:
    """§2.2: asked to store what h5ml cannot hold, the reference writer raises and leaves no file behind."""
    # SPEC §2.2-R1; the NUL case: SPEC §3.4-R5
    from h5ml import write
    from h5ml.errors import H5MLError

    target = tmp_path / "refused.h5"
    with pytest.raises(H5MLError, match=match):
        write(target, splits)
    assert not target.exists()
    assert os.listdir(tmp_path) == []
