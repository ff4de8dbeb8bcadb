"""Exception hierarchy of h5ml.

Every exception raised on purpose by h5ml derives from :class:`H5MLError` and
also from the builtin that best describes it, so ``except KeyError`` and
``except h5ml.H5MLError`` both work. Every class pickles cleanly (it is raised
in DataLoader workers and in the validator's child processes).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ChecksumError",
    "ChecksumsMissingError",
    "ChildDiedError",
    "DeclaredSizeError",
    "EncodingError",
    "FeatureNotFoundError",
    "FileLockedError",
    "ForbiddenStorageError",
    "H5MLError",
    "IncompleteFileError",
    "IngestError",
    "InvalidFileError",
    "MetadataError",
    "NotH5MLError",
    "ParameterError",
    "ShardIndexError",
    "SplitNotFoundError",
    "UnknownEncodingError",
    "UnknownExtensionError",
    "UnsupportedEncodingVersionError",
    "UnsupportedFilterError",
    "UnsupportedVersionError",
    "ValidationTimeoutError",
    "WriterError",
]


class H5MLError(Exception):
    """Base class of every error raised by h5ml on purpose.

    Parameters
    ----------
    message
        What was wrong, where (file and HDF5 path) and what to do.
    path
        The file the error concerns, when there is one.
    hdf5_path
        The HDF5 object path inside the file (``/train/image``), when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None, hdf5_path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.hdf5_path = hdf5_path

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.path, self.hdf5_path, self.__dict__))

    def __str__(self) -> str:
        return self.message


def _rebuild(
    cls: type[H5MLError], message: str, path: str | None, hdf5_path: str | None, state: dict[str, Any]
) -> H5MLError:
    err = cls.__new__(cls)
    H5MLError.__init__(err, message, path=path, hdf5_path=hdf5_path)
    err.__dict__.update(state)
    return err


class NotH5MLError(H5MLError, ValueError):
    """The file is not HDF5, or is HDF5 but not an h5ml file (§4.1)."""


class UnsupportedVersionError(H5MLError, ValueError):
    """The file's ``format_version`` has a MAJOR this implementation does not read (§1.3)."""


class UnknownExtensionError(H5MLError, ValueError):
    """The file lists in ``must_understand`` an extension this reader does not know (§1.5)."""


class UnsupportedFilterError(H5MLError, OSError):
    """A dataset uses an HDF5 filter that this HDF5 build cannot decode (§3.5)."""


class FileLockedError(H5MLError, OSError):
    """HDF5 could not lock a file that had to be opened with its lock (§10.4.1).

    A reader of a complete file never fails on a lock (SPEC §10.4.1-S3): it
    opens the file again without locking. This error is raised only when the
    lock was asked for (``locking=True``, or ``HDF5_USE_FILE_LOCKING`` set to
    ``TRUE``, ``1`` or ``BEST_EFFORT`` in the environment, which HDF5 obeys
    whatever a program asks), and when a file that is not an h5ml file (a
    source to convert), which has no completion marker to tell a finished file
    from one being written, is open for writing in another process. The
    message names the file, who holds the lock and what to do.
    """


class IncompleteFileError(H5MLError, ValueError):
    """The file lacks the completion marker: its writer did not finish (§4.4)."""


class ForbiddenStorageError(H5MLError, PermissionError):
    """An external link, external raw storage or a virtual dataset was found (§3.6, §10)."""


class InvalidFileError(H5MLError, ValueError):
    """The file breaks a MUST of the specification in a way the reader cannot work around."""


class DeclaredSizeError(InvalidFileError):
    """A dataset declares more data than the file stores: its storage is smaller than the least its extent needs (§10.4-R1)."""


