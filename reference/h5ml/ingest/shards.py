"""``h5ml shard`` and ``h5ml unshard``: one h5ml file into a sharded dataset, and back (SPEC §12.2, §12.4).

:func:`shard` copies every split of a file, samples in order, into a sharded
dataset written by :class:`h5ml.writer.sharded.ShardedWriter` (same features,
attributes and compression, as ``h5ml subset`` keeps them,
:mod:`h5ml.ingest.edit`); its samples equal the file's. :func:`unshard`
concatenates the shards of every split, in the order the index lists them,
into one conforming file, after checking every shard against the index
(:func:`h5ml.model.shard_files.describe_shard` and
:func:`~h5ml.model.shard_files.disagreements`, §12.2): a missing, changed or
disagreeing shard is refused before anything is written. Neither keeps a
split's ``shuffle_seed``: no shard records one (§7.6), so the unsharded file
has none either.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from h5ml.errors import ShardIndexError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.edit.copying import copy_rows, declaration, root_metadata
from h5ml.ingest.options import parameter_error
from h5ml.ingest.output import check_output
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import IngestReport
from h5ml.model.paths import require_regular_file
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import ShardIndex, load_index, shard_location
from h5ml.reader import open_file as open_dataset
from h5ml.writer import Writer
from h5ml.writer.shard_folder import file_name_problem

__all__ = ["check_shards", "shard", "unshard"]


@shared_doc(names=("progress",))
def shard(
    source: str | os.PathLike[str],
    outdir: str | os.PathLike[str],
    *,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Write every split of an h5ml file as a sharded dataset in ``outdir`` (SPEC §12.4).

    Parameters
    ----------
    source
        The h5ml file.
    outdir
        The dataset's folder (see :class:`h5ml.writer.sharded.ShardedWriter`): shards
        ``<split>/<split>-NNNNN.h5`` and ``index.json``.
    shard_size
        Roll over when a shard would exceed this: bytes, or ``"512MiB"``, ``"1GiB"``, ``"100MB"``
        (what is counted: :class:`~h5ml.writer.sharded.ShardedWriter`).
    samples_per_shard
        Roll over after this many samples.
    {shared_parameters}
    overwrite
        Replace the sharded dataset ``outdir`` holds (``--overwrite``).

    Returns
    -------
    IngestReport
        ``output`` is the index written; samples per split.

    Raises
    ------
    h5ml.errors.ParameterError
        If neither shard option is given, or one is invalid, or ``outdir`` is named like an HDF5 file
        (``out.h5``) and is no folder.
    FileExistsError, NotADirectoryError, FileNotFoundError
        As :class:`~h5ml.writer.sharded.ShardedWriter` (an index there and no ``overwrite``, ...).
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); nothing is written then.
    """
    if shard_size is None and samples_per_shard is None:
        raise parameter_error(
            "shard_size", "give shard_size= (--shard-size) or samples_per_shard= (--samples-per-shard)"
        )
    named_as_file = file_name_problem(outdir)
    if named_as_file is not None:  # in the words of this interface; the writer would say path=
        raise parameter_error("outdir", named_as_file, option="OUTDIR")
    start = time.perf_counter()
    source_path = require_regular_file(source)
    with open_dataset(source_path) as dataset:
        names = list(dataset.every_split())
        report = IngestReport(Path(outdir) / "index.json")
        declared = {
            name: {
                feature: declaration(dataset[name].feature(feature), "keep", dataset.format_version, report.notes)
                for feature in dataset[name].every_feature()
            }
            for name in names
        }
        total = sum(dataset[name].num_samples for name in names)
        sharded = Writer(
            outdir,
            root_metadata(dataset, None),
            shard_size=shard_size,
            samples_per_shard=samples_per_shard,
            overwrite=overwrite,  # type: ignore[call-arg]  # a ShardedWriter's parameter (Writer.__new__)
        )
        with ProgressBars(progress, total) as bars, sharded as writer:
            for name in names:
                split = dataset[name]
                writer.add_split(name, split.description, expected_samples=split.num_samples)
                for feature, kwargs in declared[name].items():
                    writer.add_feature(name, feature, **kwargs)
                task = bars.add(f"{Path(outdir).name}: {name}", split.num_samples)
                chosen = list(declared[name])
                report.samples[name] = copy_rows(writer, name, split, chosen, range(split.num_samples), bars, task)
    report.seconds = time.perf_counter() - start
    return report


