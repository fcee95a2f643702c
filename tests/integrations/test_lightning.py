"""adacal.integrations.lightning: γ updated from Lightning's validation loop exactly as a hand-written loop calling
`loss.update_from` at the same points (and as `adacal train`: test_lightning_trainer.py), never in the sanity check;
the metrics it logs; the loss state across a checkpoint and resume; one-line refusals."""

from __future__ import annotations

import copy
import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch", reason="the callbacks need lightning: pip install adacal[lightning]")

from lightning_modules import Classifier, loaders, mlp, quiet_lightning, synthetic, trainer  # noqa: E402

from adacal.errors import InputError  # noqa: E402
from adacal.integrations import lightning as integration  # noqa: E402
from adacal.integrations import lightning_outputs  # noqa: E402
from adacal.integrations.lightning import (  # noqa: E402
    AdaFocalCallback,
    CalibrationLossCallback,
    CalibrationMetricsCallback,
    drop_sampler_padding,
    find_validation_loss,
    validation_step_pair,
)
from adacal.losses import AdaFocalLoss, CalFocalLoss, FocalLoss  # noqa: E402
from adacal.metrics import compute_metrics  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet(one_torch_thread):
    quiet_lightning()
    with one_torch_thread():
        yield


def gammas(loss) -> list[list[float]]:
    return [list(record["gammas"]) for record in loss.history]


def hand_loop(net, loss, train_loader, val_loader, *, epochs, every=None, lr=0.1):
    """The loop of README's "AdaFocal in your own loop": SGD steps, then `update_from` after every `every` batches
    of an epoch, or after the epoch when `every` is None."""
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    for _ in range(epochs):
        net.train()
        loss.train()
        for batch, (inputs, labels) in enumerate(train_loader, start=1):
            optimizer.zero_grad()
            loss(net(inputs), labels).backward()
            optimizer.step()
            if every is not None and batch % every == 0:
                loss.update_from(net, val_loader)
        if every is None:
            loss.update_from(net, val_loader)
    return loss


@pytest.mark.parametrize("every, sanity_steps", [(None, 2), (2, 0)])
def test_gamma_follows_a_hand_written_loop_and_never_the_sanity_check(every, sanity_steps):
    # 3 epochs of 3 batches: γ after each validation epoch (3 updates, none from the sanity check on the untrained
    # model), or after batches 2 of each epoch (3 updates; the first before Lightning ever set up its val loader).
    train_loader, val_loader = loaders()
    net = mlp()
    reference_net = copy.deepcopy(net)
    reference = hand_loop(reference_net, AdaFocalLoss(n_bins=5), train_loader, val_loader, epochs=3, every=every)
    module = Classifier(net)
    callback = CalibrationLossCallback() if every is None else CalibrationLossCallback(every_n_batches=every)
    trainer(max_epochs=3, callbacks=[callback], num_sanity_val_steps=sanity_steps).fit(
        module, train_loader, val_loader)
    assert callback.loss is module.loss
    assert len(module.loss.history) == 3
    np.testing.assert_allclose(gammas(module.loss), gammas(reference), rtol=0, atol=1e-12)
    np.testing.assert_allclose(module.loss.bin_edges, reference.bin_edges, rtol=0, atol=1e-12)
    for got, want in zip(module.net.state_dict().values(), reference_net.state_dict().values()):
        torch.testing.assert_close(got, want)  # the same steps: the weights agree as well as γ


