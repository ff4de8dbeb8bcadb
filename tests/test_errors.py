"""The exception hierarchy: one root, builtin mix-ins, clean pickling."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml import errors
from h5ml.model import failures

CASES = [
    (errors.NotH5MLError, ValueError),
    (errors.UnsupportedVersionError, ValueError),
    (errors.UnknownExtensionError, ValueError),
    (errors.UnsupportedFilterError, OSError),
    (errors.IncompleteFileError, ValueError),
    (errors.ParameterError, ValueError),
    (errors.ForbiddenStorageError, PermissionError),
    (errors.InvalidFileError, ValueError),
    (errors.MetadataError, ValueError),
    (errors.SplitNotFoundError, KeyError),
    (errors.FeatureNotFoundError, KeyError),
    (errors.EncodingError, ValueError),
    (errors.WriterError, RuntimeError),
    (errors.ValidationTimeoutError, TimeoutError),
    (errors.ChildDiedError, ChildProcessError),
]


@pytest.mark.parametrize(("cls", "builtin"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_every_error_is_an_h5ml_error_and_its_builtin(cls: type[errors.H5MLError], builtin: type) -> None:
    err = cls("what went wrong", path="/data/x.h5", hdf5_path="/train/image")
    assert isinstance(err, h5ml.H5MLError)
    assert isinstance(err, builtin)
    assert str(err) == "what went wrong"


@pytest.mark.parametrize(("cls", "builtin"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_every_error_survives_pickling(cls: type[errors.H5MLError], builtin: type) -> None:
    err = cls("bad thing", path="/data/x.h5", hdf5_path="/train/image")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (str(back), back.path, back.hdf5_path) == ("bad thing", "/data/x.h5", "/train/image")


def test_metadata_error_keeps_every_problem_through_pickling() -> None:
    err = errors.MetadataError("2 problems", problems=["/created: bad", "/license: bad"])
    back = pickle.loads(pickle.dumps(err))
    assert back.problems == ["/created: bad", "/license: bad"]


def test_all_lists_every_public_class() -> None:
    public = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, errors.H5MLError)}
    assert public == set(errors.__all__)


# -- one contract for the HDF5 library failing on a file (h5ml.model.failures) --------

FIXTURES = Path(__file__).resolve().parents[1] / "conformance_tests" / "fixtures"


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except Exception as exc:
        return exc
    raise AssertionError("nothing was raised")


def test_is_library_failure_tells_h5py_from_our_own_code(tmp_path: Path) -> None:
    """A KeyError, TypeError or ValueError counts only when h5py raised it; OSError, RuntimeError and SystemError
    always (h5py's translations of HDF5's error stack); anything else never."""
    with h5py.File(tmp_path / "k.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(tmp_path / "k.h5", "r") as f:
        by_h5py = _raised(lambda: f["no such object"])
    assert isinstance(by_h5py, KeyError) and failures.is_library_failure(by_h5py)
    ours = _raised(lambda: {}["x"])
    assert isinstance(ours, KeyError) and not failures.is_library_failure(ours)
    assert not failures.is_library_failure(_raised(lambda: np.arange(3).reshape(2)))  # numpy's ValueError
    assert not failures.is_library_failure(_raised(lambda: 1 // 0))
    for exc in (OSError("x"), RuntimeError("x"), SystemError("x")):
        assert failures.is_library_failure(exc)
    assert set(failures.LIBRARY_ERRORS) == {OSError, RuntimeError, SystemError, KeyError, TypeError, ValueError}


def test_a_key_error_of_a_damaged_object_header_is_a_damaged_file_for_reader_and_validator() -> None:
    """§10.3: h5py's KeyError for a damaged root object header: the reader raises an h5ml error naming the file
    and '/', caused by the library's KeyError (never a bare KeyError); the validator reports E101 at '/'."""
    fixture = FIXTURES / "e101-damaged-root-header.h5"
    with pytest.raises(h5ml.NotH5MLError) as raised:
        h5ml.open(fixture)
    damaged = raised.value.__cause__
    assert isinstance(damaged, h5ml.InvalidFileError) and damaged.hdf5_path == "/"
    assert "the HDF5 library failed while reading its attribute 'format'" in str(damaged)
    assert isinstance(damaged.__cause__, KeyError) and failures.is_library_failure(damaged.__cause__)
    report = h5ml.validate(fixture)
    assert [(i.code, i.path) for i in report.issues] == [("E101", "/")] and not report.readable


