"""CalibrationTrainer and GammaUpdateCallback: the loss equals the adacal loss (and torch's cross-entropy) on the same
logits, γ follows `loss.update` on the evaluation predictions exactly, never learns outside training's evaluations,
survives a checkpoint and `resume_from_checkpoint`, and bad input is one line. Tiny BERTs built from configs."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers", reason="the Hugging Face integration needs transformers")

from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification  # noqa: E402
from transformers import Trainer, TrainingArguments, default_data_collator  # noqa: E402

from adacal.errors import CheckpointError, InputError, UnknownNameError  # noqa: E402
from adacal.integrations import huggingface as hf  # noqa: E402
from adacal.integrations import huggingface_outputs  # noqa: E402
from adacal.integrations.huggingface import (  # noqa: E402
    LOSS_STATE_NAME,
    CalibrationTrainer,
    GammaUpdateCallback,
    calibration_compute_metrics,
)
from adacal.losses import AdaFocalLoss, build_loss  # noqa: E402

K, T = 3, 6  # classes and tokens (different, so a transposed (N, T, K) cannot pass for (N, K, T))
CONFIG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
              num_labels=K)


def _rows(n: int, seed: int, *, tokens: bool) -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 50, (n, T), generator=generator)
    if tokens:
        labels = ids % K
        labels[torch.rand(n, T, generator=generator) < 0.3] = -100  # sub-word and padding positions
    else:
        labels = ids[:, 0] % K
    return [{"input_ids": ids[i], "attention_mask": torch.ones(T, dtype=torch.long), "labels": labels[i]}
            for i in range(n)]


def _model(tokens: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    cls = BertForTokenClassification if tokens else BertForSequenceClassification
    return cls(BertConfig(**CONFIG))


def _args(tmp_path, name: str = "run", **options) -> TrainingArguments:
    settings = dict(output_dir=str(tmp_path / name), report_to=[], use_cpu=True, eval_strategy="epoch",
                    save_strategy="no", num_train_epochs=2, per_device_train_batch_size=8, learning_rate=5e-3,
                    disable_tqdm=True, seed=0, log_level="error")
    settings.update(options)
    return TrainingArguments(**settings)


class _Recorder:
    """compute_metrics that keeps a copy of every EvalPrediction (the Trainer's gathered evaluation logits)."""

    def __init__(self) -> None:
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, eval_pred):
        self.seen.append((np.array(eval_pred.predictions), np.array(eval_pred.label_ids)))
        return {}


def _replayed_gammas(seen, **options) -> list[list[float]]:
    """γ after each `AdaFocalLoss.update` on the recorded evaluation predictions, (N, T, K) read as (N, K, T)."""
    loss = AdaFocalLoss(**options)
    gammas = []
    for logits, labels in seen:
        logits = torch.from_numpy(logits)
        if logits.ndim == 3:
            logits = logits.permute(0, 2, 1)
        gammas.append(list(loss.update(logits, torch.from_numpy(labels))["gammas"]))
    return gammas


def _pad_per_batch(rows):
    """A collator padding each batch to its longest row (ids 0, mask 0, labels -100), as token tasks pad."""
    width = max(len(row["input_ids"]) for row in rows)
    batch = {}
    for key, fill in (("input_ids", 0), ("attention_mask", 0), ("labels", -100)):
        batch[key] = torch.stack([F.pad(row[key], (0, width - len(row[key])), value=fill) for row in rows])
    return batch


def _ragged(rows):
    """Token rows cut to lengths 3 to 6, so evaluation batches differ in length (the Trainer pads them with -100)."""
    return [{key: value[: 3 + i % 4] for key, value in row.items()} for i, row in enumerate(rows)]


@pytest.fixture(scope="module")
def data():
    return {tokens: (_rows(32, 1, tokens=tokens), _rows(24, 2, tokens=tokens)) for tokens in (False, True)}


@pytest.mark.slow
@pytest.mark.parametrize("tokens", [False, True], ids=["sequence", "token"])
def test_gamma_follows_update_on_the_evaluation_predictions(tmp_path, data, tokens):
    train, val = data[tokens]
    recorder = _Recorder()
    if tokens:
        train, val = _ragged(train), _ragged(val)
    trainer = CalibrationTrainer(
        model=_model(tokens), args=_args(tmp_path, per_device_eval_batch_size=3), train_dataset=train,
        eval_dataset=val, loss="adafocal", loss_options={"n_bins": 4, "lam": 2.0}, compute_metrics=recorder,
        data_collator=_pad_per_batch if tokens else None,
    )
    trainer.train()
    history = trainer.calibration_loss.history
    assert len(recorder.seen) == len(history) == 2  # one update per evaluation
    for logits, labels in recorder.seen:
        assert logits.shape[0] == len(val)  # the evaluation set, not the training set
    expected = _replayed_gammas(recorder.seen, n_bins=4, lam=2.0)
    got = [list(record["gammas"]) for record in history]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert expected[0] != expected[1] and expected[0] != [1.0] * 4  # γ really moved
    labelled = sum(int((row["labels"] != -100).sum()) for row in val)
    assert sum(history[0]["counts"]) == labelled  # -100 positions (and the Trainer's padding) are no samples
    if tokens:
        assert (recorder.seen[0][0] == -100).all(axis=2).any()  # the Trainer did pad batches of other lengths
    # every update is in the logs, γ per bin
    logged = [entry for entry in trainer.state.log_history if "adafocal_gamma_0" in entry]
    assert [[entry[f"adafocal_gamma_{i}"] for i in range(4)] for entry in logged] == got
    # an evaluation outside training does not update γ
    trainer.evaluate()
    assert len(trainer.calibration_loss.history) == 2