def test_metrics_logged_are_those_of_the_validation_set():
    train_loader, val_loader = loaders()
    module = Classifier(mlp(), FocalLoss(gamma=2.0))
    callback = CalibrationMetricsCallback(metrics=["ECE-EM", "nll", "brier"], prefix="calib/", n_bins=5)
    fit = trainer(max_epochs=1, callbacks=[callback])
    fit.fit(module, train_loader, val_loader)
    module.eval()
    with torch.no_grad():
        logits = torch.cat([module(inputs) for inputs, _ in val_loader])
    labels = torch.cat([labels for _, labels in val_loader])
    logged = {key: float(value) for key, value in fit.callback_metrics.items() if key.startswith("calib/")}
    assert sorted(logged) == ["calib/brier", "calib/ece_em", "calib/nll"]
    # NLL by torch's own cross-entropy, Brier by its formula: independent of adacal.metrics
    assert logged["calib/nll"] == pytest.approx(torch.nn.functional.cross_entropy(logits, labels).item(), abs=1e-6)
    onehot = torch.nn.functional.one_hot(labels, 4).double()
    brier = ((logits.double().softmax(1) - onehot) ** 2).sum(1).mean().item()
    assert logged["calib/brier"] == pytest.approx(brier, abs=1e-6)
    ece = compute_metrics(logits.numpy(), labels.numpy(), names=["ece-em"], n_bins=5)["ece_em"]
    assert logged["calib/ece_em"] == pytest.approx(ece, abs=1e-6)
    assert callback.last_metrics == pytest.approx(logged, abs=1e-6)


def test_validate_logs_but_never_updates_and_pairs_are_read():
    train_loader, val_loader = loaders()
    module = Classifier(mlp(), returns="pair")
    callback = AdaFocalCallback(metrics=["nll"])
    results = trainer(max_epochs=1, callbacks=[callback]).validate(module, val_loader)
    assert module.loss.history == []  # trainer.validate is not training: γ stays
    assert results[0]["adafocal/updates"] == 0.0 and results[0]["adafocal/gamma_mean"] == 1.0
    assert results[0]["val/nll"] > 0
    assert module.loss.warn_after_steps is None  # the callback updates it: no MissingUpdateWarning


@pytest.mark.parametrize("where", ["submodule", "attribute", "hidden"])
def test_resuming_from_a_checkpoint_gives_the_gamma_history_of_a_straight_run(where, tmp_path):
    train_loader, val_loader = loaders()

    def run(epochs, net, ckpt_path=None):
        loss = AdaFocalLoss(n_bins=5)
        module = Classifier(copy.deepcopy(net), loss, where=where)
        callback = CalibrationLossCallback(loss if where == "hidden" else None)  # hidden: only the callback sees it
        fit = trainer(max_epochs=epochs, callbacks=[callback])
        fit.fit(module, train_loader, val_loader, ckpt_path=ckpt_path)
        return fit, module, loss

    net = mlp()
    _, _, straight = run(4, net)
    first, _, _ = run(2, net)
    checkpoint = tmp_path / "epoch2.ckpt"
    first.save_checkpoint(checkpoint)
    saved = torch.load(checkpoint, weights_only=False)
    in_module = any(key.startswith("loss.") for key in saved["state_dict"])
    in_callback = [state for state in saved["callbacks"].values() if "loss_state" in state]
    assert (in_module, len(in_callback)) == ((True, 0) if where == "submodule" else (False, 1))
    _, _, resumed = run(4, mlp(seed=7), ckpt_path=checkpoint)  # other initial weights: the checkpoint's are loaded
    assert len(resumed.history) == len(straight.history) == 4
    np.testing.assert_allclose(gammas(resumed), gammas(straight), rtol=0, atol=1e-12)
    torch.testing.assert_close(resumed.gammas, straight.gammas)


# --- pieces -----------------------------------------------------------------------------------------------------


def test_drop_sampler_padding_keeps_every_sample_once():
    # 45 samples on 4 ranks, batches of 4: DistributedSampler repeats 3 of them; each kept exactly once over the ranks.
    dataset = synthetic(45, 3)
    seen = []
    for rank in range(4):
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=4, rank=rank, shuffle=True, seed=5)
        indices = list(sampler)
        parts = [(torch.tensor(indices[i:i + 4], dtype=torch.float32).reshape(-1, 1).repeat(1, 2),
                  torch.tensor(indices[i:i + 4])) for i in range(0, len(indices), 4)]
        loader = torch.utils.data.DataLoader(dataset, batch_size=4, sampler=sampler)
        kept = drop_sampler_padding(parts, loader)
        seen += [int(i) for _, labels in kept for i in labels]
        assert drop_sampler_padding(parts[:-1], loader) == parts[:-1]  # a partial pass is left alone
    assert sorted(seen) == list(range(45))