def check_shards(index: ShardIndex, index_file: Path) -> list[str]:
    """Every problem of the shards of a local index (§12.2): missing files, and each :func:`disagreements`.

    Parameters
    ----------
    index
        The index, already checked on its own (:func:`h5ml.model.shard_index.load_index`).
    index_file
        Its path (shard paths are relative to its folder).

    Returns
    -------
    list of str
        ``"<shard path>: <problem>"``, empty when every shard agrees with the index.
    """
    problems = []
    for name, entry in index.splits.items():
        for shard_entry in entry.shards:
            location = shard_location(str(index_file), shard_entry.path)
            if not os.path.isfile(location):
                problems.append(f"{location}: missing (the index lists it in split {name!r})")
                continue
            try:
                found = describe_shard(location)
            except (ShardIndexError, OSError) as exc:
                problems.append(f"{location}: {exc}")
                continue
            problems.extend(f"{location}: {p}" for p in disagreements(name, entry, shard_entry, found))
            if dict(found.card) != index.metadata:
                problems.append(f"{location}: its root attributes differ from the index's metadata (§12.2)")
    return problems


@shared_doc(names=("progress",))
def unshard(
    index: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Concatenate the shards of every split of a sharded dataset into one h5ml file (SPEC §12.2).

    Parameters
    ----------
    index
        The dataset's ``index.json``, or its folder.
    output
        The h5ml file to write (see :func:`h5ml.ingest.check_output`).
    {shared_parameters}
    overwrite
        Replace an existing ``output`` (``--overwrite``).

    Returns
    -------
    IngestReport
        Samples written per split.

    Raises
    ------
    h5ml.ShardIndexError
        If the index is invalid, or a shard is missing or disagrees with it (every problem listed);
        nothing is written then.
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    """
    start = time.perf_counter()
    parsed, found = load_index(index)
    if not isinstance(found, Path):  # an index at a URL: its shards are not local files
        raise ShardIndexError(f"{found}: unshard reads a local index and its shards; copy the dataset's folder first")
    index_file = found
    problems = check_shards(parsed, index_file)
    if problems:
        raise ShardIndexError(
            f"{index_file}: {len(problems)} problem(s) with its shards, nothing was written: "
            + "; ".join(problems[:10])
            + ("; ..." if len(problems) > 10 else "")
            + ". Restore the shards the index lists, or write the dataset again"
        )
    locations = {
        name: [Path(shard_location(str(index_file), s.path)) for s in entry.shards]
        for name, entry in parsed.splits.items()
    }
    out = check_output(output, overwrite, [index_file, *(p for ps in locations.values() for p in ps)])
    report = IngestReport(out)
    total = sum(entry.num_samples for entry in parsed.splits.values())
    first_shard = next((p for ps in locations.values() for p in ps), None)
    if first_shard is None:
        raise ShardIndexError(f"{index_file} lists no shard: there is nothing to unshard (its splits have no shards)")
    with open_dataset(first_shard) as first:
        root = root_metadata(first, None)
    with ProgressBars(progress, total) as bars, Writer(out, root) as writer:
        for name, paths in locations.items():
            task = bars.add(f"{out.name}: {name}", parsed.splits[name].num_samples)
            report.samples[name] = 0
            if not paths:
                writer.add_split(name)
            for position, path in enumerate(paths):
                with open_dataset(path) as dataset:
                    split = dataset[name]
                    features = list(split.every_feature())
                    if position == 0:
                        writer.add_split(name, split.description, expected_samples=parsed.splits[name].num_samples)
                        for feature in features:
                            kwargs = declaration(split.feature(feature), "keep", dataset.format_version, report.notes)
                            writer.add_feature(name, feature, **kwargs)
                    rows = range(split.num_samples)
                    report.samples[name] += copy_rows(writer, name, split, features, rows, bars, task)
    report.seconds = time.perf_counter() - start
    return report
