"""Write arrays already in memory to an h5ml file: :func:`convert_arrays` (§4, §5, §6).

``{split: {feature: values}}`` (or ``{feature: values}`` for one split) goes
through :func:`h5ml.write`, with the roles of the conventional feature names
(:data:`h5ml.ingest.features.ROLE_NAMES`) and the conversion's root metadata.
The ``.npz``/``.npy`` files on disk are :mod:`h5ml.ingest.npz`'s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.features import default_roles
from h5ml.ingest.options import ConvertOptions, OnError
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.report import IngestReport
from h5ml.model.values import FeatureSpec, column_length
from h5ml.writer import write

__all__ = ["convert_arrays"]

_UNUSED = "Not used: the arrays are written in one pass, in this thread."


@shared_doc(
    notes={
        "features": "Roles of :data:`h5ml.ingest.features.ROLE_NAMES` are added where none is given.",
        "workers": _UNUSED,
        "processes": _UNUSED,
        "on_error": "Nothing is ever skipped: arrays that do not fit raise.",
        "progress": "Not used: there is no bar for one pass over arrays in memory.",
    }
)
def convert_arrays(
    arrays: Mapping[str, Mapping[str, Any]] | Mapping[str, Any],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Write in-memory arrays to an h5ml file (§4, §5, §6).

    Parameters
    ----------
    arrays
        ``{split: {feature: values}}``, or ``{feature: values}`` for one split
        (named by ``split``). Values as :func:`h5ml.write` takes them: a numeric
        array ``(N, ...)`` (dense), a list or numpy array of ``str`` (string),
        :class:`h5ml.Categorical` or a pandas categorical, a list of arrays
        varying in shape (ragged), a list of ``bytes``. Every feature of a
        split has the same N. Arrays are written in blocks of a few MiB
        (``numpy.memmap`` arrays are therefore never loaded whole).
    output
        The h5ml file to write.
    split
        The split of a flat ``{feature: values}`` mapping.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples written per split and the time taken (nothing is ever skipped).

    Raises
    ------
    IngestError
        If ``arrays`` mixes splits (mappings) and features (arrays), or a
        split's features have different numbers of samples (all are listed).
    {shared_raises}
    h5ml.WriterError, h5ml.EncodingError, h5ml.MetadataError
        As :func:`h5ml.write` (invalid names, values without an encoding,
        invalid metadata). ``output`` is left as it was.
    """
    options = ConvertOptions.pick(locals()).seeded()
    out = check_output(output, options.overwrite)
    start = time.perf_counter()
    if not isinstance(arrays, Mapping) or not arrays:
        raise IngestError(
            f"{out}: arrays must be a non-empty dict {{split: {{feature: array}}}} or {{feature: array}}, "
            f"got {type(arrays).__name__} {arrays!r:.80}"
        )
    nested = [isinstance(v, Mapping) for v in arrays.values()]
    if all(nested):
        splits: dict[str, Mapping[str, Any]] = {str(k): v for k, v in arrays.items()}
    elif not any(nested):
        splits = {split: arrays}
    else:
        kinds = {k: ("dict (a split)" if isinstance(v, Mapping) else type(v).__name__) for k, v in arrays.items()}
        raise IngestError(
            f"{out}: arrays mixes splits (dicts of features) and features (arrays): {kinds}; give "
            "{split: {feature: array}} or {feature: array}"
        )
    samples: dict[str, int] = {}
    for name, columns in splits.items():
        lengths = {feature: column_length(values) for feature, values in columns.items()}
        if len({n for n in lengths.values()}) > 1 or None in lengths.values():
            listed = ", ".join(f"{f}: {'not a sequence' if n is None else n}" for f, n in lengths.items())
            raise IngestError(
                f"{out}: the features of split {name!r} have different numbers of samples or are not arrays "
                f"({listed}); every feature of a split has num_samples samples along its first axis (§5.3)"
            )
        samples[name] = next(iter(lengths.values()), 0) or 0
    write(
        out,
        splits,
        conversion_metadata("Python arrays", None, options.metadata, out),
        shuffle=options.shuffle,
        seed=options.shuffle_seed,
        features=default_roles({f for columns in splits.values() for f in columns}, options.features),
        **options.writer_options(),
    )
    return IngestReport(out, samples=samples, seconds=time.perf_counter() - start)
