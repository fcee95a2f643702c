"""Tiny LightningModules and data for the Lightning callback tests (tests/integrations/test_lightning*.py and the DDP
script they spawn): an MLP on a seeded synthetic 4-class problem, and the quiet Trainer options they all use."""

from __future__ import annotations

import logging
import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl

from adacal.losses import AdaFocalLoss

FEATURES, CLASSES = 12, 4
QUIET = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
             enable_model_summary=False)


def quiet_lightning() -> None:
    """No info lines (GPU available, ...) and none of the warnings tiny loaders trigger (few workers, few batches)."""
    for name in ("lightning.pytorch", "lightning.fabric", "pytorch_lightning", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=r".*(num_workers|does not have many workers|LeafSpec|smaller than).*")


def synthetic(n: int, seed: int) -> TensorDataset:
    """n samples of a noisy linear 4-class problem, the same for a seed."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, FEATURES, generator=generator)
    scores = inputs[:, :CLASSES] + 0.8 * torch.randn(n, CLASSES, generator=generator)
    return TensorDataset(inputs, scores.argmax(dim=1))


def loaders(n_train: int = 96, n_val: int = 45, batch_size: int = 32) -> tuple[DataLoader, DataLoader]:
    """A fixed-order training loader and a validation loader (45 samples: an odd number, for the DDP padding)."""
    return (DataLoader(synthetic(n_train, 1), batch_size=batch_size, shuffle=False),
            DataLoader(synthetic(n_val, 2), batch_size=16, shuffle=False))


def mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, CLASSES))


class Classifier(pl.LightningModule):
    """An MLP trained with `loss`, held as a submodule ("submodule"), as a plain attribute that torch does not
    register ("attribute"), or out of sight of attribute lookups ("hidden"); `validation_step` returns what the
    callbacks read (`returns="dict"` or "pair"), or only the loss ("loss")."""

    def __init__(self, net: torch.nn.Module, loss: torch.nn.Module | None = None, *, where: str = "submodule",
                 returns: str = "dict", lr: float = 0.1) -> None:
        super().__init__()
        self.net = net
        self.lr = lr
        self.returns = returns
        loss = loss if loss is not None else AdaFocalLoss(n_bins=5)
        if where == "submodule":
            self.loss = loss
        elif where == "attribute":
            self.__dict__["loss"] = loss  # not registered: not in state_dict, not moved by .to()
        else:
            self.__dict__["_hidden"] = [loss]
        self.where = where

    @property
    def criterion(self) -> torch.nn.Module:
        return self.__dict__["_hidden"][0] if self.where == "hidden" else self.loss

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs)

    def training_step(self, batch, batch_idx):
        inputs, labels = batch
        return self.criterion(self(inputs), labels)

    def validation_step(self, batch, batch_idx):
        inputs, labels = batch
        logits = self(inputs)
        if self.returns == "pair":
            return logits, labels
        if self.returns == "loss":
            return torch.nn.functional.cross_entropy(logits, labels)
        return {"logits": logits, "labels": labels, "loss": torch.nn.functional.cross_entropy(logits, labels)}

    def configure_optimizers(self):
        return torch.optim.SGD(self.net.parameters(), lr=self.lr, momentum=0.9)


def trainer(**options) -> pl.Trainer:
    return pl.Trainer(**{**QUIET, **options})
