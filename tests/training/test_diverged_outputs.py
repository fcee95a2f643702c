"""Weights that diverge while the training loss stays finite (a huge --lr): the model's NaN/Inf outputs on the
validation split stop training with the same kind of message as a NaN loss — which epoch, that the outputs diverged,
which checkpoint was kept, what to try — and the run folder stays resumable."""

from __future__ import annotations

import pytest

from adacal.cli import app
from adacal.training import TrainConfig, load_checkpoint, train
from adacal.training.loop import NonFiniteLossError
from cli_helpers import one_line_error, runner

DIVERGING = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, lr=1e10)


@pytest.mark.parametrize("loss", ["adafocal", "ce"])
def test_diverged_outputs_stop_training_with_the_epoch_and_what_was_kept(tmp_path, loss):
    with pytest.raises(NonFiniteLossError) as raised:
        train(TrainConfig(**DIVERGING, loss=loss, epochs=2, out=str(tmp_path), name="run"))
    run = tmp_path / "run"
    last = run / "checkpoints" / "last.pt"
    assert str(raised.value) == (
        "The model's outputs on the validation split became NaN at epoch 1 (360 of 360 rows; lr 1e+10): its weights "
        "diverged although the training loss stayed finite; training stopped and the last good checkpoint "
        f"{last} (epoch 0) was kept — try a lower --lr or --grad-clip."
    )
    # Nothing of epoch 1 was recorded: last.pt holds epoch 0, no history line, no predictions or report.
    assert load_checkpoint(last)["epoch"] == 0
    assert not (run / "history.jsonl").exists() or (run / "history.jsonl").read_text() == ""
    assert not (run / "predictions.npz").exists() and not (run / "evaluate.json").exists()
    # Resumable: the resume reaches the same point and stops with the same message (not a checkpoint error).
    with pytest.raises(NonFiniteLossError, match="outputs on the validation split became NaN at epoch 1"):
        train(TrainConfig(resume=str(run), epochs=2))


def test_the_command_prints_one_line(tmp_path):
    result = runner.invoke(app, ["train", "--epochs", "1", "--train-subset", "64", "--lr", "1e10", "--device", "cpu",
                                 "--out", str(tmp_path), "--quiet"])
    one_line_error(result, "outputs on the validation split became NaN at epoch 1", "(epoch 0) was kept",
                   "try a lower --lr or --grad-clip")


def test_non_finite_test_outputs_in_the_final_evaluation_write_no_predictions(tmp_path, monkeypatch):
    """The final evaluation's test pass (the validation passes were finite): no predictions.npz or evaluate.json,
    every checkpoint kept."""
    import itertools

    import numpy as np

    from adacal.training import loop

    predict, calls = loop.predict, itertools.count(1)

    def nan_on_third_call(*args, **kwargs):  # epoch 1's validation, the final validation, the final test pass
        logits, labels = predict(*args, **kwargs)
        if next(calls) == 3:
            logits = np.full_like(logits, np.nan)
        return logits, labels

    monkeypatch.setattr(loop, "predict", nan_on_third_call)
    with pytest.raises(NonFiniteLossError) as raised:
        train(TrainConfig(dataset="digits", device="cpu", train_subset=64, batch_size=32, epochs=1,
                          out=str(tmp_path), name="run"))
    assert str(raised.value).startswith(
        "The outputs of the model selected for the final evaluation on the test split are NaN in 360 of 360 rows")
    run = tmp_path / "run"
    assert load_checkpoint(run / "checkpoints" / "last.pt")["epoch"] == 1
    assert not (run / "predictions.npz").exists() and not (run / "evaluate.json").exists()
