"""The writer's temporary files: their names, who owns each, and which ones a dead writer left behind (§4.4).

A writer builds its file as a hidden temporary beside the target,
``.<target name>.h5ml-tmp-<pid>-<machine>-<token>``, and moves it over the
target when it is finished (:mod:`h5ml.writer.atomic`); a sharded writer
stages its shards in a hidden folder inside the dataset's folder,
``.h5ml-shards-<pid>-<machine>-<random>`` (:mod:`h5ml.model.staging_names`,
§12.4). A writer that is
killed (SIGKILL, a power cut) leaves its temporary (or staging folder)
behind. The name records
the writer's process id and a tag of the machine it runs on (a digest of the
host name, the boot id and the process-id namespace), so that another
process on the same machine can tell that the writer is gone:

- **live**: its process still exists on this machine, or it was made on
  another machine, or by a writer older than this scheme (no pid in the
  name), so nobody here can know that it is dead; never removed
  automatically;
- **stale**: made on this machine by a process that no longer exists.

A process id that was reused by another process makes a stale temporary look
live: the error is always on the side of keeping a file. The next writer to a
target removes the stale temporaries of that target
(:func:`remove_stale`); ``h5ml temporaries PATH [--clean]`` lists them and
removes the stale ones of a directory on request, a staging folder among
them when the directory is the dataset's folder; a sharded writer removes
the stale ones of its folder when it starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import secrets
import shutil
import socket
from pathlib import Path
from typing import Final, Literal

from h5ml.model.staging_names import StagingName, parse_staging_name

__all__ = ["TEMP_MARK", "Temporary", "machine_tag", "remove_stale", "temporaries", "temporary_name"]

#: What every temporary file's name holds after the target's name.
TEMP_MARK: Final = ".h5ml-tmp-"
_NAME: Final = re.compile(r"^\.(?P<target>.+)\.h5ml-tmp-(?:(?P<pid>[0-9]+)-(?P<machine>[0-9a-f]{12})-)?[0-9a-f]{16}$")


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def machine_tag() -> str:
    """12 hex digits naming this machine and process-id namespace: pids are comparable only under one tag."""
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    parts = (socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), namespace)
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:12]


def temporary_name(target: Path) -> Path:
    """A new temporary file's path for ``target``: in its folder, hidden, with this process's id and machine."""
    return target.parent / f".{target.name}{TEMP_MARK}{os.getpid()}-{machine_tag()}-{secrets.token_hex(8)}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists, owned by another user (or the question cannot be asked): keep the file
    return True


@dataclasses.dataclass(frozen=True)
class Temporary:
    """One temporary file of a writer, found beside its target, or a sharded writer's staging folder.

    Attributes
    ----------
    path
        The temporary file (the staging folder).
    target
        The file it would have replaced (in the same folder); for a staging folder, the dataset's folder.
    pid
        The writer's process id, None for a name without one (an older writer).
    state
        ``"stale"`` (its writer is gone: safe to remove) or ``"live"`` (a
        writer may still hold it, or nobody here can tell).
    size
        Its size in bytes (0 if it vanished meanwhile); for a staging folder, the bytes of the files in it.
    kind
        ``"file"`` (a writer's temporary file) or ``"staging"`` (a sharded writer's staging folder, §12.4).
    """

    path: Path
    target: Path
    pid: int | None
    state: Literal["live", "stale"]
    size: int
    kind: Literal["file", "staging"] = "file"


def _folder_bytes(folder: str) -> int:
    """The bytes of the files under ``folder``, symbolic links not followed (what removing it frees)."""
    total = 0
    for parent, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _staging(entry: os.DirEntry[str], folder: Path, name: StagingName, tag: str) -> Temporary:
    stale = name.machine == tag and not _alive(name.pid)
    return Temporary(
        Path(entry.path), folder, name.pid, "stale" if stale else "live", _folder_bytes(entry.path), "staging"
    )


def temporaries(folder: Path, target: str | None = None) -> list[Temporary]:
    """The writers' temporary files in ``folder`` (of the target named ``target`` only, if given), by name.

    Parameters
    ----------
    folder
        The folder to look in (not its subfolders): a sharded writer's staging folders in it are listed too
        (``kind="staging"``), since ``folder`` is then the dataset's folder they belong to.
    target
        A target file's name (not a path), or None for every target (and the staging folders).

    Returns
    -------
    list of Temporary
        Sorted by file name.

    Raises
    ------
    OSError
        If ``folder`` cannot be listed.
    """
    tag = machine_tag()
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        staging = parse_staging_name(entry.name)
        if staging is not None:
            # a sharded writer's staging folder belongs to the folder, not to a target file (§12.4)
            with contextlib.suppress(OSError):
                if target is None and entry.is_dir(follow_symlinks=False):
                    found.append(_staging(entry, folder, staging, tag))
            continue
        match = _NAME.match(entry.name)
        if match is None or (target is not None and match["target"] != target):
            continue
        with contextlib.suppress(OSError):
            if not entry.is_file(follow_symlinks=False):
                continue
        pid = int(match["pid"]) if match["pid"] else None
        stale = pid is not None and match["machine"] == tag and not _alive(pid)
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            size = 0
        found.append(Temporary(Path(entry.path), folder / match["target"], pid, "stale" if stale else "live", size))
    return found


def remove_stale(folder: Path, target: str | None = None) -> list[Temporary]:
    """Remove the stale temporaries in ``folder`` (of ``target`` only, if given); never a live one.

    Parameters
    ----------
    folder, target
        As :func:`temporaries`.

    Returns
    -------
    list of Temporary
        The temporaries removed, staging folders with everything in them (one that vanished meanwhile is
        not listed).
        A folder that cannot be listed, or a file that cannot be removed, is
        left as it is: cleaning up never makes a write fail.
    """
    try:
        stale = [t for t in temporaries(folder, target) if t.state == "stale"]
    except OSError:
        return []
    removed = []
    for temp in stale:
        try:
            if temp.kind == "staging":
                shutil.rmtree(temp.path)  # symbolic links inside are removed, never followed
            else:
                temp.path.unlink()
        except OSError:
            continue
        removed.append(temp)
    return removed
