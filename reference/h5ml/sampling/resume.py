"""Resume states and the epoch cursor: where a training run stands in its epochs, saved and restored (§8.3).

Resume states
-------------
:meth:`h5ml.sampling.Sampler.state_dict` records where an epoch stands
(seed, epoch, batches handed to the training loop) together with the settings
that decide the order and the file's fingerprint (§8.3).
:meth:`~h5ml.sampling.Sampler.remaining_batches` gives back exactly the
batches not yet handed out, on any rank, and refuses a state taken on another
file or with other settings. The state holds no rank: all ranks hand out the
same number of batches, so one saved state serves all.

Which settings decide the order depends on the shuffle mode (:func:`order_settings`):
``num_samples``, ``batch_size``, ``shuffle``, ``world_size``, ``drop_last``,
``pool_batches`` (None without length buckets) and ``full_order``
(``"feistel"`` for a ``"full"`` order computed per batch above the array
limit, :attr:`h5ml.sampling.Sampler.full_order`; None otherwise, as in a
state written before it existed), ``shard_count`` (the shards of a sharded
split, None for a file: SPEC §12.5) in every mode, ``chunk_rows``,
``window_chunks`` and ``shards_in_flight`` (None for a file) in ``"chunk"``
mode only; the fingerprint of a sharded split is its index fingerprint
(§12.3), so a state saved on one index is refused on another. A state
records the settings its mode does not use as None, and is checked against
the settings of its mode only: a ``"none"`` or ``"full"`` state loads
whatever the chunking of the file or of the sampler that resumes it.

The epoch cursor
----------------
:class:`EpochCursor` is where a training loop stands: the epoch, the batches
of it skipped after a resume, and those handed out since. The PyTorch batch
sampler and the Keras dataset are both epoch cursors, so one state layout,
written and read by the same code, serves both: a state saved by one adapter
resumes in the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from h5ml.sampling.counts import count
from h5ml.sampling.epoch_batches import EpochBatches

if TYPE_CHECKING:
    from h5ml.sampling.orders import Sampler

__all__ = ["SETTINGS", "STATE_VERSION", "EpochCursor", "ResumePoint", "check_state", "make_state", "order_settings"]

#: Version of the resume-state layout written by :func:`make_state`.
STATE_VERSION: Final = 1
#: Keys of a resume state that say where the run stands, besides the settings.
_POSITION: Final = ("version", "fingerprint", "seed", "epoch", "batches_done")
#: Keys of a resume state holding the sampler's settings, in the order a state lists them.
SETTINGS: Final = (
    "num_samples",
    "batch_size",
    "shuffle",
    "world_size",
    "drop_last",
    "chunk_rows",
    "window_chunks",
    "pool_batches",
    "full_order",
    "shard_count",
    "shards_in_flight",
)
#: Settings that decide the order in ``"chunk"`` mode only.
_CHUNK_SETTINGS: Final = ("chunk_rows", "window_chunks", "shards_in_flight")
#: Settings added after version 1 of the state, with the value a state without them stands for.
_LATER_SETTINGS: Final[dict[str, Any]] = {
    "pool_batches": None,
    "full_order": None,
    "shard_count": None,
    "shards_in_flight": None,
}

IndexArray = npt.NDArray[np.int64]
_T = TypeVar("_T")


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed epoch starts.

    Attributes
    ----------
    epoch
        The epoch the state was taken in.
    batches_done
        The batches of that epoch already handed to the training loop; the
        next batch to hand out is ``batches(epoch)[batches_done]``.
    """

    epoch: int
    batches_done: int


def order_settings(shuffle: str) -> tuple[str, ...]:
    """Return the settings that decide the epoch orders in one shuffle mode: those a resume state is checked on.

    Parameters
    ----------
    shuffle
        ``"none"``, ``"chunk"`` or ``"full"``.

    Returns
    -------
    tuple of str
        Keys of :data:`SETTINGS`: all of them for ``"chunk"``; without
        ``chunk_rows`` and ``window_chunks`` for the other modes.
    """
    return tuple(key for key in SETTINGS if shuffle == "chunk" or key not in _CHUNK_SETTINGS)


def _in_epoch(sampler: Sampler, batches_done: int) -> int:
    if batches_done > sampler.num_batches:
        raise ValueError(
            f"batches_done={batches_done} exceeds the {sampler.num_batches} batches of an epoch of {sampler!r}"
        )
    return batches_done