def test_a_system_error_of_the_library_is_a_damaged_file_for_reader_and_validator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§10.3: h5py reports an exception inside a library callback as SystemError. Opening an object that fails
    so is InvalidFileError for the reader and E101 for the validator, which used to let it escape."""
    path = h5ml.write(tmp_path / "s.h5", {"train": {"x": np.arange(4, dtype="f4")}})
    real_open = h5py.h5o.open

    def failing_open(*args: Any, **kwargs: Any) -> Any:
        name = args[1] if len(args) > 1 else b""
        if name in (b"x", "x"):
            raise SystemError("error return without exception set")
        return real_open(*args, **kwargs)

    monkeypatch.setattr(h5py.h5o, "open", failing_open)
    with pytest.raises(h5ml.InvalidFileError) as raised:
        h5ml.open(path)
    assert raised.value.hdf5_path == "/train/x" and isinstance(raised.value.__cause__, SystemError)
    assert "the HDF5 library failed while opening (SystemError: error return without exception set)" in str(
        raised.value
    )
    codes = [(i.code, i.path) for i in h5ml.validate(path).issues if i.code == "E101"]
    assert codes and all(p.startswith("/train") for _, p in codes)


def _opaque(f: Any, name: str) -> None:
    del f.attrs[name]
    f.attrs[name] = np.void(b"h5ml")


def _compound(f: Any, name: str) -> None:
    del f.attrs[name]
    f.attrs[name] = np.zeros((), [("a", "<i4")])


@pytest.mark.parametrize("kind", [_opaque, _compound], ids=["opaque", "compound"])
@pytest.mark.parametrize("name", ["format", "complete"])
def test_a_header_attribute_outside_the_profile_is_an_invalid_file_everywhere(
    tmp_path: Path, kind: Callable[[Any, str], None], name: str
) -> None:
    """§3.2, §4.1, §4.4: a root 'format' or 'complete' of an opaque or compound type is refused by the reader and
    by append mode with the same h5ml error, and is an issue for the validator (E102, E107 or E113), never a
    TypeError."""
    path = h5ml.write(tmp_path / "o.h5", {"train": {"x": np.arange(3.0)}})
    with h5py.File(path, "r+") as f:
        kind(f, name)
    with pytest.raises(h5ml.H5MLError) as by_reader:
        h5ml.open(path)
    with pytest.raises(h5ml.H5MLError) as by_writer:
        h5ml.Writer(path, mode="a")
    assert type(by_reader.value) is type(by_writer.value)
    assert isinstance(by_reader.value, (h5ml.NotH5MLError, h5ml.InvalidFileError))
    codes = {i.code for i in h5ml.validate(path).issues}
    assert codes & {"E102", "E107", "E113"}, codes  # E113: a datatype outside the profile


def test_a_feature_encoding_outside_the_profile_is_an_issue_not_a_crash(tmp_path: Path) -> None:
    """§3.2, §6.1: an opaque 'encoding' attribute: the validator reports it (no TypeError), the reader refuses the
    feature with an h5ml error."""
    path = h5ml.write(tmp_path / "e.h5", {"train": {"x": np.arange(3.0), "y": np.arange(3)}})
    with h5py.File(path, "r+") as f:
        del f["train/x"].attrs["encoding"]
        f["train/x"].attrs["encoding"] = np.void(b"dense")
    report = h5ml.validate(path)
    assert not report.valid and all(i.path.startswith("/train") for i in report.issues if i.severity.value == "error")
    with h5ml.open(path) as ds, pytest.raises(h5ml.H5MLError):
        ds["train"]["x"]
