"""adacal in the Hugging Face `Trainer`: train with any adacal loss, update a validation-driven loss's γ after each
evaluation, and report the calibration metrics from `compute_metrics` (`pip install "adacal[huggingface]"`).

    from adacal.integrations.huggingface import CalibrationTrainer, calibration_compute_metrics
    trainer = CalibrationTrainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                                 loss="adafocal", loss_options={"n_bins": 15},
                                 compute_metrics=calibration_compute_metrics())
    trainer.train()              # γ updated from the evaluation logits after every evaluation of the run

- `CalibrationTrainer.compute_loss` trains on `outputs.logits` and the batch's labels with the adacal loss (the
  model computes no loss of its own): sequence classification (N, K), token classification (N, T, K) with -100
  labels left out; Hugging Face heads put the classes last (`class_dim=-1`), `class_dim=1` reads (N, K, d1, ...).
- `GammaUpdateCallback` (added by the trainer) updates γ in `on_evaluate` from that evaluation's logits and labels,
  as the Trainer gathered them from every process (the same on every rank), so γ follows exactly
  `loss.update(val_logits, val_labels)` on the evaluation predictions. Only the evaluations that `train` schedules
  on the trainer's own `eval_dataset` after a training step update γ: never a call of `evaluate` outside training,
  nor `eval_on_start` (the untrained model), nor another dataset (so never the training set); each update is
  logged (`<loss>_gamma_<i>`, `<loss>_gap_<i>` per bin).
- The loss state (bins, γ, history) is saved beside every checkpoint as `adacal_loss.pt` and loaded back by
  `train(resume_from_checkpoint=...)`, so a resumed run has the γ of an uninterrupted one. (A separate file rather
  than a submodule of the model: the model's weights, `save_pretrained` and `from_pretrained` stay the user's.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from adacal.errors import AdacalError, CheckpointError, InputError
from adacal.integrations.huggingface_outputs import (
    DEFAULT_METRICS,
    HF_PADDING,
    calibration_compute_metrics,
    check_class_dim,
    classes_first,
    evaluation_arrays,
    output_logits,
)


class MissingDependencyError(AdacalError, ImportError):
    """An optional package the integration needs is not installed (an ImportError too)."""


try:
    from transformers import Trainer, TrainerCallback
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
except ImportError:
    raise MissingDependencyError(
        'adacal.integrations.huggingface needs transformers, which is not installed: pip install "adacal[huggingface]".'
    ) from None

# The file beside each checkpoint that holds the loss's state_dict.
LOSS_STATE_NAME = "adacal_loss.pt"

__all__ = [
    "DEFAULT_METRICS",
    "HF_PADDING",
    "LOSS_STATE_NAME",
    "CalibrationTrainer",
    "GammaUpdateCallback",
    "MissingDependencyError",
    "calibration_compute_metrics",
    "check_class_dim",
    "classes_first",
    "evaluation_arrays",
    "gamma_logs",
    "output_logits",
    "resolve_loss",
]


class GammaUpdateCallback(TrainerCallback):
    """Updates a validation-driven loss (AdaFocal, CalFocal) after each evaluation that `CalibrationTrainer.train`
    schedules, from that evaluation's logits and labels (gathered from every process by the Trainer), by
    `loss.update`. `CalibrationTrainer` adds it and hands it the predictions; `records` holds (global step, record)
    of every update it made.

    Args:
        loss: the loss to update (the trainer's `calibration_loss`).
        class_dim: where the classes are in the logits, -1 (default) or 1.

    Example:
        >>> import numpy as np
        >>> from adacal.losses import AdaFocalLoss
        >>> from adacal.integrations.huggingface import GammaUpdateCallback
        >>> callback = GammaUpdateCallback(AdaFocalLoss(n_bins=2))
        >>> record = callback.update(np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([0, 0]))
        >>> len(record["gammas"])
        2
    """

    def __init__(self, loss: torch.nn.Module, *, class_dim: int = -1) -> None:
        if not callable(getattr(loss, "update", None)):
            raise InputError(
                f"Expected a loss that learns from validation (with update(), such as 'adafocal'), got "
                f"{type(loss).__name__}."
            )
        self.loss = loss
        self.class_dim = check_class_dim(class_dim)
        self.records: list[tuple[int, Any]] = []
        self.pending: tuple[Any, Any] | None = None
        self.bound = False
        self.stepped = False  # whether this `train` call has made an optimizer step yet

    def update(self, predictions: Any, label_ids: Any) -> Any:
        """`loss.update` on an evaluation's predictions and labels (`evaluation_arrays`: the loss's ignore_index and
        the Trainer's -100 padding left out); returns the loss's record."""
        scores, labels = evaluation_arrays(
            predictions, label_ids, class_dim=self.class_dim, ignore_index=getattr(self.loss, "ignore_index", None)
        )
        if labels.shape[0] == 0:
            raise InputError("Expected the evaluation to hold at least one labelled position, got none (all -100).")
        return self.loss.update(torch.from_numpy(scores), torch.from_numpy(labels))

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.bound:
            raise InputError(
                "Expected GammaUpdateCallback inside adacal's CalibrationTrainer (which hands it the evaluation "
                "logits), got a plain Trainer: use adacal.integrations.huggingface.CalibrationTrainer."
            )
        self.stepped = False

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.stepped = True

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            self.records.append((int(state.global_step), self.update(*pending)))


def gamma_logs(record: Any, name: str) -> dict[str, float]:
    """The scalars of an update record that the Trainer logs: `<name>_gamma_<i>` (γ after the update) and
    `<name>_gap_<i>` (E_val = C_val − A_val) of every bin that holds validation samples; for a CALS record
    `<name>_lambda_<j>` and `<name>_rho_<j>` of every class.

    Example:
        >>> from adacal.integrations.huggingface import gamma_logs
        >>> record = {"gammas": [1.5, 0.8], "val_confidence": [0.6, 0.9], "val_accuracy": [0.5, None], "counts": [4, 0]}
        >>> gamma_logs(record, "adafocal")
        {'adafocal_gamma_0': 1.5, 'adafocal_gap_0': 0.1, 'adafocal_gamma_1': 0.8}
    """
    logs: dict[str, float] = {}
    if "multipliers" in record:  # CALS: each class's multiplier λ and penalty ρ after the update
        for i, (multiplier, rho) in enumerate(zip(record["multipliers"], record["rho"])):
            logs[f"{name}_lambda_{i}"], logs[f"{name}_rho_{i}"] = float(multiplier), float(rho)
        return logs
    gammas = record["gammas"]
    for i, (confidence, accuracy) in enumerate(zip(record["val_confidence"], record["val_accuracy"])):
        if gammas is not None and gammas[i] is not None:
            logs[f"{name}_gamma_{i}"] = float(gammas[i])
        if record["counts"][i] and confidence is not None and accuracy is not None:
            logs[f"{name}_gap_{i}"] = round(float(confidence) - float(accuracy), 12)
    return logs


class CalibrationTrainer(Trainer):
    """A `transformers.Trainer` that trains with an adacal loss on the model's logits and, for a validation-driven
    loss (AdaFocal, CalFocal), updates γ after each evaluation of the run (`GammaUpdateCallback`), logs it, and keeps
    the loss state in every checkpoint (`adacal_loss.pt`) for `resume_from_checkpoint`.

    Args:
        *args, **kwargs: what `transformers.Trainer` takes (model, args, train_dataset, eval_dataset,
            compute_metrics, ...), except `compute_loss_func` (the adacal loss is the loss).
        loss: an adacal loss (an `nn.Module` taking (logits, labels)), or a registered name ("adafocal", "focal", ...).
        loss_options: the options of a loss given by name (`adacal.losses.build_loss`).
        class_dim: where the classes are in the logits: -1 (default, every Hugging Face head) or 1.
        update_on: with several eval datasets (a dict), the name of the one γ learns from.

    Returns:
        The trainer; `trainer.calibration_loss` is the loss, `trainer.gamma_callback.records` its updates.

    Example:
        >>> import torch, tempfile
        >>> from transformers import PrinterCallback, TrainingArguments
        >>> from adacal.integrations.huggingface import CalibrationTrainer
        >>> class Tiny(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = torch.nn.Linear(4, 3)
        ...     def forward(self, features):
        ...         return {"logits": self.linear(features)}
        >>> def rows(n):
        ...     return [{"features": torch.randn(4), "labels": torch.tensor(i % 3)} for i in range(n)]
        >>> train, val = rows(12), rows(6)
        >>> args = TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[], use_cpu=True, eval_strategy="epoch",
        ...                          save_strategy="no", num_train_epochs=2, disable_tqdm=True)
        >>> trainer = CalibrationTrainer(model=Tiny(), args=args, train_dataset=train, eval_dataset=val,
        ...                              loss="adafocal", loss_options={"n_bins": 3})
        >>> trainer.remove_callback(PrinterCallback)  # the example prints nothing
        >>> _ = trainer.train()
        >>> len(trainer.calibration_loss.history)  # one γ update per evaluation
        2
    """

    def __init__(
        self, *args: Any, loss: Any, loss_options: Mapping[str, Any] | None = None, class_dim: int = -1,
        update_on: str | None = None, **kwargs: Any,
    ) -> None:
        if kwargs.get("compute_loss_func") is not None:
            raise InputError(
                "Expected no compute_loss_func with CalibrationTrainer, got one: the adacal loss (loss=) is the loss."
            )
        self.calibration_loss = resolve_loss(loss, loss_options)
        self.class_dim = check_class_dim(class_dim)
        validation = getattr(self.calibration_loss, "needs_validation", False)
        update_on = _check_evaluation(self.calibration_loss, update_on, _trainer_arguments(args, kwargs)) \
            if validation else None
        super().__init__(*args, **kwargs)
        # The loss is a per-batch mean: the Trainer divides it by the gradient-accumulation steps itself.
        self.model_accepts_loss_kwargs = False
        self.loss_is_scaled_for_ga = False
        if not self.label_names:  # the model need not take labels: they are the loss's, taken out of the batch
            self.label_names = ["labels"]
        self._label_key = self.label_names[0] if len(self.label_names) == 1 else "labels"
        self._collect = False
        self._loss_device: torch.device | None = None
        self.gamma_callback: GammaUpdateCallback | None = None
        self._update_on = update_on
        if validation:
            self.gamma_callback = GammaUpdateCallback(self.calibration_loss, class_dim=self.class_dim)
            self.gamma_callback.bound = True
            self.add_callback(self.gamma_callback)

    # --- the loss ------------------------------------------------------------------------------------------------

    def compute_loss(
        self, model: torch.nn.Module, inputs: dict[str, Any], return_outputs: bool = False,
        num_items_in_batch: Any = None, **kwargs: Any,
    ) -> Any:
        """The adacal loss of the model's logits on the batch's labels (the labels are not passed to the model, which
        computes no loss of its own); with `return_outputs`, (loss, outputs) as `Trainer.compute_loss`."""
        key = self._label_key
        if not isinstance(inputs, Mapping) or inputs.get(key) is None:
            found = f"keys {sorted(map(str, inputs))}" if isinstance(inputs, Mapping) else type(inputs).__name__
            raise InputError(
                f"Expected every batch to hold {key!r} (the class indices the loss trains on), got {found}: give the "
                f"dataset a 'labels' column, or name it with TrainingArguments(label_names=[...])."
            )
        labels = inputs[key]
        outputs = model(**{name: value for name, value in inputs.items() if name != key})
        logits = output_logits(outputs)
        loss_fn = self._loss_on(logits.device)
        loss_fn.train(model.training)  # evaluation batches add nothing to the training statistics
        loss = loss_fn(classes_first(logits, labels, class_dim=self.class_dim), labels)
        if not return_outputs:
            return loss
        return loss, outputs if isinstance(outputs, Mapping) else {"logits": logits}

    def _loss_on(self, device: torch.device) -> torch.nn.Module:
        if self._loss_device != device:
            self.calibration_loss.to(device)
            self._loss_device = device
        return self.calibration_loss

    # --- the γ update after each evaluation ----------------------------------------------------------------------

    def _updates_from(self, eval_dataset: Any) -> bool:
        """Whether this evaluation feeds the γ update: one that `train` runs on the trainer's own eval set."""
        if self.gamma_callback is None or not self.is_in_train or not self.gamma_callback.stepped:
            return False  # outside training, or `eval_on_start` (the untrained model; again when resuming)
        if eval_dataset is None:
            return not isinstance(self.eval_dataset, Mapping)
        return isinstance(eval_dataset, str) and eval_dataset == self._update_on

    def evaluate(self, eval_dataset: Any = None, ignore_keys: list[str] | None = None,
                 metric_key_prefix: str = "eval", **kwargs: Any) -> dict[str, float]:
        """`Trainer.evaluate`; during training, on the trainer's eval set, it also updates γ (in the callback's
        `on_evaluate`) and logs the update."""
        collect = self._updates_from(eval_dataset)
        self._collect = collect
        try:
            metrics = super().evaluate(eval_dataset, ignore_keys, metric_key_prefix, **kwargs)
        finally:
            self._collect = False
            if self.gamma_callback is not None:
                self.gamma_callback.pending = None
        if collect and self.gamma_callback.records:
            step, record = self.gamma_callback.records[-1]
            if step == self.state.global_step:
                self.log(gamma_logs(record, getattr(self.calibration_loss, "name", "") or "loss"))
        return metrics

    def evaluation_loop(self, dataloader: Any, description: str, prediction_loss_only: bool | None = None,
                        ignore_keys: list[str] | None = None, metric_key_prefix: str = "eval", **kwargs: Any) -> Any:
        collect, self._collect = self._collect, False
        if collect:
            prediction_loss_only = False  # the logits are needed even without compute_metrics
        output = super().evaluation_loop(
            dataloader, description, prediction_loss_only=prediction_loss_only, ignore_keys=ignore_keys,
            metric_key_prefix=metric_key_prefix, **kwargs,
        )
        if collect:
            self.gamma_callback.pending = (output.predictions, output.label_ids)
        return output

    # --- the loss state in checkpoints ---------------------------------------------------------------------------

    def _save_checkpoint(self, model: Any, trial: Any, *args: Any, **kwargs: Any) -> None:
        super()._save_checkpoint(model, trial, *args, **kwargs)
        if not self.args.should_save:
            return
        from adacal.reports import atomic_torch_save

        run_dir = self._get_output_dir(trial=trial) if hasattr(self, "_get_output_dir") else self.args.output_dir
        folder = os.path.join(run_dir, f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        state = {name: value.detach().cpu() if isinstance(value, torch.Tensor) else value
                 for name, value in self.calibration_loss.state_dict().items()}
        atomic_torch_save(state, os.path.join(folder, LOSS_STATE_NAME))

    def _load_optimizer_and_scheduler(self, checkpoint: Any) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            self.load_loss_state(checkpoint)

    def load_loss_state(self, checkpoint: str | os.PathLike) -> None:
        """Load the loss state saved in a checkpoint folder (`adacal_loss.pt`), as resuming does. A folder without
        one is refused for a loss with state (resuming would restart γ from gamma_init)."""
        path = os.path.join(os.fspath(checkpoint), LOSS_STATE_NAME)
        if not os.path.isfile(path):
            if not self.calibration_loss.state_dict():
                return
            raise CheckpointError(
                f"Expected {path} (the {type(self.calibration_loss).__name__} state CalibrationTrainer saves with "
                "each checkpoint), got no such file: resume from a checkpoint that CalibrationTrainer wrote."
            )
        from adacal.sources.files import safe_torch_load

        state = safe_torch_load(path, what="adacal loss state")
        try:
            self.calibration_loss.load_state_dict(state)
        except RuntimeError as exc:
            raise CheckpointError(
                f"Expected {path} to hold the state of this {type(self.calibration_loss).__name__}, got another "
                f"({str(exc).splitlines()[0]})."
            ) from None


def _check_evaluation(loss: Any, update_on: str | None, given: Mapping[str, Any]) -> str | None:
    """Refuse, before the Trainer is built, a setup where γ would never (or wrongly) be updated."""
    training_args, eval_dataset = given.get("args"), given.get("eval_dataset")
    strategy = getattr(training_args, "eval_strategy", None) or getattr(training_args, "evaluation_strategy", "no")
    if str(getattr(strategy, "value", strategy)) == "no":
        raise InputError(
            f"Expected TrainingArguments(eval_strategy='epoch' or 'steps') with "
            f"{type(loss).__name__}, got 'no': γ is updated after each evaluation, so without one "
            "it would stay gamma_init."
        )
    if eval_dataset is None:
        raise InputError(
            f"Expected an eval_dataset with {type(loss).__name__}, got none: γ learns from the "
            "evaluation set's logits; pass eval_dataset= (never the training set)."
        )
    if getattr(training_args, "batch_eval_metrics", False):
        raise InputError(
            "Expected batch_eval_metrics=False with a validation-driven loss, got True: the γ update needs the "
            "whole evaluation set's logits."
        )
    if given.get("preprocess_logits_for_metrics") is not None:
        raise InputError(
            "Expected no preprocess_logits_for_metrics with a validation-driven loss, got one: the γ update needs "
            "the evaluation logits as the model outputs them."
        )
    if isinstance(eval_dataset, Mapping):
        names = [str(name) for name in eval_dataset]
        if update_on is None and len(names) == 1:
            return names[0]
        if update_on not in names:
            raise InputError(
                f"Expected update_on to name the eval dataset γ learns from, one of {names}, got {update_on!r}."
            )
        return update_on
    if update_on is not None:
        raise InputError(f"Expected update_on=None with a single eval_dataset, got {update_on!r}.")
    return None


def _trainer_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments given to `Trainer.__init__` by name, positional ones included (args, eval_dataset, ...)."""
    import inspect

    try:
        bound = inspect.signature(Trainer.__init__).bind_partial(None, *args, **kwargs)
    except TypeError as exc:
        raise InputError(f"Expected the arguments of transformers.Trainer, got others: {exc}.") from None
    return dict(bound.arguments)


def resolve_loss(loss: Any, loss_options: Mapping[str, Any] | None = None) -> torch.nn.Module:
    """The loss a `CalibrationTrainer` trains with: an `nn.Module` as given, or `build_loss(name, **loss_options)`.

    Example:
        >>> from adacal.integrations.huggingface import resolve_loss
        >>> resolve_loss("focal", {"gamma": 2.0})
        FocalLoss(gamma=2)
    """
    if loss_options is not None and not isinstance(loss_options, Mapping):
        raise InputError(f"Expected loss_options to be a dict of options, got {type(loss_options).__name__}.")
    if isinstance(loss, str):
        from adacal.losses import build_loss

        return build_loss(loss, **dict(loss_options or {}))
    if isinstance(loss, torch.nn.Module):
        if loss_options:
            raise InputError(
                f"Expected loss_options only with a loss given by name, got a {type(loss).__name__} and options "
                f"{sorted(loss_options)}: set them when building the loss."
            )
        return loss
    raise InputError(
        f"Expected loss to be an adacal loss (an nn.Module) or a registered name such as 'adafocal', got "
        f"{type(loss).__name__}."
    )
