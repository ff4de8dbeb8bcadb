"""What ``h5ml.Writer(...)`` makes: a plain writer, or with a shard option a sharded one (SPEC §12.4).

:class:`WriterFactory` is the base of :class:`h5ml.writer.streaming.Writer`;
its ``__new__`` returns a :class:`h5ml.writer.sharded.ShardedWriter` when
``shard_size=`` or ``samples_per_shard=`` is given (not None), so that one
name writes both forms: ``h5ml.Writer("d.h5", ...)`` a file,
``h5ml.Writer("d/", ..., shard_size="1GiB")`` the folder of a sharded
dataset. ``isinstance(w, h5ml.Writer)`` stays true for every plain writer and
is false for a sharded one (``isinstance(w, h5ml.ShardedWriter)``), which
writes a folder, not a file, and takes ``overwrite=``.
"""

from __future__ import annotations

from typing import Any, Self

__all__ = ["WriterFactory"]


class WriterFactory:
    """Base of :class:`h5ml.Writer` whose construction makes a sharded writer when asked (see the module)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """A new instance of ``cls``; with ``shard_size=`` or ``samples_per_shard=`` a ``ShardedWriter`` instead.

        Python then skips ``cls.__init__``: the sharded writer, not an instance of ``cls``, is already made.
        """
        if kwargs.get("shard_size") is None and kwargs.get("samples_per_shard") is None:
            return super().__new__(cls)
        from h5ml.writer.sharded import ShardedWriter  # it builds on the plain writer: imported when used

        return ShardedWriter(*args, **kwargs)  # type: ignore[return-value]
