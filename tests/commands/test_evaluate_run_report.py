"""README promises about `adacal evaluate` checked end to end: which report a run folder's evaluate.json may hold
(only its selected model's, or an unfinished run's checkpoint, noted), and --device names checked even when no model
runs."""

import json
import shutil

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.checks import check_device_name
from adacal.commands.evaluate import run_evaluate


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, one_torch_thread):
    """A finished 2-epoch digits run whose best.pt holds epoch 1 while the run selected epoch 2 (--select last)."""
    from adacal.training import TrainConfig, train

    out = tmp_path_factory.mktemp("finished")
    options = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, out=str(out), name="run")
    with one_torch_thread():
        train(TrainConfig(epochs=1, **options))
        run = out / "run"
        epoch_one = (run / "checkpoints" / "last.pt").read_bytes()
        train(TrainConfig(epochs=2, resume=str(run), **{k: v for k, v in options.items() if k not in ("name",)}))
    (run / "checkpoints" / "best.pt").write_bytes(epoch_one)
    return run


def _copy(run, tmp_path):
    return shutil.copytree(run, tmp_path / "run")


def test_another_epochs_checkpoint_of_a_finished_run_is_scored_but_not_written_as_the_runs_report(
    finished_run, tmp_path, one_torch_thread
):
    run = _copy(finished_run, tmp_path)
    (run / "evaluate.json").unlink()
    best = run / "checkpoints" / "best.pt"
    with one_torch_thread():
        result = run_evaluate(best, device="cpu", metrics="error")
    assert result.report["config"]["source"]["checkpoint"]["epoch"] == 1
    assert result.report["config"]["source"]["checkpoint"]["finished"] is True
    assert result.written == [] and result.kept is None and not (run / "evaluate.json").exists()
    assert result.not_written == run / "evaluate.json"
    assert result.not_written_message == (
        f"Not writing {run / 'evaluate.json'}: {best} (epoch 1) is not the model the finished run selected; "
        "give --json PATH to save this report.")

    # --json still writes it wherever asked.
    with one_torch_thread():
        saved = run_evaluate(best, device="cpu", metrics="error", json_path=tmp_path / "best.json")
    assert saved.written == [tmp_path / "best.json"] and not (run / "evaluate.json").exists()


def test_the_command_says_why_the_runs_report_was_not_written(finished_run, tmp_path, one_torch_thread):
    from adacal.cli import app
    from cli_helpers import runner

    run = _copy(finished_run, tmp_path)
    (run / "evaluate.json").unlink()
    with one_torch_thread():
        result = runner.invoke(app, ["evaluate", str(run / "checkpoints" / "best.pt"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "Not writing" in result.stdout and "is not the model the finished run selected" in " ".join(
        result.stdout.split())
    assert not (run / "evaluate.json").exists()


@pytest.mark.parametrize("which", ["run", "last"])
def test_the_runs_selected_model_fills_a_missing_report(finished_run, tmp_path, one_torch_thread, which):
    """The run folder, or the checkpoint it selected (last.pt of a --select last run), still writes a missing
    evaluate.json (a run killed between its predictions and its report)."""
    run = _copy(finished_run, tmp_path)
    (run / "evaluate.json").unlink()
    path = run if which == "run" else run / "checkpoints" / "last.pt"
    with one_torch_thread():
        result = run_evaluate(path, device="cpu", metrics="error")
    assert result.written == [run / "evaluate.json"] and result.not_written is None
    assert json.loads((run / "evaluate.json").read_text())["results"]["metrics"] == result.report["results"]["metrics"]


def test_a_finished_runs_other_checkpoint_does_not_touch_an_existing_report(finished_run, tmp_path, one_torch_thread):
    run = _copy(finished_run, tmp_path)
    before = (run / "evaluate.json").read_bytes()
    with one_torch_thread():
        result = run_evaluate(run / "checkpoints" / "best.pt", device="cpu", metrics="error")
    assert result.kept == run / "evaluate.json" and result.kept_by == "train" and result.not_written is None
    assert (run / "evaluate.json").read_bytes() == before


# ------------------------------------------------------------------------------------------------------------- --device


@pytest.mark.parametrize("device", ["auto", "cpu", "CPU", " cuda ", "cuda:1", "cpu:0"])
def test_device_names_are_accepted(device):
    assert check_device_name(device) == device.strip().lower()


@pytest.mark.parametrize("device", ["foo", "gpu", "cuda:", "cuda:x", "", None, 3])
def test_device_typos_are_refused(device):
    with pytest.raises(InputError, match=r"Expected --device to be auto, cpu, cuda or cuda:N, got "):
        check_device_name(device)


def test_a_device_typo_is_refused_even_for_a_predictions_file(tmp_path):
    from adacal.cli import app
    from cli_helpers import runner

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "preds.npz", logits=rng.normal(size=(20, 3)), labels=rng.integers(0, 3, 20))
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["evaluate", str(tmp_path / "preds.npz"), "--device", "foo", "--json", str(out)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: Expected --device to be auto, cpu, cuda or cuda:N, got 'foo'."]
    assert result.stdout == "" and not out.exists()

    # A real device name that this file does not need is fine (no model runs), as before.
    ok = runner.invoke(app, ["evaluate", str(tmp_path / "preds.npz"), "--device", "cuda:3", "-q"])
    assert ok.exit_code == 0, ok.output


def test_evaluate_help_says_when_the_runs_report_is_written():
    from adacal.cli import app
    from cli_helpers import runner

    result = runner.invoke(app, ["evaluate", "--help"])
    text = " ".join(result.stdout.split())
    assert "never for another epoch's checkpoint of a finished run" in text
    assert "percentages" in text and "--renormalize" in text
