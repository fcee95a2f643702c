"""The training loop on tiny digits runs: progress events, γ-updates every n batches, NaN stops, selection,
inference from checkpoints and up-front errors."""

import json

import numpy as np
import pytest
import torch
from torch import nn

import adacal.losses
import adacal.models
from adacal.errors import InputError
from adacal.predictions import load_split_predictions
from adacal.training import NonFiniteLossError, TrainConfig, load_checkpoint, predict_checkpoint, train

TINY = dict(dataset="digits", device="cpu", train_subset=320, batch_size=32, optimizer="sgd", lr=0.1)


def test_progress_events_and_run_folder(tmp_path):
    events = []
    result = train(TrainConfig(out=str(tmp_path), epochs=2, **TINY), progress=lambda name, info: events.append(name))
    assert events[0] == "train_start" and events[-1] == "train_end"
    assert events.count("epoch_end") == 2 and events.count("batch_end") == 20 and events.count("update") == 2
    assert events.index("evaluate_start") > events.index("epoch_end")
    history = [json.loads(line) for line in result.run_dir.joinpath("history.jsonl").read_text().splitlines()]
    assert [h["epoch"] for h in history] == [1, 2]
    assert len(result.gammas) == 15 and result.gammas == history[-1]["adafocal"]["updates"][-1]["gammas"]
    assert 0 <= result.test_metrics["error"] <= 1 and result.selected_epoch == 2


class _BatchNormNet(nn.Module):
    """A tiny model with batch norm that records, on every forward with gradients, whether BN was in train mode."""

    def __init__(self, *, num_classes, input_shape, **_):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(input_shape[0], 32), nn.BatchNorm1d(32), nn.ReLU(),
                                  nn.Linear(32, num_classes))
        self.modes = []

    def forward(self, inputs):
        if torch.is_grad_enabled():
            self.modes.append(all(m.training for m in self.modules() if isinstance(m, nn.BatchNorm1d)))
        return self.body(inputs)


def test_model_is_back_in_train_mode_after_per_batch_updates(tmp_path, monkeypatch):
    built = []

    def fake_build_model(name, *, num_classes, input_shape, **options):
        built.append(_BatchNormNet(num_classes=num_classes, input_shape=input_shape))
        return built[-1]

    monkeypatch.setattr(adacal.models, "build_model", fake_build_model)
    updates = []
    train(
        TrainConfig(out=str(tmp_path), epochs=1, update_every="3", **TINY),
        progress=lambda name, info: updates.append(info["batch"]) if name == "update" else None,
    )
    assert updates == [3, 6, 9]  # 10 batches, an update after every third, none at the epoch end
    assert len(built[0].modes) == 10 and all(built[0].modes)


class _NaNAfter(nn.Module):
    """Cross-entropy that returns NaN from the `bad_call`-th training batch on."""

    needs_validation = False

    def __init__(self, bad_call):
        super().__init__()
        self.calls, self.bad_call = 0, bad_call

    def forward(self, logits, labels):
        self.calls += 1
        loss = nn.functional.cross_entropy(logits, labels)
        return loss * float("nan") if self.calls >= self.bad_call else loss


def test_nan_loss_stops_naming_epoch_and_batch_and_keeps_last_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(adacal.losses, "build_loss", lambda name, **options: _NaNAfter(13))
    with pytest.raises(NonFiniteLossError, match=r"became NaN at epoch 2, batch 3 .*last good checkpoint") as info:
        train(TrainConfig(out=str(tmp_path), epochs=3, loss="ce", **TINY))
    assert "\n" not in str(info.value)
    (run,) = tmp_path.iterdir()
    checkpoint = load_checkpoint(run / "checkpoints" / "last.pt")
    assert checkpoint["epoch"] == 1
    assert all(torch.isfinite(t).all() for t in checkpoint["model_state"].values())
    assert not (run / "evaluate.json").exists()


