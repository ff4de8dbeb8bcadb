"""The names of a sharded writer's staging folders, the one place that spells them (SPEC §12.1-S2, §12.4).

A sharded writer (:mod:`h5ml.writer.shard_folder`) writes every shard into a
hidden staging folder inside the dataset's folder and moves the shards to
their final paths only when all are complete, the index last. A writer that
is killed outright (SIGKILL, a power cut) leaves that folder behind; no index
lists what it holds. Its name is

``.h5ml-shards-<pid>-<machine>-<random>``

(``<machine>`` the 12 hex digits of :func:`h5ml.writer.temporaries.machine_tag`,
``<random>`` 12 more), so that another process on the same machine can tell
whether its writer is gone, as for a writer's temporary files (§4.4). Writers
before this scheme named it ``.h5ml-shards-<pid>-<random>``: such a folder's
machine is unknown, so nobody can tell that its writer is gone.

Read by :mod:`h5ml.writer.temporaries` (``h5ml temporaries DATASET_FOLDER``
lists and, with ``--clean``, removes the stale ones) and by the validator of
sharded datasets (:mod:`h5ml.validator.shards`, W211 for each one in the
dataset's folder).
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from typing import Final

__all__ = ["STAGING_PREFIX", "StagingName", "parse_staging_name", "staging_folder_name"]

#: The name of a staging folder starts with this (then ``<pid>-<machine>-<random>``).
STAGING_PREFIX: Final = ".h5ml-shards-"
_NAME: Final = re.compile(r"^\.h5ml-shards-(?P<pid>[0-9]+)-(?:(?P<machine>[0-9a-f]{12})-)?[0-9a-f]{12}$")


@dataclasses.dataclass(frozen=True)
class StagingName:
    """What a staging folder's name says about its writer.

    Attributes
    ----------
    pid
        The writer's process id.
    machine
        The tag of the writer's machine and process-id namespace, None in a name of an older writer.
    """

    pid: int
    machine: str | None


def staging_folder_name(pid: int, machine: str) -> str:
    """A new staging folder's name for the writer ``pid`` on ``machine`` (12 hex digits), with 12 random ones."""
    return f"{STAGING_PREFIX}{pid}-{machine}-{secrets.token_hex(6)}"


def parse_staging_name(name: str) -> StagingName | None:
    """The writer a staging folder's name records, or None when ``name`` is no staging folder's.

    Parameters
    ----------
    name
        A file or folder name (not a path).

    Returns
    -------
    StagingName or None
        For ``.h5ml-shards-<pid>-<machine>-<random>`` and the older ``.h5ml-shards-<pid>-<random>``.
    """
    match = _NAME.match(name)
    if match is None:
        return None
    return StagingName(int(match["pid"]), match["machine"])
