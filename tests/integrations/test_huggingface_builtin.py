"""Issue 40's "done when" for Hugging Face: on the same data, seed and update schedule, the γ trajectory through
`CalibrationTrainer` is the one `adacal train` (adacal.training's Trainer) records in history.jsonl.

The `transformers.Trainer` run is built from the adacal run's own resolved config: the digits split of its seed,
the model its seed initialises (wrapped to take `inputs=`/`labels=` and return `.logits`), its loss options, its
optimiser and LR schedule (passed as `optimizers=(optimizer, scheduler)`; the Trainer steps a scheduler after every
optimizer step, so the run's epoch milestones are given in steps), its shuffled batches (the trainer's `BatchLoader`,
as dict batches, with the epoch the Trainer sets on it) and its validation batches. The Trainer's own defaults that
the built-in trainer lacks are turned off: gradient clipping (`max_grad_norm=0`); no weight decay, warm-up or
accumulation is added when the optimiser and scheduler are given. Equal γ after every update, and equal final
weights, show the two loops took the same steps and updated from the same validation logits; a 10 % larger learning
rate, all else equal, gives other γ (the comparison can fail)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the Hugging Face integration needs transformers")

from transformers import PrinterCallback, TrainingArguments  # noqa: E402
from transformers.modeling_outputs import SequenceClassifierOutput  # noqa: E402

from adacal.data import BatchLoader, load_dataset  # noqa: E402
from adacal.integrations.huggingface import CalibrationTrainer  # noqa: E402
from adacal.losses import build_loss  # noqa: E402
from adacal.models import build_model, model_options_for_dataset  # noqa: E402
from adacal.training import TrainConfig, load_checkpoint, train  # noqa: E402
from adacal.training.entry import seed_everything  # noqa: E402
from adacal.training.inference import EVAL_BATCH_SIZE  # noqa: E402
from adacal.training.optimizers import build_optimizer  # noqa: E402
from adacal.training.schedules import build_scheduler  # noqa: E402

OPTIONS = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, optimizer="sgd", lr=0.05,
               milestones=(2,), lr_decay=0.5, seed=3, loss="adafocal", epochs=3, val_size=200)
BATCHES = 2  # training batches an epoch: 64 samples in batches of 32


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


class Classifier(torch.nn.Module):
    """The run's network as a Hugging Face model: keyword inputs, an output with `.logits`."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, inputs: torch.Tensor, labels: torch.Tensor | None = None) -> SequenceClassifierOutput:
        return SequenceClassifierOutput(logits=self.net(inputs))


class DictBatches:
    """A `BatchLoader` as a Trainer dataloader: dict batches; the Trainer's `set_epoch(e)` (e from 0) shuffles as the
    built-in trainer's epoch e + 1 (seed + e + 1)."""

    def __init__(self, loader: BatchLoader) -> None:
        self.loader = loader

    def set_epoch(self, epoch: int) -> None:
        self.loader.set_epoch(epoch + 1)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for inputs, labels in self.loader:
            yield {"inputs": inputs, "labels": labels}


class RunTrainer(CalibrationTrainer):
    """The run's batches: its shuffled training batches and its validation pass's batches (Trainer.predict_split's
    `BatchLoader` on the CPU), instead of the Trainer's own samplers and collator."""

    def __init__(self, *args, dataset, config, **kwargs) -> None:
        self.run_dataset, self.run_config = dataset, config
        super().__init__(*args, **kwargs)

    def get_train_dataloader(self):
        c = self.run_config
        return DictBatches(BatchLoader(self.run_dataset.train, c["batch_size"], dataset=self.run_dataset,
                                       shuffle=True, device="cpu", seed=c["seed"]))

    def get_eval_dataloader(self, eval_dataset=None):
        split = self.run_dataset.split("val")
        return DictBatches(BatchLoader(split, max(EVAL_BATCH_SIZE, self.run_config["batch_size"]),
                                       dataset=self.run_dataset, device="cpu"))


