"""The `adacal` command line: a thin Typer layer over the library (every command is also a Python call)."""

from __future__ import annotations

from typing import Annotated

import typer

from adacal.version import __version__
from adacal.cli import calibrate, conformal, evaluate, ood, plot, report, shift, train
from adacal.cli.common import OneLineErrorGroup, drop_unreadable_terminal_size, reflow

app = typer.Typer(
    name="adacal",
    cls=OneLineErrorGroup,
    help=(
        "Calibration toolkit: train with calibration-aware losses (AdaFocal), measure calibration error, "
        "fit post-hoc calibrators and check out-of-distribution detection.\n\n"
        "Example: adacal train --loss adafocal --dataset cifar10"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"adacal {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the adacal version and exit."),
    ] = False,
) -> None:
    """Calibration toolkit (AdaFocal, ECE metrics, post-hoc calibrators, OOD detection)."""
    drop_unreadable_terminal_size()  # before any command draws a table


# Each command is a module-level function of its module (options in, one library call, output), registered here.
app.command("train", help=reflow(train.HELP))(train.train)
app.command("evaluate", help=reflow(evaluate.HELP))(evaluate.evaluate)
app.command("calibrate", help=calibrate.HELP)(calibrate.calibrate)
app.command("conformal", help=conformal.HELP)(conformal.conformal)
app.command("ood", help=ood.HELP)(ood.ood)
app.command("shift", help=shift.HELP)(shift.shift)
app.command("report", help=reflow(report.HELP))(report.report)
app.add_typer(plot.plot_app, name="plot", help=plot.HELP)


def main() -> None:
    drop_unreadable_terminal_size()  # before the help text is drawn, too
    app()
