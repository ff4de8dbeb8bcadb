"""The splits and features of the file being written: :class:`SplitRegistry` (§5.1, §5.3, §6.1).

The registry holds every :class:`~h5ml.writer.sinks.SplitSink` of the file
and decides what may be added to it, with the writer's ``features=`` options
(:class:`~h5ml.model.values.SpecTable`) and, in append mode, the options of
the file's features (:func:`~h5ml.writer.existing.inherited_spec`):

- :meth:`SplitRegistry.add_split` creates a split's group;
- :meth:`SplitRegistry.add_feature` declares a feature from explicit options,
  :meth:`SplitRegistry.infer_features` from whole columns of values;
- :meth:`SplitRegistry.admit` checks a batch against its split and turns it
  into stored form (:class:`Admitted`) without changing anything;
  :meth:`SplitRegistry.take` then registers what the batch creates;
- :meth:`SplitRegistry.check_specs_used` refuses ``features=`` keys that
  applied to no feature, when the file is finished.

A split's features are fixed by its first batch (§5.3): every later batch
names exactly them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import h5py

from h5ml.errors import WriterError
from h5ml.model.layout import Layout, declared_layout, feature_attrs, infer_layout
from h5ml.model.values import FeatureSpec, SpecTable
from h5ml.spec.attrs import write_attr
from h5ml.writer.arguments import (
    check_compression,
    check_expected_samples,
    check_lengths,
    check_name,
    check_seed,
    check_text,
    located,
)
from h5ml.writer.batches import Batch, normalize
from h5ml.writer.existing import Existing, inherited_spec
from h5ml.writer.sinks import FeatureSink, SplitSink

__all__ = ["Admitted", "SplitRegistry"]


@dataclass
class Admitted:
    """A batch checked against its split, in stored form; nothing of it is registered yet.

    Attributes
    ----------
    split
        The split's name.
    new
        The features the batch creates (its split had no samples), by name.
    parts
        Every feature's values in stored form, by name, sorted.
    n
        The number of samples of the batch (0 for an empty batch).
    """

    split: str
    new: dict[str, FeatureSink]
    parts: dict[str, Batch]
    n: int


class SplitRegistry:
    """The splits of the file being written, and the features declared or inferred for them (§5, §6.1).

    Parameters
    ----------
    h5file
        The file being written (split groups are created in it).
    path
        The target, for error messages.
    compression
        The writer's compression, ``"gzip"`` or ``None`` (a feature may override it).
    checksums
        ``checksums=`` of the writer: its chunk checksums are written on close (SPEC §8.4), or removed.
    specs
        The writer's ``features=`` options.
    existing
        Append mode: the splits of the file and the options of its features
        (:func:`~h5ml.writer.existing.load_existing`); empty for a new file.
    """

    def __init__(
        self,
        h5file: h5py.File,
        path: str,
        compression: str | None,
        specs: SpecTable,
        existing: Existing,
        checksums: bool = True,
    ) -> None:
        self._file = h5file
        self.path = path
        self._compression = compression
        #: Whether the finished file gets its chunk checksums (SPEC §8.4), or has them all removed.
        self.checksums = bool(checksums)
        self._specs = specs
        self._splits: dict[str, SplitSink] = existing.splits
        #: Append mode: the options of the file's features by name, for the same feature of a new split.
        self._inherited: dict[str, FeatureSpec] = existing.inherited

    def splits(self) -> list[SplitSink]:
        """Every split, in the order they were loaded or added."""
        return list(self._splits.values())

    def add_split(
        self, name: str, description: str | None, shuffle_seed: int | None, expected_samples: int | None
    ) -> SplitSink:
        """Check a new split's arguments and create its group (see :meth:`h5ml.writer.streaming.Writer.add_split`)."""
        where = self.path
        check_name(name, "split", where, "/")
        hdf5_path = f"/{name}"
        if name in self._splits:
            raise WriterError(f"{where}: split {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        if description is not None:
            check_text(description, f"the description of {hdf5_path}", where, hdf5_path)
        seed = None if shuffle_seed is None else check_seed(shuffle_seed, f"shuffle_seed of {hdf5_path}", where)
        expected = check_expected_samples(expected_samples, where, hdf5_path)
        group = self._file.create_group(name)
        if description is not None:
            write_attr(group, "description", description)
        if seed is not None:
            write_attr(group, "shuffle_seed", seed)
        self._splits[name] = split = SplitSink(name, group, expected_samples=expected)
        return split

    def drop_shuffle_seed(self, name: str) -> None:
        """Remove the ``shuffle_seed`` of split ``name`` (see :meth:`h5ml.writer.streaming.Writer.drop_shuffle_seed`)."""
        if name not in self._splits:
            raise WriterError(f"{self.path}: no split /{name} to drop the shuffle_seed of", path=self.path)
        group = self._splits[name].group
        if "shuffle_seed" in group.attrs:
            del group.attrs["shuffle_seed"]

    def _split(self, name: str) -> SplitSink:
        """The split ``name``, created (without description or seed) if it does not exist."""
        if name not in self._splits:
            return self.add_split(name, None, None, None)
        return self._splits[name]

    def add_feature(
        self, split: str, name: str, encoding: str, sample_shape: Sequence[int], declared: FeatureSpec
    ) -> None:
        """Declare one feature from explicit options (see :meth:`h5ml.writer.streaming.Writer.add_feature`)."""
        path = self.path
        check_name(split, "split", path, "/")
        check_name(name, "feature", path, f"/{split}")
        hdf5_path = f"/{split}/{name}"
        where = f"{path}:{hdf5_path}"
        configured = self._specs.get(split, name)
        conflicts = configured.conflicts(declared)
        if conflicts:
            raise WriterError(
                f"{where}: add_feature and the writer's features= option disagree on {conflicts}; give each option "
                "in one place, or the same value in both",
                path=path,
                hdf5_path=hdf5_path,
            )
        fspec = inherited_spec(self._inherited, name, configured.merged(declared))
        with located(path, hdf5_path):
            layout = declared_layout(
                encoding,
                dtype=fspec.dtype,
                sample_shape=sample_shape,
                sample_ndim=fspec.sample_ndim,
                class_names=fspec.class_names,
                where=where,
            )
            feature = self._new_feature(split, name, layout, fspec)
        self._split(split).features[name] = feature
        self._specs.mark_used(split, name)

    def infer_features(self, split: str, columns: Mapping[str, Any]) -> None:
        """Declare features from whole columns of values (see :meth:`h5ml.writer.streaming.Writer.infer_features`)."""
        self._check_columns(split, columns, f"the columns of /{split}")
        new = {name: self._inferred(split, name, values) for name, values in columns.items()}
        state = self._split(split)
        for name, feature in new.items():
            state.features[name] = feature
            self._specs.mark_used(split, name)

    def _check_columns(self, split: str, columns: Any, what: str) -> None:
        """Refuse a bad split name, ``columns`` that are not a mapping ``{feature: values}`` (``what`` names them), or
        a bad feature name (§5.1.1)."""
        path = self.path
        check_name(split, "split", path, "/")
        if not isinstance(columns, Mapping):
            raise WriterError(
                f"{path}: {what} must be a dict {{feature: values}}, got a {type(columns).__name__}",
                path=path,
                hdf5_path=f"/{split}",
            )
        for key in columns:
            check_name(key, "feature", path, f"/{split}")

    def _inferred(self, split: str, name: str, values: Any) -> FeatureSink:
        """A new feature of ``split`` whose stored form is inferred from ``values`` (§6); nothing is registered."""
        path = self.path
        hdf5_path = f"/{split}/{name}"
        fspec = inherited_spec(self._inherited, name, self._specs.get(split, name))
        with located(path, hdf5_path):
            layout = infer_layout(values, fspec, f"{path}:{hdf5_path}")
            return self._new_feature(split, name, layout, fspec)

    def _new_feature(self, split: str, name: str, layout: Layout, fspec: FeatureSpec) -> FeatureSink:
        """Check and build a new feature of a split that has no samples yet (§5.3, §6.1); nothing is registered."""
        hdf5_path = f"/{split}/{name}"
        where = self.path
        state = self._splits.get(split)
        if state is not None and state.frozen:
            raise WriterError(
                f"{where}: cannot add feature {hdf5_path}: split /{split} already has its features "
                f"{state.feature_names} (every feature of a split has num_samples samples, §5.3)",
                path=where,
                hdf5_path=hdf5_path,
            )
        if state is not None and name in state.features:
            raise WriterError(f"{where}: feature {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        compression = self._compression if fspec.compression is None else fspec.compression or None
        check_compression(compression, where)
        attrs = feature_attrs(layout, fspec, f"{where}:{hdf5_path}")
        feature = FeatureSink(split, name, layout, attrs, compression)
        feature.reset_fingerprint_and_stats()
        return feature

    def admit(self, split: str, batch: Mapping[str, Any]) -> Admitted:
        """Check a batch against its split and put it in stored form; nothing changes (§5.3, §6).

        Parameters
        ----------
        split
            The split's name (it need not exist yet).
        batch
            ``{feature: values}`` as :meth:`h5ml.writer.streaming.Writer.append` takes it.

        Returns
        -------
        Admitted
            The batch in stored form, with the features it creates.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`h5ml.writer.streaming.Writer.append`. An existing split
            of the file is loaded (its features re-read) first; that changes
            nothing the caller sees.
        """
        where = self.path
        self._check_columns(split, batch, f"a batch of /{split}")
        state = self._splits.get(split)
        if state is not None and state.stored:
            state.load_stored(where)
        declared: dict[str, FeatureSink] = {} if state is None else state.features
        frozen = state is not None and state.frozen
        names = set(batch)
        if frozen and names != set(declared):
            missing, extra = sorted(set(declared) - names), sorted(names - set(declared))
            raise WriterError(
                f"{where}: a batch of /{split} must hold exactly its features {sorted(declared)}; "
                f"missing {missing}, unexpected {extra}",
                path=where,
                hdf5_path=f"/{split}",
            )
        missing = sorted(set(declared) - names)
        if missing:
            raise WriterError(
                f"{where}: the batch of /{split} lacks declared features {missing}", path=where, hdf5_path=f"/{split}"
            )
        new = {name: self._inferred(split, name, batch[name]) for name in sorted(names - set(declared))}
        parts: dict[str, Batch] = {}
        for name in sorted(names):
            layout = (declared.get(name) or new[name]).layout
            with located(where, f"/{split}/{name}"):
                parts[name] = normalize(layout, batch[name], f"{where}:/{split}/{name}")
        counts = {name: p.n for name, p in parts.items()}
        check_lengths(counts, f"a batch of /{split}", "every feature of a split grows together (§5.3)", where, split)
        if parts and not frozen:
            self._check_split_specs(split, sorted(names))
        return Admitted(split, new, parts, next(iter(counts.values()), 0))

    def take(self, admitted: Admitted) -> SplitSink:
        """Register what an admitted batch creates: its split, its new features; fix the split's features (§5.3).

        A split of the file that gets samples loses its ``shuffle_seed``: the
        seed no longer describes the stored order (§7.6).
        """
        state = self._split(admitted.split)
        for name, feature in admitted.new.items():
            state.features[name] = feature
            self._specs.mark_used(admitted.split, name)
        state.frozen = state.frozen or bool(admitted.parts)
        if admitted.n:
            state.drop_shuffle_seed()
        return state

    def _check_split_specs(self, split: str, features: list[str]) -> None:
        """Refuse ``"split/feature"`` keys of ``features=`` that name none of a split's (now fixed) features."""
        unused = [key for key in self._specs.unused(split) if key.partition("/")[2] not in features]
        if unused:
            where = self.path
            raise WriterError(
                f"{where}: features= names {unused}, but the features of /{split} are {features}; fix the key(s) "
                "(a split's features are fixed by its first batch)",
                path=where,
                hdf5_path=f"/{split}",
            )

    def check_specs_used(self) -> None:
        """Refuse ``features=`` keys that applied to no feature this writer created.

        Raises
        ------
        WriterError
            If a key is unused; the message lists the features created.
        """
        unused = self._specs.unused()
        if unused:
            where = self.path
            created = sorted(f"{s.name}/{f}" for s in self._splits.values() for f in s.features if f not in s.stored)
            raise WriterError(
                f"{where}: features= names {unused}, which match no feature this writer created ({created}); "
                "options apply to new features (inferred from their first batch or declared with add_feature), "
                "not to features already in the file. The file was not written: fix the keys",
                path=where,
            )
