"""``h5ml demo``: write scikit-learn's digits as an h5ml file, validate it, show it, train on it.

The steps are :mod:`h5ml.tools.demo`; this module prints them with the
renderings of ``validate`` and ``inspect``.
"""

from __future__ import annotations

import os

import click
from rich.text import Text

from h5ml.tools.commands.inspect import render_summary
from h5ml.tools.commands.validate import exit_code, render_file_report
from h5ml.tools.console import Streams

__all__ = ["demo_command"]


@click.command("demo")
@click.option("--output", default="digits.h5", show_default=True, help="Where to write the demo file.")
@click.option(
    "--train/--no-train",
    default=True,
    show_default=True,
    help="Train small PyTorch and Keras models on the file and print their test accuracy (needs h5ml[torch], h5ml[keras]).",
)
@click.option("--overwrite", is_flag=True, help="Replace --output if it exists.")
@click.pass_obj
def demo_command(streams: Streams, output: str, train: bool, overwrite: bool) -> int:
    """Write scikit-learn's digits as an h5ml file, validate it, show it and train PyTorch and Keras models on it.

    An existing --output (whatever it holds) is replaced only with --overwrite.
    """
    from h5ml.tools import demo
    from h5ml.tools.summary import summarize
    from h5ml.validator.runner import validate

    if os.path.isdir(output):
        raise IsADirectoryError(
            f"{output} is a directory; give --output the path of a file to write, e.g. {output}/digits.h5"
        )
    if os.path.lexists(output) and not overwrite:
        raise FileExistsError(f"{output} exists; give --output another path, or pass --overwrite to replace it")
    path = demo.build_digits(output)
    console = streams.console()
    console.print(Text(f"wrote {path}"))
    file_report = validate(str(path), timeout=demo.VALIDATE_TIMEOUT_S)
    render_file_report(console, file_report, strict=False)
    render_summary(console, summarize(path))
    code = exit_code([file_report], strict=False)
    if train and code == 0:
        console.print(Text(demo.train_torch(path)), soft_wrap=True)  # one line, however long
        console.print(Text(demo.train_keras(path)), soft_wrap=True)
    return code
