"""What every subcommand shares: turning library errors into one line on stderr and a non-zero exit."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
import typer.core

try:  # Typer >= 0.20 vendors click; its exceptions are not the `click` package's.
    from typer import _click as click
except ImportError:  # pragma: no cover - older Typer uses click itself
    import click

from adacal.errors import AdacalError

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

F = TypeVar("F", bound=Callable[..., Any])

ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Write the output even where it replaces one of this command's inputs or a file 'adacal train' wrote "
        "in a run folder (refused otherwise).",
    ),
]


_HEADLINE_METRICS = ("error", "ece_em", "ece_ew", "nll")
_NOT_PERCENT = ("nll", "brier", "brier_positive")  # nats and squared errors; every other metric is a fraction in %


def number(value: float, decimals: int) -> str:
    """`value` with `decimals` decimals, or in scientific notation from 10⁶ on (the NLL of logits near the float
    limit would otherwise print hundreds of digits)."""
    return f"{value:.3g}" if abs(value) >= 1e6 else f"{value:.{decimals}f}"


# How every table shows an ECE-DEBIAS clipped at 0, and the note that says why (evaluate's note adds the estimate).
DEBIAS_CLIPPED = "≤ 0"
DEBIAS_NOTE = ("ECE-DEBIAS ≤ 0: its estimate of the squared error is below the estimator's resolution (the bias "
               "correction exceeds the squared gaps); it is no measured perfect calibration")


def debias_clipped(value: Any) -> bool:
    """Whether an ECE-DEBIAS value is the estimator's clip: the root of max(estimate, 0) is exactly 0 only when the
    debiased estimate of the squared error is ≤ 0 (`results.ece_debias_squared` in evaluate's report).

    >>> debias_clipped(0.0), debias_clipped(1e-9), debias_clipped(None)
    (True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0.0


def metric_cell(key: str, value: Any, text: str) -> str:
    """A table's cell for metric `key` (a report key: ece_debias): `text`, the value as the table formats it, or
    "≤ 0" for a clipped ECE-DEBIAS, the same in every table (evaluate, train, calibrate, shift).

    >>> metric_cell("ece_debias", 0.0, "0.00"), metric_cell("ece_em", 0.0, "0.00")
    ('≤ 0', '0.00')
    """
    return DEBIAS_CLIPPED if key == "ece_debias" and debias_clipped(value) else text


def drop_unreadable_terminal_size() -> None:
    """Leave out a $COLUMNS or $LINES that is not ASCII digits: rich reads them with `str.isdigit()`, true of "²",
    and then fails in int() with a traceback; without them it asks the terminal (or takes its default width)."""
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and not (value.isascii() and value.isdigit()):
            del os.environ[name]


def table_console(*, stderr: bool = False, wide: int = 160) -> Any:
    """The rich console a table is printed on: the terminal's width; piped or captured, $COLUMNS when it is set, else
    `wide` columns (a file of the output keeps whole rows). Tables are laid out to fit 80 columns and up."""
    from rich.console import Console

    console = Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    if console.is_terminal or (columns.isascii() and columns.isdigit()):  # "²".isdigit() too, which int() refuses
        return console
    return Console(stderr=stderr, width=wide)


def metrics_line(metrics: dict[str, Any], names: Any = None) -> str:
    """The one summary line `-q` prints: the metrics a user asked for (`names`, as `--metrics` takes them), else
    error, ECE-EM, ECE-EW (%) and NLL; those that were computed."""
    from adacal.commands import display_name, metric_key, resolve_metric_names

    keys = [metric_key(name) for name in resolve_metric_names(names)] if names else _HEADLINE_METRICS
    parts = []
    for key in keys:
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            label = "error" if key == "error" else display_name(key)
            shown = number(value, 4) if key in _NOT_PERCENT else f"{number(100 * value, 2)}%"
            parts.append(f"{label} {metric_cell(key, value, shown)}")  # a clipped ECE-DEBIAS: ≤ 0, as in the tables
    return "  ".join(parts)


def reflow(help_text: str) -> str:
    """Join a docstring's wrapped lines into paragraphs (Typer keeps single line breaks); indented lines stay as
    typed."""
    paragraphs = []
    for paragraph in help_text.strip().split("\n\n"):
        lines = paragraph.split("\n")
        if any(line.startswith(" ") for line in lines):
            paragraphs.append(paragraph)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def fail(message: str, code: int = EXIT_USER_ERROR) -> typer.Exit:
    """Print `Error: message` on stderr as one line and return the Exit to raise."""
    one_line = " ".join(str(message).split())
    typer.echo(f"Error: {one_line}", err=True)
    return typer.Exit(code=code)


def guarded(command: F) -> F:
    """Run a subcommand so that an AdacalError becomes `Error: ...` and exit code 2; bugs keep their traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # Warnings (numpy, matplotlib, scikit-learn) are held so that nothing prints ahead of an `Error:` line; after
        # a successful run (or a bug's traceback) they are shown on stderr as Python would have shown them.
        with warnings.catch_warnings(record=True) as caught:
            try:
                _check_path_names(kwargs)
                result = command(*args, **kwargs)
            except AdacalError as exc:
                raise fail(str(exc)) from None
            except BaseException:
                _show(caught)
                raise
        _show(caught)
        return result

    return wrapper  # type: ignore[return-value]


def _check_path_names(kwargs: dict[str, Any]) -> None:
    """Every path the user typed, input or output, has names the file system can hold: a name over its limit would
    otherwise surface as an OSError (ENAMETOOLONG) from wherever the path is first touched."""
    from pathlib import Path

    from adacal.commands import check_name_lengths

    try:  # Typer >= 0.20 vendors click
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - older Typer uses click itself
        from click import get_current_context

    context = get_current_context(silent=True)
    params = {param.name: param for param in context.command.params} if context is not None else {}
    for name, value in kwargs.items():
        paths = value if isinstance(value, (list, tuple)) else [value]
        for path in paths:
            if isinstance(path, Path) and str(path) != "-":
                param = params.get(name)
                is_option = getattr(param, "param_type_name", None) == "option"
                flag = param.opts[0] if is_option else (getattr(param, "metavar", None) or name.upper())
                check_name_lengths(path, flag)


def _show(caught: list[warnings.WarningMessage]) -> None:
    seen = set()
    for message in caught:
        key = (str(message.message), message.category, message.filename, message.lineno)
        if key in seen:
            continue
        seen.add(key)
        sys.stderr.write(warnings.formatwarning(message.message, message.category, message.filename, message.lineno))


class OneLineErrorGroup(typer.core.TyperGroup):
    """A Typer group whose usage errors (bad option values, unknown options) print one `Error:` line, not a panel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from adacal.cli.help_types import readable_types

        readable_types(self)  # help shows TEXT / INTEGER / PATH, not <str> / <list[Path]>

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        try:
            result = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                  **extra)
        except click.exceptions.ClickException as exc:
            if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
                sys.exit(0)  # the help text is already printed: a bare `adacal` asks for it
            message = exc.format_message()
            ctx = getattr(exc, "ctx", None)
            if ctx is not None and isinstance(exc, click.exceptions.UsageError):
                message = f"{message} (see '{ctx.command_path} --help')"
            fail(message, exc.exit_code)
            sys.exit(exc.exit_code)
        except (typer.Abort, KeyboardInterrupt):
            fail("Interrupted.", EXIT_INTERRUPTED)
            sys.exit(EXIT_INTERRUPTED)
        # In non-standalone mode click returns the code of a typer.Exit instead of exiting.
        sys.exit(result if isinstance(result, int) else 0)
