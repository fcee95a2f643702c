"""`--help` names value types in words command-line users know, never Python annotations like <list[Path]>."""

import re

import pytest

from adacal.cli import app
from adacal.cli.help_types import type_word

from cli_helpers import runner

COMMANDS = [[], ["train"], ["evaluate"], ["calibrate"], ["ood"], ["plot"], ["plot", "reliability"], ["plot", "gamma"],
            ["plot", "correspondence"], ["plot", "curves"], ["plot", "roc"], ["shift"], ["plot", "shift"],
            ["conformal"], ["plot", "conformal"]]
PYTHON_TYPE = re.compile(r"<(str|int|float|bool|path|file|dir|list\[\w+\])>")


def _help(args):
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args) or "adacal")
def test_help_shows_no_python_annotation(args):
    text = _help(args)
    assert not PYTHON_TYPE.search(text), PYTHON_TYPE.search(text).group(0)


def _row(text, option):
    return next(line for line in text.splitlines() if re.match(rf"\s*[│|]\s*(\*\s+)?{re.escape(option)}(\s|,)", line))


def test_each_kind_of_value_reads_as_a_word():
    ood = _help(["ood"])
    assert re.search(r"--limit\s+INTEGER\s", _row(ood, "--limit"))
    assert re.search(r"--temperature\s+NUMBER\s", _row(ood, "--temperature"))
    assert re.search(r"--scores\s+TEXT\s", _row(ood, "--scores"))
    assert re.search(r"--model\s+PATH\s", _row(ood, "--model"))
    # A flag takes no value, so it shows no type.
    assert re.search(r"--fit-temperature\s+Fit T", _row(ood, "--fit-temperature"))
    assert re.search(r"--help\s+Show this", _row(ood, "--help"))
    # An argument taking several paths keeps its name and reads PATH...
    assert re.search(r"OOD_JSON\s+PATH\.\.\.\s", _row(_help(["plot", "roc"]), "OOD_JSON"))


def test_type_words_follow_the_parameter_not_its_name():
    import typer.main

    command = typer.main.get_command(app)
    ood = command.commands["ood"]
    words = {param.name: type_word(param) for param in ood.params}
    assert words["limit"] == "INTEGER" and words["temperature"] == "NUMBER" and words["in_name"] == "TEXT"
    assert words["data_dir"] == "PATH" and words["fit_temperature"] == "" and words["quiet"] == ""


# What help texts once said of the reading rules, no longer the rule that runs (docs/inputs.md §2): a single row
# never turns a matrix into logits; a matrix whose rows disagree is refused.
STALE_RULES = re.compile(r"anything else (is read |is taken )?as logits|else as logits|otherwise (as )?logits|"
                         r"else (as )?decision scores", re.IGNORECASE)


def _words(text):
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args) or "adacal")
def test_no_help_text_describes_a_reading_rule_that_no_longer_runs(args):
    text = _words(_help(args))
    assert not STALE_RULES.search(text), STALE_RULES.search(text).group(0)


def test_evaluate_help_says_the_kind_rule_that_runs():
    """docs/inputs.md §2: probabilities when every row is one, logits when (almost) none is, refused in between,
    --scores-kind to choose; the binary rule likewise."""
    text = _words(_help(["evaluate"]))
    for phrase in ("probabilities when every row is non-negative and sums to 1", "logits when (almost) none is",
                   "refused in between", "--scores-kind logits|probs chooses", "--renormalize divides each row",
                   "decision scores (logits) when at least 2 values", "docs/inputs.md §2"):
        assert phrase in text, phrase


@pytest.mark.parametrize("args", [["evaluate"], ["calibrate"], ["ood"], ["plot", "reliability"]],
                         ids=" ".join)
def test_every_scores_kind_option_says_the_rule(args):
    text = _words(_help(args))
    assert re.search(r"--scores-kind .*probabilities when every row is one, logits when \(almost\) none is; a matrix "
                     r"whose rows disagree is refused", text)
