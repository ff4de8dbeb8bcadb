"""The ``--storage-option KEY=VALUE`` flag of the commands that read URLs (``h5ml validate``, ``h5ml inspect``).

Each ``--storage-option`` gives one option of the fsspec file system of the
URLs on the command line (s3fs's ``key``, ``secret``, ``endpoint_url``,
``anon``, ...); a dotted key nests (``client_kwargs.region_name=eu-west-1``)
and a value that is JSON (``true``, ``3``, ``{"a": 1}``) is that value, any
other a string. Without the flag, the file system reads its credentials from
the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ENDPOINT_URL`` for s3fs). This module implements no SPEC clause: it is
the command line's form of ``storage_options=`` (:mod:`h5ml.model.remote`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from h5ml.model.remote import is_url

__all__ = ["parse_storage_options", "storage_option_flag"]

_F = TypeVar("_F", bound=Callable[..., Any])


def storage_option_flag(command: _F) -> _F:
    """Add the repeatable ``--storage-option KEY=VALUE`` flag (parameter ``storage_options``) to a command."""
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="An option of the fsspec file system of the URLs given (s3fs: key, secret, endpoint_url, anon; "
        "client_kwargs.region_name nests); repeat it for more. Without it, credentials come from the environment "
        "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL).",
    )(command)


def parse_storage_options(pairs: Sequence[str], locations: Sequence[str]) -> dict[str, Any] | None:
    """The fsspec options of ``--storage-option KEY=VALUE`` flags, or None when none was given.

    Parameters
    ----------
    pairs
        The flags' values, in order (a later key replaces an earlier one).
    locations
        The files (paths or URLs) of the command: the flags need a URL among them.

    Returns
    -------
    dict or None

    Raises
    ------
    click.UsageError
        If a value has no ``=`` or an empty key, or no location is a URL (the options would be ignored).
    """
    if not pairs:
        return None
    if not any(is_url(location) for location in locations):
        raise click.UsageError(
            "--storage-option is for URLs (s3://, gs://, az://, https://, ...), and no FILE given is one: "
            "drop --storage-option, or give the files' URLs"
        )
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip() or any(not part for part in key.split(".")):
            raise click.UsageError(f"--storage-option takes KEY=VALUE (such as endpoint_url=http://...), got {pair!r}")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        *parents, last = key.strip().split(".")
        target = options
        for part in parents:
            nested = target.setdefault(part, {})
            if not isinstance(nested, dict):
                raise click.UsageError(f"--storage-option {pair!r}: {part!r} was given a value already, not options")
            target = nested
        target[last] = value
    return options
