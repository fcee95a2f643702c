"""`adacal.commands.evaluate.run_evaluate` called from Python: the checks of `adacal evaluate`, the report returned and
written, a calibrator applied."""

import json

import numpy as np
import pytest

from adacal.calibrators import build_calibrator, save_calibrator
from adacal.errors import InputError
from adacal.commands.evaluate import EvaluationRun, run_evaluate


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 3, size=200)
    logits = rng.normal(0.0, 1.0, size=(200, 3))
    logits[np.arange(200), labels] += 1.5
    logits *= 3.0
    folder = tmp_path_factory.mktemp("evaluate")
    np.savez(folder / "preds.npz", logits=logits, labels=labels)
    return folder / "preds.npz", logits, labels


def _nll_error(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean(), (logits.argmax(axis=1) != labels).mean()


def test_metrics_match_a_hand_computation_and_the_report_is_written(data, tmp_path):
    path, logits, labels = data
    out = tmp_path / "report.json"
    run = run_evaluate(path, metrics="nll,error", json_path=out)
    assert isinstance(run, EvaluationRun) and run.written == [out] and run.kept is None and not run.calibrated
    nll, error = _nll_error(logits, labels)
    assert run.report["results"]["metrics"]["nll"] == pytest.approx(nll, rel=1e-6)
    assert run.report["results"]["metrics"]["error"] == pytest.approx(error)
    assert json.loads(out.read_text())["results"]["metrics"] == pytest.approx(run.report["results"]["metrics"])


def test_a_calibrator_is_applied_before_measuring(data, tmp_path):
    path, logits, labels = data
    fitted = build_calibrator("temperature").fit(logits, labels)
    save_calibrator(fitted, tmp_path / "t.json")
    run = run_evaluate(path, metrics="nll", calibrator=tmp_path / "t.json")
    temperature = fitted.to_dict()["params"]["temperature"]
    assert run.calibrated and run.written == []
    assert run.report["results"]["metrics"]["nll"] == pytest.approx(_nll_error(logits / temperature, labels)[0],
                                                                    rel=1e-5)
    assert run.report["results"]["metrics"]["nll"] < _nll_error(logits, labels)[0]  # overconfident logits: T helps


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bins": 0}, r"Expected --n-bins to be a positive integer, got 0\."),
        ({"bootstrap": -1}, r"Expected --bootstrap to be a non-negative integer"),
        ({"seed": -2}, r"Expected --seed to be a non-negative integer, got -2\."),
        ({"metrics": "ece-emm"}, r"ece-em"),
        ({"calibrator": "missing.json"}, r"does not exist"),
    ],
)
def test_bad_options_raise_before_anything_is_written(data, tmp_path, kwargs, message):
    path, _, _ = data
    out = tmp_path / "report.json"
    with pytest.raises(InputError, match=message):
        run_evaluate(path, json_path=out, **kwargs)
    assert not out.exists()


def test_the_report_may_not_replace_its_input(data):
    path, _, _ = data
    before = path.read_bytes()
    with pytest.raises(InputError, match="--json"):
        run_evaluate(path, json_path=path)
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------------------------------------------------
# a run whose training did not finish: which checkpoint was scored, and who wrote the evaluate.json that is kept


@pytest.fixture(scope="module")
def unfinished_run(tmp_path_factory, one_torch_thread):
    """A run folder that never finished epoch 1 (its weights diverged): config.json and checkpoints/last.pt of
    epoch 0 only."""
    from adacal.training import TrainConfig, train
    from adacal.training.loop import NonFiniteLossError

    out = tmp_path_factory.mktemp("unfinished")
    with one_torch_thread(), pytest.raises(NonFiniteLossError):
        train(TrainConfig(dataset="digits", device="cpu", train_subset=64, batch_size=32, lr=1e10, epochs=3,
                          out=str(out), name="run"))
    return out / "run"


def _copy_run(run, tmp_path):
    import shutil

    return shutil.copytree(run, tmp_path / "run")


