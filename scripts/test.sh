#!/usr/bin/env bash
# Create the test environment from nothing and run every check CI runs.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=${H5ML_VENV:-.venv}

# Debian packages the tests use: h5dump (HDF5 1.10) reads our files independently; espeak-ng speaks
# and sox resamples, mixes and re-encodes the real audio the ingest tests convert.
missing=()
command -v h5dump >/dev/null 2>&1 || missing+=(hdf5-tools)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
command -v sox >/dev/null 2>&1 || missing+=(sox libsox-fmt-base)
# Node.js and npm run h5wasm, an HDF5 reader that is not ours, over the conformance fixtures; npm also fetches
# the official SARIF 2.1.0 schema (tests/sarif) that the SARIF reports of h5ml validate are checked against.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# git: tests/test_precommit_hook.py runs the pre-commit hook in a temporary git repository.
command -v git >/dev/null 2>&1 || missing+=(git)
# Debian's chromium opens the pages of `h5ml report` in tests/test_report_browser.py (driven by Playwright).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# torch: the pinned build first (on the CI machines a CPU build on local disk), so that nothing later pulls a
# multi-GB CUDA build.
"${pip[@]}" "torch==2.13.0"
# The other ~190 pinned packages through uv, which downloads and unpacks them in parallel: 14 s here against
# about 5.5 minutes for pip (measured 2026-12-04 in a new venv with empty caches). uv sees the torch above as
# installed and keeps it.
"${pip[@]}" "uv==0.13.9"
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" -c constraints.txt -e ".[dev]"

export PATH="$PWD/$venv/bin:$PATH"
ruff check .
ruff format --check .
mypy
lint-imports
# Benchmarks run in CI only in their smoke mode: they must run, they measure nothing. Two at a time (about
# 2 minutes one after another); xargs exits non-zero, and so does this script, when any of them fails.
printf '%s\0' benchmarks/bench_*.py |
    xargs -0 -P 2 -I{} sh -c 'python "$1" --smoke >/dev/null || { echo "smoke run failed: python $1 --smoke" >&2; exit 1; }' _ {}
# Two worker processes (pytest-xdist), one per core of the CI machine, which steal queued tests from each other
# when one runs out (the slowest tests take 20-55 s each); pass -n 0 to run in one process.
pytest -n 2 --dist worksteal "$@"