def test_best_val_selection_and_predict_checkpoint(tmp_path):
    result = train(TrainConfig(out=str(tmp_path), epochs=3, select="best-val", loss="ce", **TINY))
    best = load_checkpoint(result.run_dir / "checkpoints" / "best.pt")
    assert result.selected_epoch == best["epoch"] == result.best_epoch
    assert best["best_metric"]["value"] == pytest.approx(result.best_val_accuracy)
    saved = load_split_predictions(result.run_dir / "predictions.npz")
    again = predict_checkpoint(result.run_dir / "checkpoints" / "best.pt", split="test", device="cpu")
    np.testing.assert_allclose(again.logits, saved["test"].logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(again.labels, saved["test"].labels)
    report = json.loads((result.run_dir / "evaluate.json").read_text())
    assert report["kind"] == "evaluate" and report["results"]["metrics"]["error"] == pytest.approx(
        result.test_metrics["error"]
    )


def test_bf16_autocast_on_cpu_trains(tmp_path):
    result = train(TrainConfig(out=str(tmp_path), epochs=1, amp=True, **TINY))
    assert np.isfinite(result.test_metrics["nll"])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"channels_last": True}, "--channels-last applies to image datasets only"),
        ({"model": "resnet20"}, "Model 'resnet20' reads images"),
        ({"loss": "ce", "loss_options": {"gamma": 2.0}}, "--gamma does not apply to --loss ce"),
        ({"dataset": "digitz"}, "Did you mean 'digits'"),
    ],
)
def test_cheap_errors_come_before_any_run_folder(tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        train(TrainConfig(out=str(tmp_path / "runs"), epochs=1, **{**TINY, **options}))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_requested_without_cuda_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="--device cuda"):
        train(TrainConfig(out=str(tmp_path), epochs=1, **{**TINY, "device": "cuda"}))


@pytest.mark.parametrize("update_every, per_epoch", [("epoch", ["val"]), ("5", ["val", "val"])])
def test_one_validation_pass_serves_both_monitoring_and_the_update(tmp_path, monkeypatch, update_every, per_epoch):
    """10 batches an epoch: an end-of-epoch update, or updates after batches 5 and 10, the last of which also gives
    the epoch's validation metrics; never a second validation pass for monitoring."""
    import adacal.training.loop as loop

    passes, updates = [], []
    predict_split = loop.Trainer.predict_split

    def counting(self, split):
        passes.append(split)
        return predict_split(self, split)

    monkeypatch.setattr(loop.Trainer, "predict_split", counting)
    result = train(
        TrainConfig(out=str(tmp_path), epochs=2, update_every=update_every, **TINY),
        progress=lambda name, info: updates.append(info["record"]) if name == "update" else None,
    )
    assert passes == per_epoch * 2 + ["val", "test"]
    assert len(updates) == len(per_epoch) * 2
    history = [json.loads(line) for line in result.run_dir.joinpath("history.jsonl").read_text().splitlines()]
    for line in history:
        # The update and the monitoring saw the same logits: the update's bins hold the reported validation error.
        last = line["adafocal"]["updates"][-1]
        correct = sum(a * n for a, n in zip(last["val_accuracy"], last["counts"]))
        assert 1 - correct / sum(last["counts"]) == pytest.approx(line["val"]["error"])


def test_resume_continues_the_random_stream_of_dropout_exactly(tmp_path):
    options = dict(TINY, model_options={"dropout": 0.5}, milestones=(2,), seed=5)
    straight = train(TrainConfig(out=str(tmp_path / "straight"), epochs=3, **options))
    first = train(TrainConfig(out=str(tmp_path / "split"), epochs=1, **options))
    resumed = train(TrainConfig(resume=str(first.run_dir), epochs=3))
    a = load_checkpoint(straight.run_dir / "checkpoints" / "last.pt")
    b = load_checkpoint(resumed.run_dir / "checkpoints" / "last.pt")
    assert b["epoch"] == 3 and b["config"]["model_options"] == {"dropout": 0.5}
    for key, value in a["model_state"].items():
        assert torch.equal(value, b["model_state"][key]), key
    assert resumed.test_metrics == straight.test_metrics


def test_validation_pass_sends_progress_events_and_a_terminal_draws_them(tmp_path):
    """Each epoch's validation pass (and the final test pass) reports its batches; the rich bars take them."""
    from adacal.cli.train import PlainProgress, RichProgress

    events = []
    train(TrainConfig(out=str(tmp_path), epochs=1, val_size=300, **TINY),
          progress=lambda name, info: events.append((name, dict(info))) if name.startswith("predict") else None)
    starts = [info for name, info in events if name == "predict_start"]
    assert [info["split"] for info in starts] == ["val", "val", "test"]
    for start in starts:
        batches = [info["batch"] for name, info in events if name == "predict_batch" and info is not None
                   and info["split"] == start["split"]]
        assert batches and max(batches) == start["batches"]
    assert sum(name == "predict_end" for name, _ in events) == len(starts)

    bars = RichProgress()
    with bars:
        bars.on_predict_start(split="val", batches=3)
        for done in (1, 2, 3):
            bars.on_predict_batch(split="val", batch=done, batches=3)
        assert bars.bars.tasks[-1].completed == 3
        bars.on_predict_end(split="val")
        assert not bars.bars.tasks
    assert not hasattr(PlainProgress, "on_predict_batch")  # piped output: nothing extra
