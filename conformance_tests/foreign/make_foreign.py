#!/usr/bin/env python3
"""Make the foreign fixtures of the conformance suite: HDF5 files written by other libraries, not h5ml.

DEV-ONLY. Nothing in the suite, its runner, the tests or CI runs this script:
the files it makes are committed (``fixtures/foreign-*.h5``), and
``generate.py`` only checks them (their SHA-256 sums, and their content
against ``recipes/foreign.json``). Run it only to remake them, for example
when a recipe should describe a newer release of one of the libraries.

Each file is made by the library that owns its format, so that it holds what
that library really writes (its attributes, datatypes and layout), not our
idea of it:

===========================  ===================================================
``foreign-pandas-table.h5``  pandas ``HDFStore.put(..., format="table")`` with PyTables, the call
                             behind ``DataFrame.to_hdf(..., format="table")``
``foreign-keras-legacy.h5``  Keras 3 ``Model.save("model.h5")``: the legacy HDF5 model format
                             (backend JAX)
``foreign-netcdf4.h5``       netCDF4: dimensions, coordinate variables, a variable, attributes
``foreign-anndata.h5``       anndata ``AnnData.write_h5ad``
``foreign-matlab-v73.h5``    hdf5storage ``savemat(..., fmt="7.3")``: a MATLAB v7.3 MAT-file,
                             an HDF5 file behind a 512-byte user block with MATLAB's header text
===========================  ===================================================

The libraries are not dependencies of the project; install the pinned
versions in a separate virtual environment::

    python3.11 -m venv /tmp/venv-foreign
    /tmp/venv-foreign/bin/pip install -r conformance_tests/foreign/requirements.txt
    /tmp/venv-foreign/bin/python conformance_tests/foreign/make_foreign.py
    python conformance_tests/generate.py conformance_tests/recipes/foreign.json   # new sums and manifest
    python conformance_tests/generate.py --check                                   # content vs recipes

The script refuses to run when an installed version differs from
``requirements.txt`` (the recipes name the versions that made each file);
``--allow-other-versions`` makes it go on, after which the recipes'
``made_by`` and expectations must be brought up to date by hand.

Everything is seeded and no file records the time it was made: two runs
with the pinned versions gave byte-identical files. The MATLAB header text
carries a creation date; this script writes the fixed date
``Thu Jan 01 00:00:00 2026`` in its place, in the form MATLAB and hdf5storage
use. Other builds of the libraries or of HDF5 may lay the same content out
differently, which is why ``generate.py --check`` compares content, not bytes.

Usage::

    make_foreign.py [--out DIR] [--only NAME ...] [--allow-other-versions]

Exit status: 0 when every file was made, 1 when making one failed, 2 for a
usage error or a version mismatch.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES_DIR = HERE.parent / "fixtures"
REQUIREMENTS = HERE / "requirements.txt"

#: The fixed creation date written into the MATLAB header text (asctime form, English names, as MATLAB writes it).
MATLAB_DATE = "Thu Jan 01 00:00:00 2026"
#: Bytes of MATLAB's descriptive header text; the subsystem offset, version and endian indicator follow it.
MATLAB_TEXT_BYTES = 116


class MakeError(Exception):
    """A foreign file could not be made as intended."""


# --------------------------------------------------------------------------- the files


def make_pandas_table(target: Path) -> None:
    """A pandas DataFrame stored by PyTables in pandas' "table" format under the key ``measurements``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(20260101)
    frame = pd.DataFrame(
        {
            "sepal_length": rng.normal(5.8, 0.8, 8).round(2),
            "sepal_width": rng.normal(3.0, 0.4, 8).round(2),
            "count": np.arange(8, dtype=np.int64) * 3,
            "species": ["setosa", "versicolor", "virginica", "setosa", "virginica", "setosa", "versicolor", "setosa"],
        },
        index=pd.RangeIndex(100, 108, name="sample"),
    )
    # DataFrame.to_hdf(target, key=..., format="table") is this call without track_times=False, which would
    # store the time of writing in the table's object header.
    with pd.HDFStore(target, mode="w") as store:
        store.put(
            "measurements",
            frame,
            format="table",
            data_columns=["species"],
            index=False,
            complib="zlib",
            complevel=9,
            track_times=False,
        )


