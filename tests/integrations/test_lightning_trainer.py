"""Issue 40's "done when" for Lightning: on the same data, seed and update schedule, the γ trajectory through
`CalibrationLossCallback` is the one `adacal train` (adacal.training's Trainer) records in history.jsonl.

Both sides are built from the run's own resolved config: the digits split of its seed, the model its seed
initialises, its loss options, optimiser and LR schedule, and its shuffled batches (the trainer's `BatchLoader`, fed
to Lightning with the epoch it sets on its sampler). Equal γ after every update, and equal final weights, show the
two loops took the same steps and updated from the same validation logits."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch", reason="the callbacks need lightning: pip install adacal[lightning]")

from lightning_modules import quiet_lightning, trainer  # noqa: E402

from adacal.data import BatchLoader, load_dataset  # noqa: E402
from adacal.integrations.lightning import CalibrationLossCallback  # noqa: E402
from adacal.losses import build_loss  # noqa: E402
from adacal.models import build_model, model_options_for_dataset  # noqa: E402
from adacal.training import TrainConfig, load_checkpoint, train  # noqa: E402
from adacal.training.entry import seed_everything  # noqa: E402
from adacal.training.optimizers import build_optimizer  # noqa: E402
from adacal.training.schedules import build_scheduler  # noqa: E402

OPTIONS = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, optimizer="sgd", lr=0.05,
               milestones=(2,), lr_decay=0.5, seed=3, loss="adafocal", epochs=3, val_size=200)


@pytest.fixture(autouse=True)
def _quiet(one_torch_thread):
    quiet_lightning()
    with one_torch_thread():
        yield


class EpochBatches:
    """The trainer's training `BatchLoader` as a Lightning train loader: Lightning calls `sampler.set_epoch(e)`
    (e from 0) before each epoch; the trainer shuffles epoch e + 1 (from 1) with seed + e + 1."""

    def __init__(self, loader: BatchLoader) -> None:
        self.loader = loader
        self.sampler = self

    def set_epoch(self, epoch: int) -> None:
        self.loader.set_epoch(epoch + 1)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        return iter(self.loader)


class RunModule(pl.LightningModule):
    def __init__(self, net, loss, config) -> None:
        super().__init__()
        self.net, self.loss, self.config = net, loss, config

    def forward(self, inputs):
        return self.net(inputs)

    def training_step(self, batch, batch_idx):
        inputs, labels = batch
        return self.loss(self(inputs).float(), labels)

    def validation_step(self, batch, batch_idx):
        inputs, labels = batch
        return {"logits": self(inputs).float(), "labels": labels}

    def configure_optimizers(self):
        c = self.config
        optimizer = build_optimizer(self.net.parameters(), name=c["optimizer"], lr=c["lr"],
                                    weight_decay=c["weight_decay"], momentum=c["momentum"])
        return {"optimizer": optimizer, "lr_scheduler": build_scheduler(optimizer, c["milestones"], c["lr_decay"])}


def lightning_run(config: dict, update_every) -> RunModule:
    """The run `config` describes, trained by Lightning with the callback (built as adacal.training.entry builds it)."""
    seed_everything(config["seed"])
    dataset = load_dataset(config["dataset"], seed=config["seed"], train_subset=config["train_subset"],
                           val_size=config["val_size"])
    name = config["model"]
    net = build_model(name, num_classes=dataset.num_classes, input_shape=tuple(dataset.input_shape),
                      **model_options_for_dataset(name, dataset, config["model_options"] or {}))
    loss = build_loss(config["loss"], **config["loss_options"])
    train_loader = BatchLoader(dataset.train, config["batch_size"], dataset=dataset, shuffle=True, device="cpu",
                               seed=config["seed"])
    val_loader = BatchLoader(dataset.split("val"), 512, dataset=dataset, device="cpu")
    module = RunModule(net, loss, config)
    trainer(max_epochs=config["epochs"], callbacks=[CalibrationLossCallback(update_every=update_every)],
            num_sanity_val_steps=2).fit(module, EpochBatches(train_loader), val_loader)
    return module


@pytest.mark.parametrize("update_every", ["epoch", "epoch:1,1"])  # the second: epoch 1 at its end, then every batch
def test_gamma_trajectory_equals_adacal_train(update_every, tmp_path):
    result = train(TrainConfig(**OPTIONS, update_every=update_every, out=str(tmp_path)))
    lines = [json.loads(line) for line in (result.run_dir / "history.jsonl").read_text().splitlines()]
    expected = [update["gammas"] for line in lines for update in line["adafocal"]["updates"]]
    assert len(expected) == (3 if update_every == "epoch" else 1 + 2 * 2)  # 2 batches an epoch

    module = lightning_run(result.config, update_every)
    got = [list(record["gammas"]) for record in module.loss.history]
    assert len(got) == len(expected)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert len(set(map(tuple, np.round(expected, 6)))) == len(expected)  # γ moved at every update: not vacuous
    weights = load_checkpoint(result.run_dir / "checkpoints" / "last.pt")["model_state"]
    for key, value in module.net.state_dict().items():
        torch.testing.assert_close(value, weights[key])
