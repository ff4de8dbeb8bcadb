"""Which ``dask.distributed`` cluster a sharded write runs on: the current client, a scheduler's address, ``local:N``.

``h5ml convert ... --dask ADDRESS`` (and ``dask=ADDRESS`` in Python) takes
either the address of a running scheduler (``tcp://host:8786``, any address
``distributed.Client`` takes that has a scheme) or ``local:N``: a
``distributed.LocalCluster`` of N worker processes with one thread each and
no dashboard, started for the conversion and closed after it
(:func:`dask_client`). :func:`current_client` is the client
:func:`h5ml.dask.to_h5ml` uses when it is given none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from h5ml.errors import ParameterError
from h5ml.ingest.options import parameter_error

__all__ = ["CONNECT_SECONDS", "current_client", "dask_client", "local_cluster", "parse_address"]

#: How long connecting to a scheduler may take before the conversion gives up.
CONNECT_SECONDS: Final = 30
_LOCAL: Final = re.compile(r"^local:([0-9]+)$")
_SCHEME: Final = re.compile(r"^[a-z][a-z0-9+.-]*://.+$")


def parse_address(address: Any) -> tuple[str, int | None]:
    """Read a ``dask`` address: ``("local", N)`` for ``local:N``, or ``(address, None)`` for a scheduler's URL.

    Raises
    ------
    h5ml.errors.ParameterError
        For anything else (``local:0``, a bare host name), naming ``dask`` (``--dask``).
    """
    text = address.strip() if isinstance(address, str) else None
    local = _LOCAL.match(text) if text is not None else None
    if local is not None and int(local.group(1)) >= 1:
        return "local", int(local.group(1))
    if text is not None and local is None and _SCHEME.match(text):
        return text, None
    raise parameter_error(
        "dask",
        f"dask must be a scheduler's address such as 'tcp://scheduler:8786', or 'local:N' for N >= 1 worker "
        f"processes started on this machine, got {address!r}",
    )


def local_cluster(workers: int) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, no dashboard (``local:N``).

    The scheduler still serves its small HTTP endpoints (health, metrics); they listen on a free port of the
    loopback interface, not on 8787 of every interface, so that several clusters on one machine do not collide.

    Parameters
    ----------
    workers
        The worker processes, >= 1.

    Returns
    -------
    distributed.LocalCluster
        Started; close it (or use it as a context manager).
    """
    from distributed import LocalCluster

    return LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )


@contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` of ``address`` (see the module docstring), closed (and its local cluster) after.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``address`` is not one (:func:`parse_address`).
    OSError
        If the scheduler cannot be reached within :data:`CONNECT_SECONDS`: the message names the address.
    """
    where, workers = parse_address(address)
    try:
        from distributed import Client
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"dask=... (--dask ...) needs the package {exc.name!r}, which is not installed: pip install 'h5ml[dask]'",
            name=exc.name,
        ) from exc

    if workers is not None:
        with local_cluster(workers) as cluster:
            own = Client(cluster, timeout=CONNECT_SECONDS, set_as_default=False)  # type: ignore[no-untyped-call]
            with own:
                yield own
        return
    try:
        client = Client(where, timeout=CONNECT_SECONDS, set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as exc:
        raise OSError(
            f"cannot reach the Dask scheduler at {where} within {CONNECT_SECONDS} s ({exc}); check the address "
            "(dask=... (--dask ...)) and that the scheduler runs, or use local:N"
        ) from exc
    with client:
        yield client


def current_client(client: Any = None) -> Any:
    """``client``, or the current ``distributed`` client (the last one made) when it is None.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``client`` is None and there is no current client: the message says how to start one.
    """
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError as exc:
        raise ParameterError(
            "there is no dask.distributed client to run on: start one first (distributed.Client(), or "
            "Client(LocalCluster(n_workers=4))) or pass client= (parameter client)"
        ) from exc