def test_gamma_without_compute_metrics_and_from_the_named_eval_set(tmp_path, data):
    train, val = data[False]
    other = _rows(10, 3, tokens=False)
    trainer = CalibrationTrainer(
        model=_model(False), args=_args(tmp_path, num_train_epochs=1, eval_on_start=True), train_dataset=train,
        eval_dataset={"other": other, "val": val}, update_on="val", loss=AdaFocalLoss(n_bins=3),
    )
    trainer.train()
    (record,) = trainer.calibration_loss.history  # eval_on_start (the untrained model) does not update γ
    assert sum("eval_val_loss" in entry for entry in trainer.state.log_history) == 2
    assert sum(record["counts"]) == len(val)
    logits = trainer.predict(val).predictions
    labels = np.array([int(row["labels"]) for row in val])
    np.testing.assert_allclose(record["gammas"], AdaFocalLoss(n_bins=3).update(logits, labels)["gammas"], atol=1e-12)


@pytest.mark.parametrize("tokens", [False, True], ids=["sequence", "token"])
def test_the_loss_is_the_adacal_loss_on_the_logits(tmp_path, data, tokens):
    train, val = data[tokens]
    batch = default_data_collator(val[:8])
    model = _model(tokens).eval()
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    flat_logits, flat_labels = logits.reshape(-1, K), batch["labels"].reshape(-1)
    for name in ("ce", "adafocal", "focal"):
        trainer = CalibrationTrainer(model=model, args=_args(tmp_path), eval_dataset=val, loss=name)
        with torch.no_grad():
            loss, outputs = trainer.compute_loss(model, dict(batch), return_outputs=True)
        assert outputs.loss is None  # the model computed no loss of its own
        kept = flat_labels != -100
        reference = build_loss(name)(flat_logits[kept], flat_labels[kept])  # the loss's own (N, K) path
        assert loss.item() == pytest.approx(reference.item(), rel=1e-6)
        if name == "ce":  # and torch's, with its ignore_index
            torch_ce = F.cross_entropy(flat_logits, flat_labels, ignore_index=-100)
            assert loss.item() == pytest.approx(torch_ce.item(), rel=1e-6)


def test_training_batches_feed_the_training_statistics_evaluation_batches_do_not(tmp_path, data):
    train, val = data[True]
    model = _model(True)
    trainer = CalibrationTrainer(model=model, args=_args(tmp_path), eval_dataset=val, loss="adafocal")
    batch = trainer.data_collator(val[:4])
    model.train()
    trainer.compute_loss(model, dict(batch))
    assert int(trainer.calibration_loss.train_count.sum()) == int((batch["labels"] != -100).sum())
    model.eval()
    with torch.no_grad():
        trainer.compute_loss(model, dict(batch), return_outputs=True)
    assert int(trainer.calibration_loss.train_count.sum()) == int((batch["labels"] != -100).sum())


@pytest.mark.slow
def test_resume_from_checkpoint_gives_the_same_gamma(tmp_path, data):
    train, val = data[False]
    options = dict(save_strategy="epoch", num_train_epochs=2)
    whole = CalibrationTrainer(model=_model(False), args=_args(tmp_path, "whole", **options), train_dataset=train,
                               eval_dataset=val, loss="adafocal", loss_options={"n_bins": 4, "lam": 3.0})
    whole.train()
    first = os.path.join(tmp_path, "whole", "checkpoint-4")  # 32 samples / 8 per batch: epoch 1 ends at step 4
    assert os.path.isfile(os.path.join(first, LOSS_STATE_NAME))
    resumed = CalibrationTrainer(model=_model(False), args=_args(tmp_path, "resumed", **options), train_dataset=train,
                                 eval_dataset=val, loss="adafocal", loss_options={"n_bins": 4, "lam": 3.0})
    resumed.train(resume_from_checkpoint=first)
    expected = [record["gammas"] for record in whole.calibration_loss.history]
    got = [record["gammas"] for record in resumed.calibration_loss.history]
    assert len(got) == 2  # the first update came from the checkpoint, the second was made after resuming
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(resumed.calibration_loss.bin_edges.numpy(), whole.calibration_loss.bin_edges.numpy(),
                               rtol=0, atol=1e-9)
    # a checkpoint without the loss state is refused, not resumed from γ = gamma_init
    os.remove(os.path.join(first, LOSS_STATE_NAME))
    again = CalibrationTrainer(model=_model(False), args=_args(tmp_path, "again", **options), train_dataset=train,
                               eval_dataset=val, loss="adafocal", loss_options={"n_bins": 4, "lam": 3.0})
    with pytest.raises(CheckpointError, match=r"adacal_loss\.pt .*resume from a checkpoint that CalibrationTrainer"):
        again.train(resume_from_checkpoint=first)


