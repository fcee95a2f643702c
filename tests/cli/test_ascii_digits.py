"""Numbers typed as text are ASCII digits: `str.isdigit()` is also true of "²" (which int() then refuses with a
traceback) and `\\d` / int() also read "٣" (Arabic-Indic three) or "1_0". Each parser refuses them in one line naming
its option; the CLI prints no traceback."""

from __future__ import annotations

import pytest
from cli_helpers import runner

from adacal.cli import app
from adacal.errors import InputError

NOT_ASCII = ("²", "٣", "1_0", "３", "1²")


@pytest.mark.parametrize("text", [*NOT_ASCII, "1-²", "²-5", "1,²", "3-", "-3", "1--2", "5-4", "1,"])
def test_severities_take_ascii_digits_only(text):
    from adacal.commands.shift import parse_severities

    with pytest.raises(InputError, match=r"^Expected --severities to be integers"):
        parse_severities(text)


def test_severities_that_are_ascii_still_parse_and_a_huge_range_is_refused_at_once():
    from adacal.commands.shift import parse_severities

    assert parse_severities(" 1 - 3 ,5") == [1, 2, 3, 5] and parse_severities("05") == [5]
    with pytest.raises(InputError, match="from 1 to 5"):
        parse_severities("1-100000000000000000")  # refused before a range of 1e17 values is made


@pytest.mark.parametrize("text", ["²", "٣", "1_0", "5,²"])
def test_shift_severities_on_the_command_line_is_one_line(tmp_path, text):
    result = runner.invoke(app, ["shift", str(tmp_path / "run"), "--severities", text, "--device", "cpu"])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "Expected --severities" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["²", "٣", "1_5", "15,²", "+5"])
def test_milestones_take_ascii_digits_only(text):
    from adacal.commands.train import parse_milestones

    with pytest.raises(InputError, match=r"^Expected --milestones to be comma-separated epoch numbers"):
        parse_milestones(text)
    assert parse_milestones(" 15 , 25 ") == (15, 25)


@pytest.mark.parametrize("text", ["٣", "epoch:٣", "٣:5,1", "²"])
def test_update_every_takes_ascii_digits_only(text):
    from adacal.training.update_schedule import parse_update_every

    with pytest.raises(InputError, match="--update-every"):
        parse_update_every(text)
    assert parse_update_every("3").batches_for_epoch(1) == 3


@pytest.mark.parametrize("device", ["cpu:٣", "cuda:٣", "cpu:²", "cuda:²"])
def test_device_names_take_ascii_digits_only(device):
    from adacal.checks import check_device_name
    from adacal.data.loader import resolve_device
    from adacal.training.config import TrainConfig, resolve_config, validate_config

    with pytest.raises(InputError, match="--device"):
        check_device_name(device)
    with pytest.raises(InputError, match="--device"):
        resolve_device(device)
    with pytest.raises(InputError, match="device"):
        validate_config(resolve_config(TrainConfig(dataset="digits", device=device)))


@pytest.mark.parametrize("name", ["COLUMNS", "LINES"])
def test_a_terminal_size_rich_cannot_read_is_left_out_not_a_traceback(name):
    result = runner.invoke(app, ["evaluate", "--help"], env={name: "²"})
    assert result.exit_code == 0 and "Traceback" not in result.output and "Usage" in result.output
