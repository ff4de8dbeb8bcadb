"""``h5ml demo``: write scikit-learn's digits as an h5ml file, validate it, show it, train on it.

The steps are :mod:`h5ml.tools.demo`; this module prints them with the
renderings of ``validate`` and ``inspect``.
"""

from __future__ import annotations

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
@click.pass_obj
def demo_command(streams: Streams, output: str, train: bool) -> int:
    """Write scikit-learn's digits as an h5ml file, validate it, show it and train PyTorch and Keras models on it."""
    from h5ml.tools import demo
    from h5ml.tools.summary import summarize
    from h5ml.validator.runner import validate

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
