"""The command-line shell: version, help for every subcommand, one-line usage errors."""

import pytest

from adacal import __version__
from adacal.cli import app

from cli_helpers import one_line_error, runner

SUBCOMMANDS = ["train", "evaluate", "calibrate", "ood", "plot"]


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"adacal {__version__}"


def test_root_help_lists_every_subcommand():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in SUBCOMMANDS:
        assert name in result.stdout


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_help_has_an_example(name):
    result = runner.invoke(app, [name, "--help"])
    assert result.exit_code == 0
    assert "adacal " + name in " ".join(result.stdout.split())


def test_unknown_subcommand_is_one_line_error():
    one_line_error(runner.invoke(app, ["trian"]))