def make_state(sampler: Sampler, epoch: int, batches_done: int) -> dict[str, Any]:
    """Return the resume state of ``sampler`` after ``batches_done`` batches of ``epoch`` were handed out.

    See :meth:`h5ml.sampling.Sampler.state_dict`, which calls it.

    Raises
    ------
    ValueError
        If ``epoch`` is negative or ``batches_done`` is out of range.
    """
    epoch = count(epoch, "epoch", 0)
    batches_done = _in_epoch(sampler, count(batches_done, "batches_done", 0))
    used = order_settings(sampler.shuffle)
    return {
        "version": STATE_VERSION,
        "fingerprint": sampler.fingerprint,
        "seed": sampler.seed,
        "epoch": epoch,
        "batches_done": batches_done,
        **{key: getattr(sampler, key) if key in used else None for key in SETTINGS},
    }


def check_state(sampler: Sampler, state: Mapping[str, Any]) -> tuple[int, ResumePoint]:
    """Check a resume state against ``sampler`` and return its seed and where it resumes.

    See :meth:`h5ml.sampling.Sampler.load_state_dict`, which calls it and
    adopts the seed.

    Returns
    -------
    seed : int
        The state's seed.
    point : ResumePoint
        The state's epoch and the batches of it already handed out.

    Raises
    ------
    ValueError
        If a key is missing, the version is unknown, the fingerprint differs
        (a state taken on another file), or a setting that decides the order
        in the sampler's mode (:func:`order_settings`) differs from the
        sampler's.
    """
    state = {**_LATER_SETTINGS, **state}
    missing = [key for key in (*_POSITION, *SETTINGS) if key not in state]
    if missing:
        raise ValueError(f"not a sampler resume state: missing {', '.join(missing)}; pass a Sampler.state_dict()")
    if state["version"] != STATE_VERSION:
        raise ValueError(
            f"resume state version {state['version']!r} is not supported (this h5ml writes {STATE_VERSION})"
        )
    if state["fingerprint"] != sampler.fingerprint:
        raise ValueError(
            f"the resume state was taken on other data (another file or split): it records "
            f"{state['fingerprint']!r}, this sampler reads {sampler.fingerprint!r}; resume on the file and split "
            "the state was saved with"
        )
    differ = [
        f"{key}: state {state[key]!r}, sampler {getattr(sampler, key)!r}"
        for key in order_settings(sampler.shuffle)
        if state[key] != getattr(sampler, key)
    ]
    if differ:
        raise ValueError(
            "the resume state was taken with other sampling settings ("
            + "; ".join(differ)
            + "); rebuild the sampler with the state's settings to resume"
        )
    seed = count(state["seed"], "seed", 0)
    epoch = count(state["epoch"], "epoch", 0)
    return seed, ResumePoint(epoch, _in_epoch(sampler, count(state["batches_done"], "batches_done", 0)))


