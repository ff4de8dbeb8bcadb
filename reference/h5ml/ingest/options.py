"""The options every converter takes, checked in one place: :class:`ConvertOptions` (§4.2, §3.5, §7.6).

Every ``convert_*`` function of :mod:`h5ml.ingest` takes the same shared
keyword parameters (``metadata``, ``features``, ``compression``, ``level``,
``shuffle``, ``seed``, ``workers``, ``processes``, ``on_error``,
``progress``, ``overwrite``; :data:`SHARED_OPTIONS`) beside its own, and
gathers them with :meth:`ConvertOptions.pick` into one frozen
:class:`ConvertOptions`, whose construction checks every value once. The
converters that write through :func:`h5ml.ingest.pipeline.ingest` (audio and
image folders, HDF5 files) also take :data:`PIPELINE_OPTIONS`
(``allow_empty_splits``), checked by the same object.

A value a function does not take is a :class:`h5ml.errors.ParameterError`
made by :func:`parameter_error`: its message says what is wrong and names
the parameter as Python spells it and as the command line does
(:func:`cli_option`: ``split_ratios`` is ``--split-ratios``), so the same
message serves a script and ``h5ml convert``.

Messages written anywhere in h5ml (the reader and the validator included,
which cannot import this module) name a value in both interfaces by one
convention: the Python form, then the command line's in parentheses,
``pass overwrite=True (--overwrite)``, ``size=(W, H) (--size WxH)``,
``locking=False (HDF5_USE_FILE_LOCKING=FALSE)``, and ``(parameter NAME,
option --name)`` as :func:`parameter_error` writes it. A Python caller
reads both; the command line shows :func:`cli_words` of the message, which
keeps the command line's form alone (``pass --overwrite``). The numpydoc paragraphs of the
shared parameters are in :mod:`h5ml.ingest.docstrings`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from h5ml import spec
from h5ml.errors import ParameterError
from h5ml.model.filters import ZSTD_FILTER, ZSTD_INSTALL, filter_available
from h5ml.model.values import FeatureSpec
from h5ml.sampling.seeds import SEED_BITS, draw_seed
from h5ml.writer.arguments import COMPRESSIONS, is_level
from h5ml.writer.shard_naming import parse_samples_per_shard, parse_shard_size

__all__ = [
    "NO_CLI_OPTION",
    "PIPELINE_OPTIONS",
    "SHARD_OPTIONS",
    "SHARED_OPTIONS",
    "ConvertOptions",
    "OnError",
    "check_choice",
    "cli_option",
    "cli_words",
    "parameter_error",
]

#: What to do with a source file that fails: stop (the default) or skip it and record why.
OnError = Literal["stop", "skip"]

#: Parameters that ``h5ml convert`` does not offer (Python only).
NO_CLI_OPTION: Final = frozenset(
    {"features", "batch_size", "batch_bytes", "text_encoding", "rows_per_read", "sep", "format", "splits", "audio",
     "id_feature", "total", "split_key", "allow_external"}
)  # fmt: skip
#: Parameters whose command-line spelling is not ``--`` and the name with dashes.
_CLI_SPELLINGS: Final[Mapping[str, str]] = {"metadata": "--name, --description, --license"}
#: The values ``on_error`` takes.
_ON_ERROR: Final = ("stop", "skip")


def cli_option(name: str) -> str | None:
    """The ``h5ml convert`` option of a converter parameter, or None when the command line has none.

    Parameters
    ----------
    name
        The parameter as Python spells it, e.g. ``"split_ratios"``.

    Returns
    -------
    str or None
        ``"--split-ratios"``; ``None`` for the Python-only parameters of :data:`NO_CLI_OPTION`.
    """
    if name in NO_CLI_OPTION:
        return None
    return _CLI_SPELLINGS.get(name, "--" + name.replace("_", "-"))


def parameter_error(name: str, message: str, option: str | None = None) -> ParameterError:
    """A :class:`ParameterError` whose message names the parameter in Python and on the command line.

    Parameters
    ----------
    name
        The parameter, as Python spells it.
    message
        What is wrong and what to do, a sentence without the final full stop
        (``"mode must be one of [...], got 'video'"``).
    option
        The command-line option, when it is not :func:`cli_option` of ``name``
        (``subset(splits=...)`` is ``h5ml subset --split``), or the argument
        (``merge(sources=...)`` is ``h5ml merge SOURCES``).

    Returns
    -------
    h5ml.errors.ParameterError
        With the message ``"<message> (parameter <name>, option <--name>)"``
        (``argument <NAME>`` for a positional argument; nothing when the
        command line has neither), to be raised.
    """
    option = cli_option(name) if option is None else option
    kind = "option" if option is None or option.startswith("-") else "argument"
    where = f"parameter {name}" + ("" if option is None else f", {kind} {option}")
    return ParameterError(f"{message} ({where})")


#: A Python value followed by its command-line form: ``name=VALUE (--option ...)`` or ``(ENV_VARIABLE=...)``.
_BOTH_FORMS: Final = re.compile(
    r"\b[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\([^()]*\)|\[[^\]]*\]|[^\s,;()]+)"
    r" \(((?:--|[A-Z][A-Z0-9_]*=)[^()]*)\)"
)
#: What :func:`parameter_error` appends: ``(parameter NAME, option --name)`` or ``(parameter NAME, argument NAME)``.
_PARAMETER_NOTE: Final = re.compile(r"\(parameter [A-Za-z_][A-Za-z0-9_]*, ((?:option|argument) [^()]*)\)")


def cli_words(message: str) -> str:
    """A message in the command line's words: the Python form of each value left out where a CLI form follows.

    Parameters
    ----------
    message
        A message written by the convention of this module's docstring.

    Returns
    -------
    str
        ``"... pass overwrite=True (--overwrite)"`` becomes ``"... pass --overwrite"``,
        ``"(parameter samples, option --samples)"`` becomes ``"(option --samples)"``;
        the rest is unchanged.
    """
    return _PARAMETER_NOTE.sub(r"(\1)", _BOTH_FORMS.sub(r"\1", message))


def check_choice(name: str, value: Any, choices: Collection[Any]) -> None:
    """Refuse ``value`` unless it is one of ``choices`` (a :class:`ParameterError` naming ``name``).

    Parameters
    ----------
    name
        The parameter, as Python spells it.
    value
        The value given.
    choices
        The values it takes, in the order the message lists them.

    Raises
    ------
    h5ml.errors.ParameterError
        ``"<name> must be one of [...], got <value>"``.
    """
    if not any(value == choice and type(value) is type(choice) for choice in choices):
        raise parameter_error(name, f"{name} must be one of {list(choices)}, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ConvertOptions:
    """The options every converter takes, each checked when the object is made (§4.2, §3.5, §7.6).

    The meaning of each is in :mod:`h5ml.ingest.docstrings` (the paragraphs
    every converter's docstring includes).

    Attributes
    ----------
    metadata
        Root metadata (§4.2) over the converter's defaults, or None.
    features
        Per-feature options (``{"feature" or "split/feature": FeatureSpec or dict}``), or None.
    compression
        ``"gzip"``, ``"zstd"`` (opt-in, needs ``hdf5plugin``) or None.
    level
        The level of ``compression`` (gzip 0-9, zstd 1-22), or None for the writer's default (gzip 4, zstd 3).
    shuffle
        Shuffle on write (§7.6).
    seed
        The shuffle seed in ``[0, 2**63)``, or None.
    workers
        Decoding workers, >= 1.
    processes
        The workers are processes, not threads.
    on_error
        ``"stop"`` or ``"skip"``.
    progress
        True, False, or None ("when stderr is a terminal").
    overwrite
        Replace an existing output.
    allow_empty_splits
        Write a split of which ``on_error="skip"`` left out every sample (with
        no samples); False (the default) refuses it
        (:func:`h5ml.ingest.pipeline.ingest`).
    shard_size, samples_per_shard
        Write a sharded dataset (SPEC §12.4): the output is a folder; a shard rolls over by stored bytes
        (an int, or ``"1GiB"``) or by samples (:class:`h5ml.writer.sharded.ShardedWriter`). None: one file.

    Raises
    ------
    h5ml.errors.ParameterError
        When made with a value a converter does not take: one message naming
        every wrong parameter and its command-line option.
    """

    metadata: Mapping[str, Any] | None = None
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None
    compression: str | None = None
    level: int | None = None
    shuffle: bool = False
    seed: int | None = None
    workers: int = 1
    processes: bool = False
    on_error: OnError = "stop"
    progress: bool | None = None
    overwrite: bool = False
    allow_empty_splits: bool = False
    shard_size: int | str | None = None
    samples_per_shard: int | None = None

    def __post_init__(self) -> None:
        problems = [problem for problem in self._problems() if problem is not None]
        if problems:
            raise ParameterError("; ".join(problems))

    def _problems(self) -> list[str | None]:
        """One sentence per wrong value (None for the right ones), each naming the parameter."""

        def problem(name: str, ok: bool, wanted: str) -> str | None:
            if ok:
                return None
            return str(parameter_error(name, f"{name} must be {wanted}, got {getattr(self, name)!r}"))

        return [
            problem("metadata", self.metadata is None or isinstance(self.metadata, Mapping), "a dict or None"),
            problem("features", self.features is None or isinstance(self.features, Mapping), "a dict or None"),
            None
            if self.compression in COMPRESSIONS
            else str(
                parameter_error(
                    "compression",
                    f"compression must be 'gzip' or None, got {self.compression!r}; 'zstd' is accepted too (opt-in: "
                    "only readers with hdf5plugin read it)",
                )
            ),
            self._zstd_problem(),
            problem(
                "level",
                self.level is None or (self.compression is not None and is_level(self.compression, self.level)),
                "None or a gzip level 0-9 with compression='gzip' (--compression gzip), or a zstd level 1-22 with "
                "compression='zstd' (--compression zstd)",
            ),
            problem("shuffle", isinstance(self.shuffle, bool), "True or False"),
            problem(
                "seed",
                self.seed is None or spec.is_shuffle_seed(self.seed),
                f"None or an integer in [0, 2**{SEED_BITS})",
            ),
            problem("workers", _is_int(self.workers) and self.workers >= 1, "an integer >= 1"),
            problem("processes", isinstance(self.processes, bool), "True or False"),
            problem("on_error", self.on_error in _ON_ERROR and isinstance(self.on_error, str), "'stop' or 'skip'"),
            problem("progress", self.progress is None or isinstance(self.progress, bool), "True, False or None"),
            problem("overwrite", isinstance(self.overwrite, bool), "True or False"),
            problem("allow_empty_splits", isinstance(self.allow_empty_splits, bool), "True or False"),
            *self._shard_problems(),
        ]

    def _shard_problems(self) -> list[str | None]:
        """The sentences for a ``shard_size`` or ``samples_per_shard`` the sharded writer refuses."""
        problems: list[str | None] = []
        for name, parse, value in (
            ("shard_size", parse_shard_size, self.shard_size),
            ("samples_per_shard", parse_samples_per_shard, self.samples_per_shard),
        ):
            if value is not None:
                try:
                    parse(value, name)
                except ParameterError as exc:
                    problems.append(str(parameter_error(name, str(exc))))
        return problems

    @property
    def sharded(self) -> bool:
        """Whether the output is a sharded dataset (a folder, SPEC §12.4): ``shard_size`` or ``samples_per_shard``."""
        return self.shard_size is not None or self.samples_per_shard is not None

    def _zstd_problem(self) -> str | None:
        """The sentence for ``compression="zstd"`` where the zstd filter cannot be loaded (no hdf5plugin), else None."""
        if self.compression != "zstd" or filter_available(ZSTD_FILTER):
            return None
        return str(
            parameter_error(
                "compression",
                "compression='zstd' (--compression zstd) needs the hdf5plugin package, which is not installed: "
                f"{ZSTD_INSTALL}, or use compression='gzip' (--compression gzip)",
            )
        )

    @classmethod
    def pick(cls, arguments: Mapping[str, Any]) -> ConvertOptions:
        """The shared options (and :data:`PIPELINE_OPTIONS`) among a converter's arguments (its ``locals()``), checked.

        Parameters
        ----------
        arguments
            Name -> value; names that are not options of this class are left out.

        Returns
        -------
        ConvertOptions
            The options given, defaults for the others.

        Raises
        ------
        h5ml.errors.ParameterError
            If a value is wrong (see the class).
        """
        return cls(**{name: arguments[name] for name in _FIELDS if name in arguments})

    def seeded(self) -> ConvertOptions:
        """These options with a drawn seed when ``shuffle`` is set without one (recorded as ``shuffle_seed``, §7.6)."""
        if self.shuffle and self.seed is None:
            return dataclasses.replace(self, seed=draw_seed())
        return self

    @property
    def shuffle_seed(self) -> int | None:
        """The seed each split records (§5.3): ``seed`` when shuffling, else None (call :meth:`seeded` first)."""
        return self.seed if self.shuffle else None

    def writer_options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`h5ml.Writer` these options give: compression and its level.

        With a shard option also ``shard_size``, ``samples_per_shard`` and ``overwrite``: ``h5ml.Writer`` then
        makes a :class:`h5ml.writer.sharded.ShardedWriter`, the one place where a converter's writer becomes a
        sharded one (SPEC §12.4).
        """
        options: dict[str, Any] = {"compression": self.compression, "compression_opts": self.level}
        if self.sharded:
            options.update(
                shard_size=self.shard_size, samples_per_shard=self.samples_per_shard, overwrite=self.overwrite
            )
        return options


#: The options that write a sharded dataset (SPEC §12.4), streamed shard by shard: taken by every converter but
#: those of in-memory arrays (``.npz``/``.npy``, :func:`h5ml.ingest.convert_arrays`), which refuse them by name.
SHARD_OPTIONS: Final = ("shard_size", "samples_per_shard")
#: The options only the converters writing through :func:`h5ml.ingest.pipeline.ingest` take (folders, HDF5).
PIPELINE_OPTIONS: Final = ("allow_empty_splits", *SHARD_OPTIONS)
#: Every option of :class:`ConvertOptions`.
_FIELDS: Final = tuple(field.name for field in dataclasses.fields(ConvertOptions))
#: The names of the options every converter takes, in the order the converters' signatures and docstrings list them.
SHARED_OPTIONS: Final = tuple(name for name in _FIELDS if name not in PIPELINE_OPTIONS)