class _NoLogits(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(T, K)

    def forward(self, input_ids, attention_mask=None):
        return {"scores": self.linear(input_ids.float())}


def test_bad_input_is_one_line(tmp_path, data):
    train, val = data[False]
    batch = default_data_collator(val[:4])
    trainer = CalibrationTrainer(model=_NoLogits(), args=_args(tmp_path), eval_dataset=val, loss="focal")
    with pytest.raises(InputError, match=r"^Expected the model's output to hold logits .* keys \['scores'\]"):
        trainer.compute_loss(trainer.model, dict(batch))
    no_labels = {key: value for key, value in batch.items() if key != "labels"}
    with pytest.raises(InputError, match=r"^Expected every batch to hold 'labels' .*label_names"):
        trainer.compute_loss(trainer.model, no_labels)
    model = _model(False)
    with pytest.raises(InputError, match=r"eval_strategy='epoch' or 'steps'.*got 'no'"):
        CalibrationTrainer(model=model, args=_args(tmp_path, eval_strategy="no"), loss="adafocal")
    with pytest.raises(InputError, match=r"^Expected an eval_dataset"):
        CalibrationTrainer(model=model, args=_args(tmp_path), loss="adafocal")
    with pytest.raises(InputError, match=r"update_on to name the eval dataset.*\['a', 'b'\]"):
        CalibrationTrainer(model=model, args=_args(tmp_path), eval_dataset={"a": val, "b": val}, loss="adafocal")
    with pytest.raises(InputError, match=r"no compute_loss_func"):
        CalibrationTrainer(model=model, args=_args(tmp_path), loss="focal", compute_loss_func=lambda *a, **k: 0)
    with pytest.raises(InputError, match=r"loss_options only with a loss given by name"):
        CalibrationTrainer(model=model, args=_args(tmp_path), loss=AdaFocalLoss(), loss_options={"n_bins": 3})
    with pytest.raises(UnknownNameError, match="adafocal"):
        CalibrationTrainer(model=model, args=_args(tmp_path), loss="adafocall")
    with pytest.raises(InputError, match=r"class_dim to be -1"):
        CalibrationTrainer(model=model, args=_args(tmp_path), loss="focal", class_dim=2)
    token_batch = default_data_collator(data[True][1][:4])
    token_trainer = CalibrationTrainer(model=_model(True), args=_args(tmp_path), eval_dataset=val, loss="focal",
                                       class_dim=1)
    shape = r"^Expected labels of shape \(4, 3\) \(the logits \(4, 6, 3\) without class_dim=1\).*pass class_dim=-1"
    with pytest.raises(InputError, match=shape):
        token_trainer.compute_loss(token_trainer.model, dict(token_batch))
    # the callback alone, in a plain Trainer, says what to use before any training
    plain = Trainer(model=model, args=_args(tmp_path), train_dataset=train, eval_dataset=val,
                    callbacks=[GammaUpdateCallback(AdaFocalLoss())])
    with pytest.raises(InputError, match=r"CalibrationTrainer"):
        plain.train()


@pytest.mark.slow
def test_the_module_needs_transformers_and_says_how_to_install_it():
    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "import adacal.integrations.huggingface_outputs\n"  # the transformers-free half imports
        "try:\n    import adacal.integrations.huggingface\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        'MissingDependencyError adacal.integrations.huggingface needs transformers, which is not installed: '
        'pip install "adacal[huggingface]".'
    )


@pytest.mark.slow
@pytest.mark.parametrize("module", [hf, huggingface_outputs], ids=["huggingface", "huggingface_outputs"])
def test_the_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failed == 0


def test_the_compute_metrics_factory_checks_its_options():
    with pytest.raises(UnknownNameError, match="ece-em"):
        calibration_compute_metrics(["ece-emm"])
    with pytest.raises(InputError, match="scores_kind"):
        calibration_compute_metrics(scores_kind="softmax")


@pytest.mark.slow
def test_the_documented_example_runs(capsys):
    from doc_blocks import run_section

    namespace = run_section("Hugging Face `Trainer`")
    history = namespace["trainer"].calibration_loss.history
    assert len(history) == 2 and len(namespace["gammas"]) == 5  # two evaluations in train; evaluate() added none
    assert set(namespace["metrics"]) >= {"eval_ece_em", "eval_ece_ew", "eval_nll", "eval_brier", "eval_accuracy"}
    checkpoint = namespace["trainer"].state.best_model_checkpoint or namespace["args"].output_dir
    assert any(LOSS_STATE_NAME in files for _, _, files in os.walk(checkpoint))
