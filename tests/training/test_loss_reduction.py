"""`--loss-reduction` and `--grad-clip`: one SGD step of adacal's paper preset equals a hand-written step of the
reference code (loss summed over the batch, clip_grad_norm_ to 2, SGD lr 0.1 momentum 0.9 weight decay 5e-4) on a tiny
model whose weights are all 1e-6; the mean reduction gives a different step; history reports the per-sample mean."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from adacal.data import load_dataset
from adacal.losses import build_loss
from adacal.runs import RunFolder
from adacal.training import TrainConfig, Trainer, resolve_config
from adacal.training.config import resolved_loss_options


def _reference_loss(name: str, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The reference code's training loss, written out (torrvision/focal_calibration, 3mcloud/adafocal)."""
    log_p = F.log_softmax(logits, dim=1)
    log_pt = log_p.gather(1, labels[:, None]).squeeze(1)
    pt = log_pt.exp()
    if name == "ce":
        return -log_pt.sum()
    if name == "focal":  # gamma 3, FocalLoss(size_average=False)
        return (-((1 - pt) ** 3) * log_pt).sum()
    if name == "adafocal":  # every bin starts at gamma 1
        return (-((1 - pt) ** 1) * log_pt).sum()
    if name == "brier":  # BrierScore: sum of squares / batch size (a mean)
        one_hot = F.one_hot(labels, logits.shape[1]).to(logits.dtype)
        return ((log_p.exp() - one_hot) ** 2).sum() / logits.shape[0]
    raise AssertionError(name)


def _trainer(tmp_path, loss: str, preset: str | None) -> tuple[Trainer, torch.nn.Module]:
    config = resolve_config(TrainConfig(dataset="cifar10", preset=preset, loss=loss, device="cpu"))
    # The preset's optimiser and reduction, on a one-batch slice of digits and a linear model.
    config.dataset, config.batch_size, config.milestones = "digits", 64, ()
    dataset = load_dataset("digits", train_subset=64, seed=0)
    model = torch.nn.Linear(64, 10)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(1e-6)
    reference = copy.deepcopy(model)
    trainer = Trainer(
        config, dataset=dataset, model=model, loss=build_loss(loss, **resolved_loss_options(loss, {})),
        model_name="linear", model_options={}, device=torch.device("cpu"), run=RunFolder(tmp_path / "run"),
    )
    return trainer, reference


def _batch(trainer: Trainer) -> tuple[torch.Tensor, torch.Tensor]:
    loader = trainer.train_loader
    loader.set_epoch(1)
    batches = list(loader.iterate(0))
    assert len(batches) == 1
    return batches[0]


@pytest.mark.parametrize("loss, reduction", [("ce", "sum"), ("focal", "sum"), ("adafocal", "sum"), ("brier", "mean")])
def test_paper_step_equals_the_reference_step(tmp_path, loss, reduction):
    trainer, reference = _trainer(tmp_path, loss, "paper")
    config = trainer.config
    assert (config.loss_reduction, config.grad_clip, config.lr, config.momentum, config.weight_decay) == (
        reduction, 2.0, 0.1, 0.9, 5e-4)
    inputs, labels = _batch(trainer)

    value = _reference_loss(loss, reference(inputs), labels)
    mean_loss = float(value.detach()) / (len(labels) if reduction == "sum" else 1)
    value.backward()
    norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), 2.0)
    if reduction == "sum":
        assert norm > 2.0  # the clip is active: the step is not the unclipped one
    torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4).step()

    trained = trainer.train_epoch(1)
    for ours, theirs in zip(trainer.net.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-7)
    # history.jsonl's training loss is the per-sample mean whatever the reduction
    assert trained["train"]["loss"] == pytest.approx(mean_loss, rel=1e-5)


def test_mean_reduction_takes_a_different_step(tmp_path):
    summed, _ = _trainer(tmp_path / "a", "ce", "paper")
    mean, _ = _trainer(tmp_path / "b", "ce", "paper")
    mean.config.loss_reduction = "mean"
    summed.train_epoch(1)
    mean.train_epoch(1)
    assert not torch.allclose(summed.net.weight, mean.net.weight)


def test_reduction_and_clip_options_resolve_and_validate():
    from adacal.errors import InputError

    assert resolve_config(TrainConfig()).loss_reduction == "mean"
    assert resolve_config(TrainConfig(dataset="cifar10", preset="paper")).loss_reduction == "sum"
    assert resolve_config(
        TrainConfig(dataset="cifar10", preset="paper", loss_reduction="mean")).loss_reduction == "mean"
    quick = resolve_config(TrainConfig(dataset="cifar10"))
    assert (quick.loss_reduction, quick.grad_clip) == ("mean", None)
    with pytest.raises(InputError, match="--loss-reduction to be one of mean, sum"):
        resolve_config(TrainConfig(loss_reduction="summ"))