def test_validation_step_outputs_are_read_or_refused_in_one_line():
    logits, labels = validation_step_pair((torch.zeros(2, 3, 4, dtype=torch.bfloat16), torch.zeros(2, 4).long()))
    assert logits.dtype == torch.float32 and labels.shape == (2, 4)
    cases = [
        (torch.tensor(0.5), "got a Tensor: return them"),
        (None, "got nothing"),
        ({"logits": torch.zeros(2, 3), "loss": 1.0}, "add 'labels'"),
        ((torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2)), "got a tuple of 3 items"),
        ((torch.zeros(2, 3), torch.zeros(2)), "integer class indices"),
        ((torch.zeros(2, 3), torch.zeros(3).long()), "to have 2 rows"),
        ((torch.zeros(3).long(), torch.zeros(3).long()), "float tensor"),
    ]
    for outputs, message in cases:
        with pytest.raises(InputError, match=message) as error:
            validation_step_pair(outputs)
        assert "\n" not in str(error.value)


def test_the_loss_is_found_on_the_module_or_refused():
    module = Classifier(mlp())
    assert find_validation_loss(module) is module.loss
    attribute = Classifier(mlp(), where="attribute")
    assert find_validation_loss(attribute) is attribute.loss
    with pytest.raises(InputError, match=r"got none \(it holds self.loss \(FocalLoss\), which does not learn"):
        find_validation_loss(Classifier(mlp(), FocalLoss()))
    with pytest.raises(InputError, match=r"it holds self.loss \(CrossEntropyLoss\)"):
        find_validation_loss(Classifier(mlp(), torch.nn.CrossEntropyLoss()))
    with pytest.raises(InputError, match="got none: set e.g. self.loss"):
        find_validation_loss(Classifier(mlp(), where="hidden"))
    two = Classifier(mlp())
    two.other = CalFocalLoss()
    with pytest.raises(InputError, match=r"got 2: self.loss \(AdaFocalLoss\), self.other \(CalFocalLoss\)"):
        find_validation_loss(two)
    with pytest.raises(InputError, match="got FocalLoss: use CalibrationMetricsCallback"):
        CalibrationLossCallback(FocalLoss())
    with pytest.raises(InputError, match="Expected update_every to be 'epoch'"):
        CalibrationLossCallback(update_every="0")
    with pytest.raises(InputError, match="Expected update_every"):
        CalibrationLossCallback(update_every=True)
    assert CalibrationLossCallback(every_n_batches=3).schedule.batches_for_epoch(7) == 3
    with pytest.raises(InputError, match="Expected one of update_every and every_n_batches"):
        CalibrationLossCallback(update_every=2, every_n_batches=3)
    with pytest.raises(InputError, match="Expected every_n_batches to be a positive integer"):
        CalibrationLossCallback(every_n_batches=0)
    assert CalibrationMetricsCallback(metrics=None).keys == CalibrationLossCallback(metrics=()).keys == ()
    with pytest.raises(InputError, match="Unknown metric"):
        CalibrationMetricsCallback(metrics=["ece-xx"])


class NoValidation(Classifier):
    validation_step = pl.LightningModule.validation_step


@pytest.mark.filterwarnings("ignore:.*Skipping val loop")
@pytest.mark.parametrize("case, message", [
    ("no validation_step", "Expected NoValidation to define validation_step for CalibrationLossCallback"),
    ("no val loader", "Expected a validation dataloader for CalibrationMetricsCallback, got none"),
    ("limit_val_batches=0", "Expected limit_val_batches above 0"),
    ("returns the loss", "Expected validation_step to return the batch's logits and labels"),
])
def test_a_fit_without_what_the_callback_needs_is_refused_in_one_line(case, message):
    train_loader, val_loader = loaders(n_train=32)
    module = NoValidation(mlp()) if case == "no validation_step" else Classifier(
        mlp(), returns="loss" if case == "returns the loss" else "dict")
    callback = CalibrationMetricsCallback() if case == "no val loader" else CalibrationLossCallback()
    options = {"limit_val_batches": 0} if case == "limit_val_batches=0" else {}
    with pytest.raises(InputError, match=message) as error:
        trainer(max_epochs=1, callbacks=[callback], **options).fit(
            module, train_loader, None if case == "no val loader" else val_loader)
    assert "\n" not in str(error.value)


