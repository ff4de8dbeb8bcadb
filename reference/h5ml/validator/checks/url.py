"""Opening a file at a URL for the validator: through fsspec, as :func:`h5ml.open` opens it (§3.1, §9.1.1).

``h5ml validate s3://bucket/ds.h5`` checks the object as a local file is
checked: the validator opens it with the same opener as the reader
(:func:`h5ml.model.remote.open_remote`: read-only, a block cache for HDF5's
metadata), reads its superblock version (E109) and hands the file object to
h5py. A URL that cannot be read (no such object, credentials refused, no
fsspec implementation of its scheme, not HDF5) is E100 with the store's
reason and what to do, never a traceback.
"""

from __future__ import annotations

import h5py

from h5ml import spec
from h5ml.errors import H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.remote import open_remote
from h5ml.validator.checks.state import FileState

__all__ = ["open_url"]


def open_url(state: FileState) -> tuple[int | None, h5py.File | None, str | None]:
    """Open the file at the URL ``state.path``: ``(superblock version, the open file, None)`` or ``(.., None, E100's message)``.

    Sets ``state.file_size`` from the store. SPEC §9.1.1-R4: read-only, always (an fsspec object opened ``"rb"``).
    """
    url = state.path
    try:
        remote = open_remote(url, state.storage_options)
    except (OSError, H5MLError) as exc:
        return None, None, _said(exc)
    state.file_size = remote.size
    try:
        if remote.size == 0:
            raise _Refused(f"{url} is empty (0 bytes): its writer stopped before writing anything; rewrite it")
        version = spec.superblock_version(remote)  # type: ignore[arg-type]
        if version is None:
            raise _Refused(
                f"{url} is not an HDF5 file (no HDF5 signature at offset 0, 512, 1024, ...); "
                "convert it to h5ml first (see 'h5ml convert')"
            )
        remote.seek(0)
        return version, h5py.File(remote, "r"), None
    except _Refused as refused:
        remote.close()
        return None, None, str(refused)
    except OSError as exc:
        remote.close()
        if isinstance(exc, LIBRARY_ERRORS) and is_library_failure(exc):
            return (
                None,
                None,
                (
                    f"HDF5 cannot open {url}: {exc}; the object starts like an HDF5 file but HDF5 refuses it, as its "
                    "message says (an object cut short or damaged is the usual cause): upload it again"
                ),
            )
        return None, None, _said(exc)


def _said(exc: BaseException) -> str:
    """What an error says, without Python's ``[Errno N]`` prefix."""
    return str(exc.strerror) if isinstance(exc, OSError) and exc.strerror else str(exc)


class _Refused(Exception):
    """A URL that is no HDF5 file: the message of E100."""
