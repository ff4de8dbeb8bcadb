"""``h5ml temporaries PATH [--clean]``: the temporary files that writers left beside their targets (§4.4, §12.4).

PATH is a folder (every target in it, and the staging folders of sharded
writers in it: give a sharded dataset's folder) or a target file (that
file's temporaries; the file itself need not exist). Each temporary is listed with
its state (see :mod:`h5ml.writer.temporaries`): ``stale`` when its writer, on
this machine, is gone, ``live`` when a writer may still hold it or nobody
here can tell. ``--clean`` removes the stale ones, never a live one; the next
write to a target removes that target's stale temporaries too.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.text import Text

from h5ml.tools.console import EXIT_OK, Streams, size_text
from h5ml.writer.temporaries import Temporary, remove_stale, temporaries

__all__ = ["temporaries_command"]


def _line(temp: Temporary) -> str:
    owner = "an older writer (no process id in the name)" if temp.pid is None else f"process {temp.pid}"
    why = "its writer is gone" if temp.state == "stale" else "a writer may still hold it"
    what = "/  (a sharded writer's staging folder, " if temp.kind == "staging" else "  ("
    return f"{temp.state:<5}  {size_text(temp.size):>9}  {temp.path.name}{what}{owner}; {why})"


@click.command("temporaries")
@click.argument("path", type=click.Path())
@click.option("--clean", is_flag=True, help="Remove the stale temporaries (their writer is gone); never a live one.")
@click.pass_obj
def temporaries_command(streams: Streams, path: str, clean: bool) -> int:
    """List the temporary files that writers left beside PATH (a folder, or a target file), and clean them.

    A writer builds its file as a hidden temporary beside the target and moves
    it over the target when finished; a sharded writer stages its shards in a
    hidden folder .h5ml-shards-* inside the dataset's folder (give that folder
    as PATH); a writer that was killed leaves them behind. A temporary is
    stale when its writer (on this machine) is gone, live otherwise. --clean
    removes the stale ones (a staging folder with its shards).
    """
    where = Path(path)
    if where.is_dir():
        folder, target = where, None
    elif where.parent.is_dir():
        folder, target = where.parent, where.name
    else:
        raise FileNotFoundError(
            f"{path}: the folder {str(where.parent)!r} does not exist; give a folder or a file in one"
        )
    if not os.access(folder, os.R_OK | os.X_OK):
        raise PermissionError(f"{folder}: cannot list this folder; give a folder you can read")
    found = temporaries(folder, target)
    console = streams.console()
    scope = f"of {where}" if target is not None else f"in {folder}"
    if not found:
        console.print(Text(f"no temporary files {scope}"))
        return EXIT_OK
    for temp in found:
        console.print(Text(_line(temp)), soft_wrap=True)
    stale = [t for t in found if t.state == "stale"]
    if clean:
        removed = remove_stale(folder, target)
        freed = sum(t.size for t in removed)
        console.print(Text(f"removed {len(removed)} stale temporary file(s) {scope}, {size_text(freed)}"))
    elif stale:
        console.print(
            Text(
                f"{len(stale)} stale temporary file(s) {scope}, {size_text(sum(t.size for t in stale))}: "
                f"remove them with `h5ml temporaries {path} --clean`"
            ),
            soft_wrap=True,
        )
    return EXIT_OK