def test_without_lightning_the_import_says_what_to_install(monkeypatch):
    for name in ("lightning", "lightning.pytorch", "pytorch_lightning"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of a None entry raises ImportError
    monkeypatch.delitem(sys.modules, "adacal.integrations.lightning")
    monkeypatch.setattr(sys.modules["adacal.integrations"], "lightning", integration)  # put back after the import
    monkeypatch.delitem(sys.modules, "adacal.integrations.lightning_outputs")
    monkeypatch.setattr(sys.modules["adacal.integrations"], "lightning_outputs", lightning_outputs)
    importlib.import_module("adacal.integrations.lightning_outputs")  # the Lightning-free half imports
    with pytest.raises(ImportError, match=r'pip install "adacal\[lightning\]"') as error:
        importlib.import_module("adacal.integrations.lightning")
    assert "\n" not in str(error.value)


def test_with_only_pytorch_lightning_the_callbacks_derive_from_it(monkeypatch):
    legacy = pytest.importorskip("pytorch_lightning", reason="the fallback needs pytorch_lightning installed")
    for name in ("lightning", "lightning.pytorch"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "adacal.integrations.lightning")
    monkeypatch.setattr(sys.modules["adacal.integrations"], "lightning", integration)  # put back after the import
    fallback = importlib.import_module("adacal.integrations.lightning")
    assert fallback.LIGHTNING_PACKAGE == "pytorch_lightning"
    assert issubclass(fallback.CalibrationLossCallback, legacy.Callback)


@pytest.mark.parametrize("module", [integration, lightning_outputs], ids=["lightning", "lightning_outputs"])
def test_the_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failed == 0 and attempted > 0


def test_the_documented_example_runs():
    from doc_blocks import run_section

    namespace = run_section("PyTorch Lightning")
    model, fit = namespace["model"], namespace["trainer"]
    assert len(model.loss.history) == fit.max_epochs  # one γ-update per epoch, none from the sanity check
    assert {"val/ece_em", "val/ece_ew", "val/nll", "val/brier", "adafocal/gamma_mean"} <= set(fit.callback_metrics)


@pytest.mark.slow
def test_import_adacal_never_imports_lightning():
    code = ("import sys, adacal, adacal.integrations, adacal.losses, adacal.training; "
            "print(sorted(m for m in ('lightning', 'pytorch_lightning') if m in sys.modules))")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


class Tagger(pl.LightningModule):
    """A per-position classifier: logits (N, K, T) for labels (N, T), padding labelled -100 (a sequence model)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = mlp()
        self.loss = AdaFocalLoss(n_bins=5)

    def forward(self, inputs):
        return self.net(inputs).transpose(1, 2)

    def training_step(self, batch, batch_idx):
        return self.loss(self(batch[0]), batch[1])

    def validation_step(self, batch, batch_idx):
        return {"logits": self(batch[0]), "labels": batch[1]}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def sequences(n: int, seed: int):
    data = synthetic(n * 6, seed)
    inputs, labels = data.tensors[0].reshape(n, 6, -1), data.tensors[1].reshape(n, 6).clone()
    labels[::3, 4:] = -100  # every third sequence is 4 long
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels), batch_size=8)


def test_positions_of_sequence_logits_are_samples_and_ignored_labels_count_nowhere():
    module, val_loader = Tagger(), sequences(20, 2)
    fit = trainer(max_epochs=1, callbacks=[CalibrationLossCallback(metrics=["nll"])])
    fit.fit(module, sequences(24, 1), val_loader)
    module.eval()
    with torch.no_grad():
        logits = torch.cat([module(inputs) for inputs, _ in val_loader])
    labels = torch.cat([labels for _, labels in val_loader])
    kept = int((labels != -100).sum())
    assert sum(module.loss.history[0]["counts"]) == kept == 20 * 6 - 7 * 2
    expected = AdaFocalLoss(n_bins=5).update(logits, labels)
    np.testing.assert_allclose(module.loss.history[0]["gammas"], expected["gammas"], rtol=0, atol=1e-12)
    nll = torch.nn.functional.cross_entropy(logits, labels, ignore_index=-100).item()
    assert float(fit.callback_metrics["val/nll"]) == pytest.approx(nll, abs=1e-6)
