#!/usr/bin/env bash
# Build benchmarks/.venv-peers: the environment in which bench_peers.py runs
# against every peer. The peers never enter the test environment (.venv).
#
#   bash benchmarks/peers_env.sh          # create or update the venv
#   benchmarks/.venv-peers/bin/python benchmarks/bench_peers.py
#
# Order matters:
# 1. torch==2.13.0 first, the CPU build (a wheel on local disk on the team's
#    machines; an unpinned torch from the index pulls a multi-GB CUDA build).
# 2. h5ml itself, editable, with the extras the benchmark reads through
#    (torch, keras, hf) plus hdf5plugin / zstandard for the zstd filter.
# 3. the peers, each under pins taken from the repository's constraints.txt
#    (the versions the test suite was checked with) for torch, numpy, h5py,
#    keras, datasets, huggingface_hub and fsspec, so that no peer can silently
#    replace them. Not the whole constraints.txt: its python-dateutil 4 cannot
#    meet botocore's <3 (litdata needs boto3), and pip then backtracks for
#    many minutes (measured: over 10 minutes, stopped). A peer whose declared requirements conflict with
#    the pinned torch is installed with --no-deps and its real run-time
#    dependencies are listed by hand below (NO_DEPS_PEERS); edit that list,
#    not the pin, when a peer release changes them.
# A peer that fails to install is reported and skipped; bench_peers.py then
# reports its readers as "not installed".
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$here/.venv-peers"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null || py=python3

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
pip="$venv/bin/python -m pip"
$pip install -q --upgrade pip wheel >/dev/null

pin="$venv/pins.txt"
grep -iE '^(torch|numpy|h5py|keras|datasets|huggingface_hub|fsspec)==' "$root/constraints.txt" > "$pin"

$pip install -q "torch==2.13.0" || { echo "peers_env: torch 2.13.0 (CPU) failed to install" >&2; exit 1; }
$pip install -q -c "$root/constraints.txt" -e "$root[torch,keras,hf]" hdf5plugin zstandard deflate isal \
    || { echo "peers_env: h5ml failed to install" >&2; exit 1; }
# The plot and the workloads' sources (scikit-learn and scikit-image photographs).
$pip install -q -c "$pin" matplotlib scikit-learn scikit-image

# Peers installed with their dependencies, torch held by the pin.
PEERS="zarr>=3 webdataset h5torch litdata"
# Peers whose requirements pin another torch or pull heavy extras: installed
# without dependencies, then their real run-time needs by hand.
#   mosaicml-streaming 0.13 declares numpy<2.2 and transformers<5, and that
#   transformers pins huggingface-hub<1, which breaks datasets 5 (measured:
#   pip downgraded numpy to 2.1.3 and huggingface-hub to 0.36.2). Its reader
#   of local MDS shards needs only these at run time (the cloud SDKs it
#   declares are imported only for remote shards):
NO_DEPS_PEERS="mosaicml-streaming"
NO_DEPS_NEEDS="brotli python-snappy zstd xxhash tqdm catalogue"  # and transformers, torchvision: see below

failed=""
for p in $PEERS; do
    $pip install -q -c "$pin" "$p" || { echo "peers_env: $p failed with deps; trying --no-deps" >&2; $pip install -q --no-deps "$p" || failed="$failed $p"; }
done
for p in $NO_DEPS_PEERS; do
    $pip install -q --no-deps "$p" || failed="$failed $p"
    for d in $NO_DEPS_NEEDS; do $pip install -q -c "$pin" "$d" || echo "peers_env: $d for $p not installed" >&2; done
done
# torchvision (declared by litdata and mosaicml-streaming) comes from PyPI built
# for the CUDA torch: against the CPU torch its import fails ("operator
# torchvision::nms does not exist", measured), and transformers imports it.
# litdata runs without it; mosaicml-streaming 0.13 imports it in
# streaming/vision at "import streaming", so MDS is reported "not installed:
# ... fails to import" until a CPU torchvision is available here.
$pip uninstall -q -y torchvision transformers 2>/dev/null
"$venv/bin/python" -m pip check >&2 || echo "peers_env: pip check reports the conflicts above (mosaicml-streaming's declared bounds are expected)" >&2
"$venv/bin/python" -c "import torch, sys; v=torch.__version__; sys.exit(0 if v.startswith('2.13.0') else 'peers_env: torch was replaced: ' + v)" || exit 1
[ -z "$failed" ] || echo "peers_env: not installed:$failed (bench_peers.py reports them as not installed)" >&2
echo "peers_env: ready: $venv"
