"""The losses published after AdaFocal from `adacal train`: flags, --print-config, one-line errors, a short run."""

import json

import pytest
import torch

from adacal.cli import app
from adacal.losses import build_loss
from adacal.training.config import resolved_loss_options

from cli_helpers import one_line_error, runner

NEW_LOSSES = {  # name → the loss options --print-config resolves with no flag given (the papers' values)
    "dual-focal": {"gamma": 5.0},
    "mbls": {"margin": 10.0, "margin_weight": 0.1},
    "acls": {"margin": 10.0, "margin_weight": 0.1, "pos_lambda": 1.0, "neg_lambda": 0.1},
    "mdca": {"beta": 1.0, "base": "ce"},
    "confidence-penalty": {"beta": 0.1},
}


def _config(*args: str) -> dict:
    result = runner.invoke(app, ["train", "--print-config", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", NEW_LOSSES)
def test_print_config_shows_every_hyper_parameter(name):
    assert _config("--loss", name)["loss_options"] == NEW_LOSSES[name]
    assert resolved_loss_options(name, {}) == NEW_LOSSES[name]


def test_flags_set_the_options_they_name():
    assert _config("--loss", "dual-focal", "--gamma", "3")["loss_options"] == {"gamma": 3.0}
    assert _config("--loss", "mbls", "--margin", "6", "--margin-weight", "0.2")["loss_options"] == {
        "margin": 6.0, "margin_weight": 0.2}
    acls = _config("--loss", "acls", "--acls-pos-lambda", "0.5", "--acls-neg-lambda", "0.2")["loss_options"]
    assert (acls["pos_lambda"], acls["neg_lambda"]) == (0.5, 0.2)
    assert _config("--loss", "confidence-penalty", "--beta", "0.3")["loss_options"] == {"beta": 0.3}
    # mdca's base option appears with its base, filled with the authors' default, and the other one not at all
    assert _config("--loss", "mdca", "--mdca-base", "focal")["loss_options"] == {
        "beta": 1.0, "base": "focal", "gamma": 1.0}
    assert _config("--loss", "mdca", "--mdca-base", "label-smoothing", "--smoothing", "0.2", "--beta", "2")[
        "loss_options"] == {"beta": 2.0, "base": "label-smoothing", "alpha": 0.2}
    for name in NEW_LOSSES:  # what --print-config says is what the loss is built with
        options = _config("--loss", name)["loss_options"]
        assert repr(build_loss(name, **options)) == repr(build_loss(name))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--loss", "mbls", "--margin", "-1"], "Expected --margin to be >= 0, got -1.0."),
        (["--loss", "acls", "--margin-weight", "nan"], "Expected --margin-weight to be a finite number"),
        (["--loss", "acls", "--acls-neg-lambda", "-0.1"], "Expected --acls-neg-lambda to be >= 0"),
        (["--loss", "mdca", "--beta", "-2"], "Expected --beta to be >= 0, got -2.0."),
        (["--loss", "mdca", "--mdca-base", "ls"], "Expected --mdca-base to be one of ce, focal, label-smoothing"),
        (["--loss", "mdca", "--gamma", "2"], "--gamma applies to --loss mdca with --mdca-base focal only"),
        (["--loss", "mdca", "--mdca-base", "focal", "--smoothing", "0.1"],
         "--smoothing applies to --loss mdca with --mdca-base label-smoothing only"),
        (["--loss", "acls", "--beta", "1"], "--beta does not apply to --loss acls"),
        (["--loss", "ce", "--margin", "5"], "--margin does not apply to --loss ce"),
        (["--loss", "dual-focal", "--gamma", "-1"], "Expected --gamma to be >= 0"),
    ],
)
def test_bad_options_are_one_line_errors(args, fragment):
    one_line_error(runner.invoke(app, ["train", "--print-config", *args]), fragment)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "extra", "options"), [
    ("mdca", ["--mdca-base", "focal"], {"beta": 1.0, "base": "focal", "gamma": 1.0}),
    ("acls", [], NEW_LOSSES["acls"]),
])
def test_a_short_run_trains_records_the_options_and_resumes(tmp_path, name, extra, options):
    """One epoch on 96 digits: the batch-level term (mdca) and a per-sample one (acls) through the trainer, with
    --loss-reduction sum too (mdca: the mean times the batch); a resume reads the run's options."""
    out = tmp_path / "runs"
    args = ["train", "--loss", name, *extra, "--epochs", "1", "--out", str(out), "--name", name, "--quiet",
            "--device", "cpu", "--train-subset", "96", "--batch-size", "32", "--loss-reduction", "sum"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    config = json.loads((out / name / "config.json").read_text())["config"]
    assert config["loss_options"] == options
    history = [json.loads(line) for line in (out / name / "history.jsonl").read_text().splitlines()]
    assert len(history) == 1 and torch.isfinite(torch.tensor(history[0]["train"]["loss"]))
    if name == "mdca":  # an option of another base, given on resume, is refused against the run's own base
        resumed = runner.invoke(app, ["train", "--resume", str(out / name), "--epochs", "2", "--smoothing", "0.2"])
        one_line_error(resumed, "--smoothing applies to --loss mdca with --mdca-base label-smoothing only, got "
                                "--mdca-base focal.")