def huggingface_run(config: dict, tmp_path, *, lr: float | None = None, **strategy) -> RunTrainer:
    """The run `config` describes (built as adacal.training.entry builds it), trained by the Hugging Face Trainer."""
    seed_everything(config["seed"])
    dataset = load_dataset(config["dataset"], seed=config["seed"], train_subset=config["train_subset"],
                           val_size=config["val_size"])
    name = config["model"]
    net = build_model(name, num_classes=dataset.num_classes, input_shape=tuple(dataset.input_shape),
                      **model_options_for_dataset(name, dataset, config["model_options"] or {}))
    model = Classifier(net)
    optimizer = build_optimizer(net.parameters(), name=config["optimizer"], lr=lr or config["lr"],
                                weight_decay=config["weight_decay"], momentum=config["momentum"])
    # adacal steps the schedule once an epoch; the Trainer after every optimizer step: milestones in steps
    scheduler = build_scheduler(optimizer, [m * BATCHES for m in config["milestones"]], config["lr_decay"])
    args = TrainingArguments(output_dir=str(tmp_path / "hf"), report_to=[], use_cpu=True, save_strategy="no",
                             num_train_epochs=config["epochs"], max_grad_norm=0.0, seed=config["seed"],
                             disable_tqdm=True, log_level="error", logging_strategy="no",
                             **(strategy or {"eval_strategy": "epoch"}))
    trainer = RunTrainer(model=model, args=args, train_dataset=dataset.train, eval_dataset=dataset.split("val"),
                         loss=build_loss(config["loss"], **config["loss_options"]), optimizers=(optimizer, scheduler),
                         dataset=dataset, config=config)
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    return trainer


def _expected(result) -> list[list[float]]:
    lines = [json.loads(line) for line in (result.run_dir / "history.jsonl").read_text().splitlines()]
    return [update["gammas"] for line in lines for update in line["adafocal"]["updates"]]


@pytest.fixture(scope="module")
def epoch_run(tmp_path_factory, one_torch_thread):
    with one_torch_thread():
        return train(TrainConfig(**OPTIONS, update_every="epoch", out=str(tmp_path_factory.mktemp("runs"))))


@pytest.mark.slow
@pytest.mark.parametrize("update_every", ["epoch", "1"])  # after every epoch; after every batch (steps, 1 apart)
def test_gamma_trajectory_equals_adacal_train(update_every, epoch_run, tmp_path):
    if update_every == "epoch":
        result, strategy = epoch_run, {"eval_strategy": "epoch"}
    else:
        result = train(TrainConfig(**OPTIONS, update_every=update_every, out=str(tmp_path / "runs")))
        strategy = {"eval_strategy": "steps", "eval_steps": 1}
    expected = _expected(result)
    assert len(expected) == (3 if update_every == "epoch" else 3 * BATCHES)
    assert result.config["lr"] == OPTIONS["lr"] and result.config["grad_clip"] is None  # what the HF run mirrors

    trainer = huggingface_run(result.config, tmp_path, **strategy)
    got = [list(record["gammas"]) for record in trainer.calibration_loss.history]
    assert [step for step, _ in trainer.gamma_callback.records] == (
        [BATCHES, 2 * BATCHES, 3 * BATCHES] if update_every == "epoch" else list(range(1, 3 * BATCHES + 1)))
    assert len(got) == len(expected)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert len(set(map(tuple, np.round(expected, 6)))) == len(expected)  # γ moved at every update: not vacuous
    weights = load_checkpoint(result.run_dir / "checkpoints" / "last.pt")["model_state"]
    for key, value in trainer.model.net.state_dict().items():
        torch.testing.assert_close(value, weights[key], rtol=0, atol=0)


@pytest.mark.slow
def test_a_different_learning_rate_breaks_the_equality(epoch_run, tmp_path):
    expected = _expected(epoch_run)
    trainer = huggingface_run(epoch_run.config, tmp_path, lr=1.1 * OPTIONS["lr"])
    got = [list(record["gammas"]) for record in trainer.calibration_loss.history]
    assert len(got) == len(expected)
    assert np.abs(np.subtract(got, expected)).max() > 1e-4  # the comparison above can fail