class EpochCursor:
    """Where a training loop stands: the epoch, the batches of it skipped after a resume, and those handed out.

    The framework adapters are epoch cursors: ``h5ml_torch.H5MLBatchSampler``
    and ``h5ml_keras.H5MLPyDataset`` inherit this class, so that epochs,
    resume points and states behave the same in both (see the module
    docstring).

    Parameters
    ----------
    sampler
        The batches of every epoch for this rank.

    Attributes
    ----------
    sampler : h5ml.sampling.Sampler
        The orders.
    epoch : int
        The epoch whose batches are handed out: 0 at first, then as set by
        :meth:`set_epoch`, :meth:`load_state_dict` or :meth:`advance`.
    resume_from : int
        Batches of the current epoch skipped, because they were handed out
        before the state that :meth:`load_state_dict` loaded (0 otherwise).
    """

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self._cache: tuple[tuple[int, int], EpochBatches] | None = None
        self.set_epoch(0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sampler!r}, epoch={self.epoch}, resume_from={self.resume_from})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": None}  # the batches are recomputed from (seed, epoch)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next batches follow; forget a resume point and the batches handed out.

        Parameters
        ----------
        epoch
            The epoch number, >= 0 (e.g. Keras' ``initial_epoch``).

        Raises
        ------
        ValueError
            If ``epoch`` is negative.
        TypeError
            If it is not an integer.
        """
        self.epoch = count(epoch, "epoch", 0)
        self.resume_from = 0
        self._handed: set[int] = set()

    @property
    def num_batches(self) -> int:
        """Batches left to hand out in the current epoch: all of them, or those after the resume point."""
        return self.sampler.num_batches - self.resume_from

    def __len__(self) -> int:
        return self.num_batches

    def _epoch_batches(self) -> EpochBatches:
        # Keyed by the seed too: load_state_dict may give the sampler another seed for the same epoch.
        # One order per epoch is kept (at most one array of N entries), never a list of its batches.
        key = (self.sampler.seed, self.epoch)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self.sampler.epoch_batches(self.epoch))
        return self._cache[1]

    def batches(self) -> list[IndexArray]:
        """Return the batches left in the current epoch as a list: ``sampler.batches(epoch)[resume_from:]``.

        The list holds the rest of the epoch (O(N) memory); :meth:`iter_batches`
        holds one batch at a time.
        """
        return self._epoch_batches()[self.resume_from :]

    def iter_batches(self) -> Iterator[IndexArray]:
        """Return an iterator over the batches left in the current epoch, computed one at a time.

        The epoch and resume point are those of this call: a later
        :meth:`set_epoch` or :meth:`load_state_dict` does not change what an
        iterator already returned yields. Memory: one batch, and the epoch's
        order (:meth:`h5ml.sampling.Sampler.epoch_batches`).
        """
        batches, start = self._epoch_batches(), self.resume_from
        return (batches[k] for k in range(start, len(batches)))

    def batch(self, index: int) -> IndexArray:
        """Return batch ``index`` of those left in the current epoch (``batches()[index]``).

        Raises
        ------
        IndexError
            If ``index`` is outside ``[0, num_batches)``.
        """
        left = self.num_batches
        if not 0 <= index < left:
            raise IndexError(f"batch {index} is outside the {left} batches of this epoch")
        return self._epoch_batches()[self.resume_from + index]

    def hand_out(self, index: int) -> None:
        """Record that batch ``index`` of those left in the current epoch reached the training loop.

        Count only what the training loop received, not what workers
        prefetched: :attr:`batches_done` counts the batches recorded here.
        """
        self._handed.add(int(index))

    def restart(self) -> None:
        """Begin another pass over the current epoch: forget the batches handed out, keep the resume point."""
        self._handed = set()

    def hand_out_each(self, batches: Iterable[_T]) -> Iterator[_T]:
        """Yield ``batches``, one pass over those left in the current epoch, recording each as it is handed out.

        A batch counts as soon as it is yielded (:meth:`restart` first, then
        :meth:`hand_out` for each): for a loader whose workers read ahead.
        """
        self.restart()
        for index, batch in enumerate(batches):
            self.hand_out(index)
            yield batch

    @property
    def batches_done(self) -> int:
        """Batches of the current epoch handed to the training loop, counted from the epoch's start.

        :attr:`resume_from` plus the batches recorded by :meth:`hand_out`
        since the last :meth:`set_epoch`, :meth:`load_state_dict` or
        :meth:`restart`.
        """
        return self.resume_from + len(self._handed)

    def advance(self) -> bool:
        """Go to the next epoch if every batch of this one was handed out; return whether it did.

        For loops that end an epoch without saying which (Keras calls
        ``on_epoch_end`` after ``steps_per_epoch`` steps too): the order
        changes only after a whole pass, and a resume point holds until its
        epoch is done.
        """
        if len(self._handed) < self.num_batches:
            return False
        self.set_epoch(self.epoch + 1)
        return True

    def state_dict(self, batches_done: int | None = None) -> dict[str, Any]:
        """Return the resume state of the current epoch (:meth:`h5ml.sampling.Sampler.state_dict`).

        Parameters
        ----------
        batches_done
            Batches of the current epoch handed to the training loop, counted
            from the epoch's start (not from a resume point), in ``[0,
            sampler.num_batches]``; by default :attr:`batches_done`. Take the
            state after the training step on the last batch counted, so that
            a resume does not repeat it.

        Returns
        -------
        dict
            Plain values: the seed, epoch, ``batches_done``, the settings that
            decide the order and the file's fingerprint.

        Raises
        ------
        ValueError
            If ``batches_done`` is out of range.
        """
        return self.sampler.state_dict(self.epoch, self.batches_done if batches_done is None else batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume: hand out the rest of the state's epoch (``len()`` shrinks), until the epoch changes.

        The sampler adopts the state's seed, so later epochs continue the
        interrupted run's orders (:meth:`h5ml.sampling.Sampler.load_state_dict`).

        Parameters
        ----------
        state
            A state from :meth:`state_dict`, of either framework adapter or
            of :meth:`h5ml.sampling.Sampler.state_dict` (possibly from
            another rank, another process, or through JSON).

        Raises
        ------
        ValueError
            If the state was taken on another file (its fingerprint, §8.3)
            or with other settings that decide the order.
        """
        point = self.sampler.load_state_dict(state)
        self.epoch, self.resume_from, self._handed = point.epoch, point.batches_done, set()
