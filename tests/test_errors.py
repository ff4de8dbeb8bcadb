"""The exception hierarchy: one root, builtin mix-ins, clean pickling."""

from __future__ import annotations

import pickle

import pytest

import h5ml
from h5ml import errors

CASES = [
    (errors.NotH5MLError, ValueError),
    (errors.UnsupportedVersionError, ValueError),
    (errors.UnknownExtensionError, ValueError),
    (errors.UnsupportedFilterError, OSError),
    (errors.IncompleteFileError, ValueError),
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