def make_keras_legacy(target: Path) -> None:
    """A small compiled Keras model saved in the legacy HDF5 format (``Model.save`` with a ``.h5`` name)."""
    if "keras" in sys.modules and os.environ.get("KERAS_BACKEND") != "jax":
        raise MakeError("keras was imported with another backend before make_keras_legacy; run this script alone")
    os.environ["KERAS_BACKEND"] = "jax"  # recorded in the file's 'backend' attribute, so fixed here
    import keras

    keras.utils.set_random_seed(20260101)
    inputs = keras.Input(shape=(4,), name="features")
    hidden = keras.layers.Dense(3, activation="relu", name="hidden")(inputs)
    outputs = keras.layers.Dense(2, activation="softmax", name="species")(hidden)
    model = keras.Model(inputs, outputs, name="tiny_classifier")
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    if target.suffix != ".h5":
        raise MakeError(f"{target}: Keras chooses the legacy HDF5 format by the name's .h5 suffix")
    model.save(target)


def make_netcdf4(target: Path) -> None:
    """A netCDF-4 file: three dimensions (one unlimited), coordinate variables and one data variable."""
    import netCDF4
    import numpy as np

    rng = np.random.default_rng(20260101)
    with netCDF4.Dataset(target, "w", format="NETCDF4") as nc:
        nc.title = "h5ml conformance suite: a netCDF-4 file"
        nc.Conventions = "CF-1.8"
        nc.createDimension("time", None)
        nc.createDimension("lat", 3)
        nc.createDimension("lon", 4)
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2026-01-01"
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.units = "degrees_east"
        temperature = nc.createVariable("temperature", "f4", ("time", "lat", "lon"), fill_value=-999.0)
        temperature.units = "K"
        temperature.long_name = "air temperature"
        time[:] = np.arange(2, dtype=np.float64)
        lat[:] = np.array([-10.0, 0.0, 10.0], dtype=np.float32)
        lon[:] = np.array([0.0, 90.0, 180.0, 270.0], dtype=np.float32)
        temperature[:] = (280.0 + rng.normal(0.0, 5.0, (2, 3, 4))).round(1).astype(np.float32)


def _object_index(values: list[str]) -> Any:
    """A pandas Index of Python-object strings.

    pandas 3 gives strings its new ``str`` dtype, which anndata 0.12 writes
    only on request (and older anndata cannot read); object strings give
    anndata's long-standing ``string-array`` and ``categorical`` encodings.
    """
    import pandas as pd

    return pd.Index(values, dtype=object)


def make_anndata(target: Path) -> None:
    """A small AnnData object (cells x genes, a categorical observation, an embedding) written with write_h5ad."""
    import anndata
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(20260101)
    cell_type = pd.Categorical.from_codes([0, 2, 2, 1, 0, 2], categories=_object_index(["B", "NK", "T"]))
    obs = pd.DataFrame(
        {"cell_type": cell_type, "n_counts": rng.integers(100, 1000, 6)},
        index=_object_index([f"cell{i}" for i in range(6)]),
    )
    var = pd.DataFrame(
        {"highly_variable": [True, False, True, False, True]}, index=_object_index([f"gene{i}" for i in range(5)])
    )
    adata = anndata.AnnData(X=rng.poisson(2.0, (6, 5)).astype(np.float32), obs=obs, var=var)
    adata.obsm["X_pca"] = rng.normal(0.0, 1.0, (6, 2)).round(3)
    adata.uns["description"] = "h5ml conformance suite: an AnnData file"
    adata.write_h5ad(target)