def test_an_unfinished_run_says_which_epoch_was_scored(unfinished_run, tmp_path, one_torch_thread):
    run = _copy_run(unfinished_run, tmp_path)
    last = run / "checkpoints" / "last.pt"
    with one_torch_thread():
        first = run_evaluate(run, device="cpu")
    note = f"training has not finished; scored {last}, the model of epoch 0 of 3 (the untrained initial weights)"
    assert first.report["config"]["source"]["checkpoint"] == {
        "path": str(last), "epoch": 0, "epochs": 3, "finished": False, "note": note}
    assert note in first.notes
    assert first.written == [run / "evaluate.json"] and first.kept is None
    assert json.loads((run / "evaluate.json").read_text())["config"]["source"]["checkpoint"]["epoch"] == 0

    # A second evaluate keeps the file and says that evaluate, not train, wrote it.
    with one_torch_thread():
        second = run_evaluate(run, device="cpu")
    assert second.kept == run / "evaluate.json" and second.written == [] and second.kept_by == "evaluate"
    assert second.kept_message == (
        f"Kept {run / 'evaluate.json'}, which an earlier 'adacal evaluate' wrote (from the checkpoint of epoch 0); "
        "give --json PATH to save this report.")

    # A damaged evaluate.json is kept as it is, and said to be unreadable.
    (run / "evaluate.json").write_text("{not json")
    with one_torch_thread():
        damaged = run_evaluate(run, device="cpu")
    assert damaged.kept_by == "unreadable" and (run / "evaluate.json").read_text() == "{not json"
    assert damaged.kept_message.startswith(f"Kept {run / 'evaluate.json'} unchanged, though it is not a readable "
                                           "evaluate report (")
    assert "train wrote" not in damaged.kept_message


def test_the_command_notes_the_epoch_on_stderr_and_says_who_wrote_the_kept_report(unfinished_run, tmp_path,
                                                                                  one_torch_thread):
    from adacal.cli import app
    from cli_helpers import runner

    run = _copy_run(unfinished_run, tmp_path)
    with one_torch_thread():
        first = runner.invoke(app, ["evaluate", str(run), "--device", "cpu"])
        second = runner.invoke(app, ["evaluate", str(run), "--device", "cpu"])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "Note: training has not finished; scored" in first.stderr and "epoch 0 of 3" in first.stderr
    assert f"Wrote {run / 'evaluate.json'}" in first.stdout
    assert "as train wrote it" not in second.stdout
    assert "which an earlier 'adacal evaluate' wrote" in " ".join(second.stdout.split())


def test_a_finished_run_keeps_the_report_train_wrote(tmp_path, one_torch_thread):
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        train(TrainConfig(dataset="digits", device="cpu", train_subset=64, batch_size=32, epochs=1, out=str(tmp_path),
                          name="run"))
        run = tmp_path / "run"
        before = (run / "evaluate.json").read_bytes()
        evaluated = run_evaluate(run, device="cpu")
    assert evaluated.kept_by == "train" and (run / "evaluate.json").read_bytes() == before
    assert evaluated.kept_message == (
        f"Kept {run / 'evaluate.json'} as train wrote it; give --json PATH to save this report.")
    assert "checkpoint" not in evaluated.report["config"]["source"]  # predictions.npz was read, no model was run


def test_a_checkpoint_is_read_once_and_its_dataset_loaded_once(unfinished_run, tmp_path, one_torch_thread,
                                                               monkeypatch):
    """evaluate / calibrate of a checkpoint read the file once (it was read three times: to recognise it, to run it
    and to describe its epoch) and calibrate builds the dataset once for both splits."""
    import torch

    import adacal.data
    from adacal.commands.calibrate import run_calibrate

    run = _copy_run(unfinished_run, tmp_path)
    (run / "predictions.npz").unlink(missing_ok=True)
    last = run / "checkpoints" / "last.pt"
    loads, datasets = [], []
    real_load, real_dataset = torch.load, adacal.data.load_dataset
    monkeypatch.setattr(torch, "load", lambda *a, **k: loads.append(1) or real_load(*a, **k))
    monkeypatch.setattr(adacal.data, "load_dataset", lambda *a, **k: datasets.append(a[0]) or real_dataset(*a, **k))
    with one_torch_thread():
        result = run_evaluate(last, device="cpu", json_path=tmp_path / "e.json")
    assert len(loads) == 1 and datasets == ["digits"]
    assert result.report["config"]["source"]["checkpoint"]["epoch"] == 0

    loads.clear(), datasets.clear()
    with one_torch_thread():
        calibrated = run_calibrate(last, method="temperature", json_path=tmp_path / "c.json")
    assert len(loads) == 1 and datasets == ["digits"]
    assert calibrated.report["results"]