class ChecksumError(InvalidFileError):
    """A chunk's stored bytes do not match its checksum (§8.4, E162): the file was damaged after it was written.

    Attributes (besides ``path`` and ``hdf5_path``, the dataset): ``chunk``, the
    entry of the checksum dataset (the chunk's index in row-major order over the
    chunk grid, or the block of a contiguous dataset), and ``expected`` and
    ``actual``, the stored and the computed CRC32C.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        hdf5_path: str | None = None,
        chunk: int = -1,
        expected: int = 0,
        actual: int = 0,
    ) -> None:
        super().__init__(message, path=path, hdf5_path=hdf5_path)
        self.chunk = chunk
        self.expected = expected
        self.actual = actual


class ChecksumsMissingError(H5MLError, ValueError):
    """A verified read (``verify=True``) of a dataset that carries no chunk checksums (§8.4)."""


class MetadataError(H5MLError, ValueError):
    """Metadata does not satisfy the schema (§4). Carries every problem in ``problems``."""

    def __init__(
        self, message: str, *, problems: list[str] | None = None, path: str | None = None, hdf5_path: str | None = None
    ) -> None:
        super().__init__(message, path=path, hdf5_path=hdf5_path)
        self.problems = list(problems or [])


class ShardIndexError(H5MLError, ValueError):
    """The index of a sharded dataset is malformed, or disagrees with its shards (§12)."""


class SplitNotFoundError(H5MLError, KeyError):
    """The requested split does not exist in the file (§5.1)."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.message


class FeatureNotFoundError(H5MLError, KeyError):
    """The requested feature does not exist in the split (§5.2)."""

    def __str__(self) -> str:
        return self.message


class EncodingError(H5MLError, ValueError):
    """A value cannot be stored in, or read from, the requested encoding (§6)."""


class UnsupportedEncodingVersionError(EncodingError):
    """A feature's ``encoding_version`` has a MAJOR this implementation does not read (§6.1, E132).

    SPEC §6.1-R7: such a feature is refused, never left out: asking for it by
    name raises this error, and so does reading every feature of its split
    (``Split.read(features=None)``, ``h5ml dump``, the adapters). Only a
    feature of an unknown *encoding* in a file of a newer format MINOR is
    ignored (§1.4.1).
    """


class UnknownEncodingError(EncodingError):
    """A feature's ``encoding`` is none of those this implementation knows (§6.1; E131, or I301, §1.4.1).

    SPEC §1.4.1-R1: in a file of a newer format MINOR such a feature is an
    unknown object, which readers ignore; in any other file it makes the file
    invalid (E131), and reading every feature of its split raises this error
    instead of leaving the feature out.
    """


class WriterError(H5MLError, RuntimeError):
    """The writer was used wrongly (closed, inconsistent sample counts, ...)."""


class ParameterError(H5MLError, ValueError):
    """A parameter has a value the function does not accept: the message names it (and its CLI option).

    A ``ValueError`` too, as Python's own functions raise for a wrong
    argument. The command line reports it as one line of the user's input;
    any other ``ValueError`` reaching it is a defect of h5ml.
    """


class IngestError(H5MLError, ValueError):
    """A source of a conversion cannot be converted: a file that does not decode, a mismatch, a missing part.

    ``path`` names the source file at fault; the output is left as it was.
    """


class ValidationTimeoutError(H5MLError, TimeoutError):
    """Opening or checking a file took longer than the time limit (§10.3)."""


class ChildDiedError(H5MLError, ChildProcessError):
    """The child process died before sending a result: a crash, a signal, ``os._exit`` (§10.3).

    Raised by :func:`h5ml.validator.sandbox.run_with_timeout`.

    Parameters
    ----------
    message
        What happened (the exit code or the signal's name) and what to do.
    exitcode
        The child's exit code; negative: the number of the signal that killed it.
    path
        The file the error concerns, when there is one.
    hdf5_path
        The HDF5 object path inside the file, when there is one.

    Attributes
    ----------
    exitcode
        The child's exit code; negative: the number of the signal that killed it.
    """

    def __init__(
        self, message: str, *, exitcode: int | None = None, path: str | None = None, hdf5_path: str | None = None
    ) -> None:
        super().__init__(message, path=path, hdf5_path=hdf5_path)
        self.exitcode = exitcode
