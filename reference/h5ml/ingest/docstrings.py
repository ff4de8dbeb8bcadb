"""The numpydoc paragraphs of the options every converter shares, written once (§4.2, §3.5, §7.6, §4.7).

A converter's docstring lists its own parameters and, where the shared ones
belong, the line ``{shared_parameters}``; its ``Raises`` section may hold
``{shared_raises}``. :func:`shared_doc` replaces both lines with the
paragraphs below (indented as the line was), adding the converter's own
notes to a paragraph where it uses an option in its own way, so that every
rendered ``__doc__`` reads as complete numpydoc.

The paragraphs describe :class:`h5ml.ingest.options.ConvertOptions`, which
checks the values.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from h5ml.ingest.options import SHARED_OPTIONS

__all__ = ["SHARED_PARAMETERS", "SHARED_RAISES", "SPLIT_SEED_NOTE", "render_parameters", "shared_doc"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Parameter -> its description, for every shared option (:data:`h5ml.ingest.options.SHARED_OPTIONS`) and
#: the options of the converters writing through the pipeline (:data:`h5ml.ingest.options.PIPELINE_OPTIONS`).
SHARED_PARAMETERS: Final[Mapping[str, str]] = {
    "metadata": (
        "Root metadata (§4.2) over the converter's defaults: ``name`` the output's stem, ``source`` where the "
        'data came from, ``description`` "Converted from <source> by h5ml <version>." and ``license`` '
        '``"NOASSERTION"`` (the SPDX value for "none stated": the converter cannot know it; pass the real '
        "one), so that the output passes ``h5ml validate --strict``."
    ),
    "features": (
        'Per-feature options as :class:`h5ml.Writer` takes them (``{"label": {"description": ...}}``, keys '
        '``"feature"`` or ``"split/feature"``, values :class:`h5ml.FeatureSpec` or dicts of its fields), over '
        "the converter's own: roles, descriptions, units. What the source fixes (the encoding, the class "
        "names) cannot be changed here: a different value is refused."
    ),
    "compression": (
        '``"gzip"`` (deflate, a core filter, §3.5), ``"zstd"`` (opt-in: HDF5 filter 32015 through hdf5plugin, '
        "decodes 2-4 times faster than gzip, but h5dump and h5wasm cannot read it; declared in "
        "``required_filters``) or "
        "None (the default: uncompressed data is the fastest to read)."
    ),
    "level": (
        'The level of ``compression``: gzip 0-9 (None: 4) with ``compression="gzip"``, zstd 1-22 (None: 3) with '
        '``compression="zstd"``.'
    ),
    "shuffle": (
        "Shuffle on write (§7.6): store each split in the order ``numpy.random.default_rng(seed).permutation(n)`` "
        "of its samples and record ``seed`` as the split's ``shuffle_seed``. A split of which ``on_error='skip'`` "
        "left samples out may be stored in another random order, and then records no ``shuffle_seed``. Off by "
        "default, so that row i of a split is its i-th sample in the source order (ordered data such as time "
        "series keeps its order)."
    ),
    "seed": (
        "The shuffle seed, an integer in [0, 2**63); None with ``shuffle`` draws one "
        "(:func:`h5ml.sampling.seeds.draw_seed`) and records it."
    ),
    "workers": "Decoding workers, >= 1; 1 (the default) decodes in this thread.",
    "processes": (
        "Make the ``workers`` processes (:mod:`concurrent.futures`, ``forkserver`` where available, else "
        "``spawn``) instead of threads. Threads are the default: the decoders (libsndfile, libsoxr, Pillow's "
        "codecs, zlib) release Python's lock, and threads pay no process start and no copy of the decoded "
        "samples through a pipe."
    ),
    "on_error": (
        '``"stop"`` (the default): the first source file, row or sample that does not convert raises '
        ':class:`h5ml.IngestError` naming it and why, and the output is left as it was. ``"skip"``: it is left '
        "out and recorded with its reason in the report and in the output's root attribute "
        "``h5ml-ingest:skipped`` (:data:`h5ml.ingest.SKIPPED_ATTR`, §4.7)."
    ),
    "progress": (
        'A progress bar on stderr (samples, samples/s, time left): True, False, or None for "when stderr is a '
        'terminal".'
    ),
    "overwrite": "Replace an existing output (never the source itself).",
    "allow_empty_splits": (
        "Write a split of which ``on_error='skip'`` left out every file, with no samples. False (the default): "
        "such a split is an :class:`h5ml.IngestError` naming it, how many files were skipped and the first "
        "reasons, and the output is left as it was (a split that is there in the source and empty in the "
        "output is most often a wrong file)."
    ),
    "shard_size": (
        "Write a sharded dataset (SPEC §12.4): ``output`` is then a folder of shards "
        "``<split>/<split>-NNNNN.h5`` and ``index.json``, and a shard rolls over before it would exceed this "
        'size: bytes, or ``"512MiB"``, ``"1GiB"``, ``"100MB"`` (``--shard-size``; what is counted: '
        ":class:`h5ml.writer.sharded.ShardedWriter`). None (the default): one file."
    ),
    "samples_per_shard": (
        "Write a sharded dataset whose shards hold this many samples each (the last fewer) "
        "(``--samples-per-shard``); with ``shard_size`` too, a shard closes at whichever comes first."
    ),
    "allow_external": (
        "Read what the input file stores in other files (external links, external raw storage, virtual "
        "datasets, §10.1), as ``h5ml.open(..., allow_external=True)`` does; only for a file you trust. False "
        "(the default): such storage is refused with :class:`h5ml.ForbiddenStorageError` naming the file and "
        "HDF5 path (§3.6), before anything is written. Python only: the command line never reads other files."
    ),
}

#: The note of ``seed`` for the converters that cut splits by ``split_ratios`` (:mod:`h5ml.ingest.splitting`).
SPLIT_SEED_NOTE: Final = (
    "It also seeds the cut of ``split_ratios`` (0 when None, never a drawn seed, so that the cut is reproducible)."
)

#: The exceptions every converter raises for its shared options and its output: type(s) -> when.
SHARED_RAISES: Final[Mapping[str, str]] = {
    "h5ml.errors.ParameterError": (
        "If a parameter has a value the converter does not take; the message names the parameter and its "
        "command-line option."
    ),
    "FileExistsError, IsADirectoryError, FileNotFoundError": (
        "If the output exists (without ``overwrite``) or is the source, is a folder, or its folder does not "
        "exist (:func:`h5ml.ingest.check_output`)."
    ),
}

_WIDTH: Final = 100


def _entries(entries: Mapping[str, str], indent: str) -> str:
    lines: list[str] = []
    for name, text in entries.items():
        lines.append(indent + name)
        lines += textwrap.wrap(text, _WIDTH, initial_indent=indent + "    ", subsequent_indent=indent + "    ")
    return "\n".join(lines)


def render_parameters(
    names: Sequence[str] = SHARED_OPTIONS, notes: Mapping[str, str] | None = None, indent: str = ""
) -> str:
    """The numpydoc entries of shared parameters, each with the converter's note appended.

    Parameters
    ----------
    names
        The parameters, in order (default: every shared option).
    notes
        Parameter -> a sentence or two added to its paragraph (how this
        converter uses it).
    indent
        The indentation of the entry names.

    Returns
    -------
    str
        The entries, lines joined by newlines, without a final newline.

    Raises
    ------
    KeyError
        If a name is not a shared parameter, or a note is for a parameter not listed.
    """
    notes = dict(notes or {})
    unknown = sorted(set(notes) - set(names)) + sorted(set(names) - set(SHARED_PARAMETERS))
    if unknown:
        raise KeyError(f"no shared parameter paragraph for {unknown}")
    entries = {name: SHARED_PARAMETERS[name] + (" " + notes[name] if name in notes else "") for name in names}
    return _entries(entries, indent)


def _replace_line(doc: str, marker: str, render: Callable[[str], str]) -> str:
    out: list[str] = []
    for line in doc.split("\n"):
        if line.strip() == marker:
            out.append(render(line[: len(line) - len(line.lstrip())]))
        else:
            out.append(line)
    return "\n".join(out)


def shared_doc(names: Sequence[str] = SHARED_OPTIONS, notes: Mapping[str, str] | None = None) -> Callable[[_F], _F]:
    """Decorator: put the shared paragraphs in the function's docstring (see the module docstring).

    Parameters
    ----------
    names
        The shared parameters the function takes (default: all), in the order to list them.
    notes
        Parameter -> what the function adds to the shared paragraph.

    Returns
    -------
    callable
        The decorator; it returns the function itself, its ``__doc__``
        completed (a docstring stripped by ``python -OO`` stays None).

    Raises
    ------
    KeyError
        If ``names`` or ``notes`` name a parameter that has no shared paragraph.
    ValueError
        If the docstring lacks the line ``{shared_parameters}``.
    """
    rendered_notes = dict(notes or {})
    render_parameters(names, rendered_notes)  # refuse unknown names when the module is imported

    def decorate(function: _F) -> _F:
        doc = function.__doc__
        if doc is None:
            return function
        if "{shared_parameters}" not in doc:
            raise ValueError(f"{function.__qualname__}: its docstring has no line {{shared_parameters}}")
        doc = _replace_line(doc, "{shared_parameters}", lambda indent: render_parameters(names, rendered_notes, indent))
        function.__doc__ = _replace_line(doc, "{shared_raises}", lambda indent: _entries(SHARED_RAISES, indent))
        return function

    return decorate