def make_matlab_v73(target: Path) -> None:
    """A MATLAB v7.3 MAT-file made by hdf5storage, with MATLAB's header text in a 512-byte user block."""
    import hdf5storage
    import numpy as np

    variables = {
        "x": np.array([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]], dtype=np.float64),
        "labels": np.array([1, 2, 1, 3], dtype=np.uint8),
        "name": "iris",
        "meta": {"version": np.float64(2.0), "source": "h5ml"},
    }
    # Without Python metadata the file holds what MATLAB itself writes: MATLAB_class and friends only.
    hdf5storage.savemat(target, variables, appendmat=False, fmt="7.3", store_python_metadata=False)
    data = bytearray(target.read_bytes())
    header = data[:MATLAB_TEXT_BYTES].decode("ascii")
    fixed, count = re.subn(r"Created on: .{24} ", f"Created on: {MATLAB_DATE} ", header)
    if count != 1 or len(fixed) != MATLAB_TEXT_BYTES or not fixed.startswith("MATLAB 7.3 MAT-file"):
        raise MakeError(f"unexpected MATLAB header text {header!r}; update make_matlab_v73 for this hdf5storage")
    data[:MATLAB_TEXT_BYTES] = fixed.encode("ascii")
    target.write_bytes(bytes(data))


#: Every foreign fixture and the function that makes it.
MAKERS: dict[str, Callable[[Path], None]] = {
    "foreign-pandas-table.h5": make_pandas_table,
    "foreign-keras-legacy.h5": make_keras_legacy,
    "foreign-netcdf4.h5": make_netcdf4,
    "foreign-anndata.h5": make_anndata,
    "foreign-matlab-v73.h5": make_matlab_v73,
}


# --------------------------------------------------------------------------- versions


def pinned_versions(path: Path = REQUIREMENTS) -> dict[str, str]:
    """The ``name==version`` pins of requirements.txt (comments and blank lines skipped)."""
    pins: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, sep, version = text.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise MakeError(f"{path}:{number}: {line.strip()!r} is not an exact pin 'name==version'")
        pins[name.strip()] = version.strip()
    return pins


def version_mismatches(pins: dict[str, str]) -> list[str]:
    """One line per pinned package that is missing or installed at another version."""
    problems = []
    for name, want in sorted(pins.items()):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}=={want} is not installed")
            continue
        if have != want:
            problems.append(f"{name} is {have}, requirements.txt pins {want}")
    return problems


# --------------------------------------------------------------------------- command line


def make(name: str, out_dir: Path) -> Path:
    """Make one foreign fixture in ``out_dir`` (written beside it first, then moved into place)."""
    target = out_dir / name
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        scratch = Path(tmp) / name
        MAKERS[name](scratch)
        os.replace(scratch, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=FIXTURES_DIR, help="where to write (default: the fixtures folder)")
    parser.add_argument("--only", action="append", choices=sorted(MAKERS), help="make only this file (repeatable)")
    parser.add_argument(
        "--allow-other-versions",
        action="store_true",
        help="go on when installed versions differ from requirements.txt (then update the recipes by hand)",
    )
    args = parser.parse_args(argv)
    try:
        mismatches = version_mismatches(pinned_versions())
    except MakeError as exc:
        print(f"make_foreign: {exc}", file=sys.stderr)
        return 2
    if mismatches and not args.allow_other_versions:
        for line in mismatches:
            print(f"make_foreign: {line}", file=sys.stderr)
        print(
            f"make_foreign: install the pinned versions (pip install -r {REQUIREMENTS}) in a separate virtual "
            "environment, or pass --allow-other-versions and update recipes/foreign.json to match",
            file=sys.stderr,
        )
        return 2
    if not args.out.is_dir():
        print(
            f"make_foreign: output folder {args.out} does not exist; create it or give another --out", file=sys.stderr
        )
        return 2
    failed = 0
    for name in args.only or list(MAKERS):
        try:
            path = make(name, args.out)
        except Exception as exc:  # report every file, whichever library failed and how
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed += 1
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"made {path} ({path.stat().st_size} bytes, sha256 {digest})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
