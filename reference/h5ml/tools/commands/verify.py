"""``h5ml verify``: recompute every fingerprint of a file and name each feature whose data changed (§8).

The command calls :func:`h5ml.verify` (:mod:`h5ml.reader.verification`) with a
progress bar on standard error (stored bytes, rate, time left; on a terminal,
or with ``--progress``), then prints one line per feature that is not ``ok``
(split/feature, HDF5 path, expected and computed fingerprints, or why it could
not be verified) and a verdict line; ``--json`` prints the document of
``schema/h5ml-verify-1.0.schema.json`` instead. Exit codes: 0 every
fingerprint agrees; 1 (as ``validate`` for an invalid file) a fingerprint
or a chunk checksum (§8.4) differs; 2 a feature could not be verified (no fingerprint stored, unreadable
data) or the file is refused (not h5ml, external storage, ...: one line
``h5ml: error: ...``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from h5ml.tools.console import (
    EXIT_ERROR,
    EXIT_INVALID,
    EXIT_OK,
    Streams,
    plural,
    print_json,
    require_file,
    safe_text,
    terminal_console,
)
from h5ml.tools.input_paths import INPUT_PATH

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.verify_report import FeatureCheck, VerifyReport

__all__ = ["verify_command", "verify_exit_code"]


def verify_exit_code(report: VerifyReport) -> int:
    """0 when every fingerprint agrees, 1 when one differs, 2 when one could not be verified (and none differs)."""
    if report.differing or report.file_status == "differs":
        return EXIT_INVALID
    if not report.ok:
        return EXIT_ERROR
    return EXIT_OK


#: Mismatching chunks named per feature in the text output (the JSON document lists every one).
SHOWN_MISMATCHES = 5


def _mismatch_lines(check: FeatureCheck) -> list[str]:
    """``chunk 3 of /train/image: CRC32C expected 0x..., computed 0x...`` per mismatching chunk, at most a few."""
    parts = []
    for m in check.mismatches[:SHOWN_MISMATCHES]:
        unit = "block" if m.path in check.contiguous else "chunk"
        parts.append(
            f"{unit} {m.entry} of {safe_text(m.path)}: CRC32C expected 0x{m.expected:08x}, "
            f"computed 0x{m.actual:08x} (rows {m.rows[0]}..{m.rows[1]})"
        )
    if len(check.mismatches) > SHOWN_MISMATCHES:
        parts.append(f"and {len(check.mismatches) - SHOWN_MISMATCHES} more chunks (--json lists every one)")
    return parts


def _feature_line(check: FeatureCheck) -> str:
    where = f"{safe_text(check.split)}/{safe_text(check.feature)} ({safe_text(check.hdf5_path)})"
    if check.status == "differs" and check.mismatches:
        if check.expected is not None and check.actual is not None and check.expected != check.actual:
            fingerprint = f"fingerprint expected {check.expected}, computed {check.actual}"
        elif check.expected is not None and check.expected == check.actual:
            fingerprint = f"fingerprint agrees ({check.expected}): the checksum dataset may be what changed"
        else:
            fingerprint = f"fingerprint not verified: {safe_text(check.reason or '')}"
        return f"DIFFERS {where}: {'; '.join([*_mismatch_lines(check), fingerprint])}"
    if check.status == "differs":
        return f"DIFFERS {where}: expected {check.expected}, computed {check.actual}"
    return f"UNVERIFIED {where}: {safe_text(check.reason or '')}"


def _progress_bar(streams: Streams, enabled: bool | None) -> Any:
    """A started rich bar on stderr (bytes, rate, time left), or None when off or stderr is not a terminal."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    console = terminal_console(streams.stderr, force_terminal=True if enabled else None)
    if enabled is False or (enabled is None and not console.is_terminal):
        return None
    bar = Progress(
        TextColumn("verify"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    bar.start()
    return bar


@click.command("verify")
@click.argument("file", type=INPUT_PATH)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Threads that hash features and, as many again, that decode chunks (default: the number of CPUs, "
    f"here {os.cpu_count() or 1}); the result does not depend on it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (schema/h5ml-verify-1.0.schema.json).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option(
    "--checksums/--no-checksums",
    default=True,
    help="Compare every chunk's stored bytes with its CRC32C checksum dataset (SPEC §8.4; default: on).",
)
@click.pass_obj
def verify_command(
    streams: Streams, file: str, jobs: int | None, as_json: bool, progress: bool | None, checksums: bool
) -> int:
    """Recompute every fingerprint of FILE from its data and compare it with the stored one.

    Names each feature (split/feature, HDF5 path) whose fingerprint differs,
    with the expected and computed values, and each chunk whose stored bytes
    do not have the CRC32C its checksum dataset records (SPEC §8.4; a file
    without checksum datasets is not an error; --no-checksums skips them).
    FILE is one h5ml file (sharded indexes are not supported yet). Exit 0
    when everything agrees, 1 when a fingerprint or a chunk checksum
    differs, 2 when a feature cannot be verified (no fingerprint stored,
    unreadable data, a malformed checksum dataset) or the file is refused
    (not h5ml, external links or storage, ...).
    """
    from h5ml.reader.verification import verify

    require_file(file)
    bar = _progress_bar(streams, progress)
    task = None if bar is None else bar.add_task("verify", total=None)

    def advance(done: int, total: int) -> None:
        if bar is not None:
            bar.update(task, completed=done, total=total)

    try:
        report = verify(file, jobs=jobs, progress=advance if bar is not None else None, checksums=checksums)
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        print_json(streams, report.to_json())
        return verify_exit_code(report)
    console = streams.console()
    for check in report.features:
        if check.status != "ok":
            console.print(Text(_feature_line(check)), soft_wrap=True)
    if report.file_status == "differs":
        console.print(
            Text(f"DIFFERS file fingerprint (/): expected {report.file_expected}, computed {report.file_actual}"),
            soft_wrap=True,
        )
    counts = f"{plural(len(report.features), 'feature')}, {report.stored_bytes:,} stored bytes, {report.seconds:.2f} s"
    if report.ok:
        verdict = "VERIFIED"
    elif report.differing or report.file_status == "differs":
        verdict = f"DIFFERS ({len(report.differing)} of {plural(len(report.features), 'feature')})"
    else:
        verdict = f"NOT VERIFIED ({len(report.unverified)} of {plural(len(report.features), 'feature')} unverified)"
    if report.checksums:
        sums = f"{plural(len(report.checksummed), 'feature')} checked by chunk checksums"
    else:
        sums = "chunk checksums not compared (--no-checksums)"
    line = f"{safe_text(report.path)}: {verdict}; {counts}, {plural(report.jobs, 'job')}; {sums}"
    console.print(Text(line), soft_wrap=True)
    return verify_exit_code(report)
