"""The Hugging Face side of adacal's integration that needs no transformers: a model output's logits, the logits
with their class dimension where adacal's losses read it, an `EvalPrediction` as one row per labelled position, and
the `compute_metrics` of the calibration metrics (re-exported by `adacal.integrations.huggingface`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from adacal.errors import InputError

# What the Trainer pads predictions and labels with when it concatenates batches of different lengths.
HF_PADDING = -100
DEFAULT_METRICS = ("ece-em", "ece-ew", "nll", "brier", "accuracy")
_CLASS_DIMS = (-1, 1)
_SCORES_KINDS = ("logits", "probs", "auto")

def check_class_dim(class_dim: Any) -> int:
    """`class_dim` as -1 (classes last, as every Hugging Face classification head) or 1 ((N, K, d1, ...))."""
    if isinstance(class_dim, bool) or class_dim not in _CLASS_DIMS:
        raise InputError(
            f"Expected class_dim to be -1 (classes last, as Hugging Face heads output them) or 1, got {class_dim!r}."
        )
    return int(class_dim)


def classes_first(logits: torch.Tensor, labels: torch.Tensor, *, class_dim: int = -1) -> torch.Tensor:
    """The logits with their class dimension at 1, as adacal's losses (and torch's cross-entropy) read them.

    Args:
        logits: (N, K), or (N, d1, ..., K) with `class_dim=-1` (token classification: (N, T, K)), or (N, K, d1, ...)
            with `class_dim=1`.
        labels: (N,) or (N, d1, ...): the logits' shape without the class dimension.
        class_dim: where the classes are, -1 (default) or 1.

    Returns:
        (N, K) or (N, K, d1, ...) logits; a shape that does not fit the labels is a one-line InputError.

    Example:
        >>> import torch
        >>> from adacal.integrations.huggingface_outputs import classes_first
        >>> tuple(classes_first(torch.zeros(2, 7, 3), torch.zeros(2, 7, dtype=torch.long)).shape)
        (2, 3, 7)
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise InputError(
            f"Expected the logits and labels to be torch tensors, got {type(logits).__name__} and "
            f"{type(labels).__name__}."
        )
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise InputError(
            f"Expected labels to be integer class indices, got {labels.dtype} of shape {tuple(labels.shape)}: "
            "multi-label targets and regression values are not classes for a calibration loss."
        )
    _check_shapes(tuple(logits.shape), tuple(labels.shape), class_dim)
    return logits.movedim(-1, 1) if class_dim == -1 and logits.ndim > 2 else logits


def _check_shapes(logits_shape: tuple[int, ...], labels_shape: tuple[int, ...], class_dim: int) -> None:
    """Refuse labels whose shape is not the logits' without the class dimension."""
    if len(logits_shape) < 2:
        raise InputError(f"Expected logits with a class dimension, (N, K) or more, got shape {logits_shape}.")
    dim = len(logits_shape) - 1 if class_dim == -1 else 1
    expected = logits_shape[:dim] + logits_shape[dim + 1 :]
    if labels_shape != expected:
        other = 1 if class_dim == -1 else -1
        raise InputError(
            f"Expected labels of shape {expected} (the logits {logits_shape} without class_dim={class_dim}), "
            f"got shape {labels_shape}: pass class_dim={other} if the classes are on dimension {other}."
        )


def output_logits(outputs: Any) -> torch.Tensor:
    """The logits of a model's output: its `.logits` (a Hugging Face `ModelOutput`, or a dict with "logits"), or the
    output itself when it is a tensor; anything else is a one-line InputError.

    Example:
        >>> import torch
        >>> from adacal.integrations.huggingface_outputs import output_logits
        >>> output_logits({"logits": torch.zeros(2, 3)}).shape
        torch.Size([2, 3])
    """
    if isinstance(outputs, torch.Tensor):
        return outputs
    logits = outputs.get("logits") if isinstance(outputs, Mapping) else getattr(outputs, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    keys = f" with keys {sorted(map(str, outputs))}" if isinstance(outputs, Mapping) else ""
    raise InputError(
        f"Expected the model's output to hold logits (an output with .logits, as the ...ForSequenceClassification "
        f"and ...ForTokenClassification models return), got {type(outputs).__name__}{keys}: return the logits, "
        "or an output with a 'logits' entry."
    )


def evaluation_arrays(
    predictions: Any, label_ids: Any, *, class_dim: int = -1, ignore_index: int | None = HF_PADDING
) -> tuple[np.ndarray, np.ndarray]:
    """An `EvalPrediction`'s logits and labels as one row per labelled position: (M, K) scores and (M,) labels.

    Args:
        predictions: the logits (N, K) or (N, T, K) (class_dim=-1); a tuple of model outputs (its first is taken:
            the logits), or a list of per-batch arrays (`eval_do_concat_batches=False`); numpy or torch.
        label_ids: the labels (N,) or (N, T), or a list of per-batch arrays.
        class_dim: where the classes are, -1 (default) or 1.
        ignore_index: a label to leave out besides -100 (the Trainer's padding, always left out); None: none.

    Returns:
        (scores, labels): scores (M, K) in the predictions' dtype (float16 as float32), as `loss.update` would read
        them, and int64 labels (M,), of the positions whose label is a class.

    Example:
        >>> import numpy as np
        >>> from adacal.integrations.huggingface_outputs import evaluation_arrays
        >>> logits = np.zeros((2, 3, 4))  # 2 sequences of 3 tokens, 4 classes
        >>> scores, labels = evaluation_arrays(logits, np.array([[1, -100, 2], [0, 3, -100]]))
        >>> scores.shape, labels.tolist()
        ((4, 4), [1, 2, 0, 3])
    """
    class_dim = check_class_dim(class_dim)
    if isinstance(label_ids, tuple):
        raise InputError(
            f"Expected one labels array in the evaluation predictions, got {len(label_ids)} (several label_names): "
            "pass TrainingArguments(label_names=[...]) with the one that holds the class indices."
        )
    if label_ids is None:
        raise InputError(
            "Expected the evaluation predictions to carry labels, got none: give the eval_dataset a 'labels' column."
        )
    if isinstance(predictions, tuple):  # several model outputs: the logits come first
        predictions = predictions[0] if predictions else None
    if isinstance(predictions, list) != isinstance(label_ids, list):
        raise InputError(
            "Expected predictions and labels both per batch (lists) or both concatenated, got one of each."
        )
    if isinstance(predictions, list):
        if len(predictions) != len(label_ids) or not predictions:
            raise InputError(
                f"Expected as many prediction batches as label batches, got {len(predictions)} and {len(label_ids)}."
            )
        parts = [evaluation_arrays(p, y, class_dim=class_dim, ignore_index=ignore_index)
                 for p, y in zip(predictions, label_ids)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    scores, labels = _host(predictions, "predictions"), _host(label_ids, "label_ids")
    if not np.issubdtype(scores.dtype, np.number) or np.issubdtype(scores.dtype, np.complexfloating):
        raise InputError(f"Expected the predictions to be numbers (the logits), got an array of dtype {scores.dtype}.")
    if not (np.issubdtype(labels.dtype, np.integer) or np.issubdtype(labels.dtype, np.floating)):
        raise InputError(f"Expected label_ids to be class indices, got an array of dtype {labels.dtype}.")
    _check_shapes(tuple(scores.shape), tuple(labels.shape), class_dim)
    if scores.ndim > 2:
        scores = np.moveaxis(scores, 1, -1) if class_dim == 1 else scores
        scores = scores.reshape(-1, scores.shape[-1])
        labels = labels.reshape(-1)
    if np.issubdtype(labels.dtype, np.floating):
        if not (np.isfinite(labels).all() and (labels == np.round(labels)).all()):
            raise InputError("Expected label_ids to be whole class indices, got fractional or non-finite values.")
    labels = labels.astype(np.int64)
    keep = labels != HF_PADDING
    if ignore_index is not None:
        keep &= labels != ignore_index
    scores = scores[keep]
    return (scores.astype(np.float32) if scores.dtype == np.float16 else scores), labels[keep]


def calibration_compute_metrics(
    metrics: str | Iterable[str] = DEFAULT_METRICS, *, n_bins: int = 15, scores_kind: str = "logits",
    class_dim: int = -1, ignore_index: int | None = HF_PADDING,
) -> Any:
    """A `compute_metrics` for `transformers.Trainer` that returns adacal's calibration metrics of the evaluation.

    Args:
        metrics: adacal metric names (`adacal.metrics.resolve_metric_names`), plus "accuracy" (1 − error); default
            ECE-EM, ECE-EW, NLL, Brier and accuracy.
        n_bins: bins of the binned metrics (default 15).
        scores_kind: what the predictions are: "logits" (default: a Hugging Face model outputs logits), "probs" (a
            model configured to output probabilities), or "auto" (docs/inputs.md §2).
        class_dim, ignore_index: as `evaluation_arrays` (-100 positions of token tasks are always left out).

    Returns:
        A function of an `EvalPrediction` returning {"ece_em": ..., ...} (the Trainer prefixes "eval_"); with
        `batch_eval_metrics=True` it gathers the batches and returns the metrics at the last one.

    Example:
        >>> import numpy as np
        >>> from adacal.integrations.huggingface_outputs import calibration_compute_metrics
        >>> compute = calibration_compute_metrics(["nll", "accuracy"])
        >>> result = compute((np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([0, 0])))  # or an EvalPrediction
        >>> sorted(result), result["accuracy"]
        (['accuracy', 'nll'], 0.5)
    """
    from adacal.losses.base import check_positive_int
    from adacal.metrics import metric_key, resolve_metric_names

    items = [metrics] if isinstance(metrics, str) else metrics
    if not isinstance(items, Iterable):
        raise InputError(f"Expected metrics to be metric names (e.g. ('ece-em', 'nll')), got {metrics!r}.")
    items = [part.strip() for item in items for part in (item.split(",") if isinstance(item, str) else [item])]
    wants_accuracy = any(isinstance(item, str) and item.lower() == "accuracy" for item in items)
    names = [item for item in items if not (isinstance(item, str) and item.lower() == "accuracy")]
    resolved = resolve_metric_names(names) if names else ()
    n_bins = check_positive_int("n_bins", n_bins)
    if scores_kind not in _SCORES_KINDS:
        raise InputError(f"Expected scores_kind to be 'logits', 'probs' or 'auto', got {scores_kind!r}.")
    class_dim = check_class_dim(class_dim)
    order = [name if not (isinstance(name, str) and name.lower() == "accuracy") else "accuracy" for name in items]
    keys = [metric_key(name) if name != "accuracy" else "accuracy" for name in order if name]
    batches: list[tuple[np.ndarray, np.ndarray]] = []

    def compute(eval_pred: Any, compute_result: bool | None = None) -> dict[str, float]:
        scores, labels = evaluation_arrays(
            _field(eval_pred, "predictions", 0), _field(eval_pred, "label_ids", 1), class_dim=class_dim,
            ignore_index=ignore_index,
        )
        if compute_result is not None:  # batch_eval_metrics: one batch per call, the result at the last
            batches.append((scores, labels))
            if not compute_result:
                return {}
            scores = np.concatenate([b[0] for b in batches])
            labels = np.concatenate([b[1] for b in batches])
            batches.clear()
        if labels.shape[0] == 0:
            raise InputError("Expected the evaluation to hold at least one labelled position, got none (all -100).")
        asked = tuple(dict.fromkeys((*resolved, *(("error",) if wants_accuracy else ()))))
        from adacal.metrics import compute_metrics

        values = compute_metrics(scores, labels, n_bins=n_bins, names=asked, scores_kind=scores_kind)
        if wants_accuracy:
            values["accuracy"] = 1.0 - values["error"]
        return {key: float(values[key]) for key in dict.fromkeys(keys)}

    return compute


def _host(values: Any, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach()
        if values.dtype in (torch.float16, torch.bfloat16):
            values = values.float()
        return values.cpu().numpy()
    try:
        return np.asarray(values)
    except (TypeError, ValueError):
        raise InputError(f"Expected {name} to be an array, got {type(values).__name__}.") from None


def _field(eval_pred: Any, name: str, index: int) -> Any:
    """`eval_pred.<name>` of an `EvalPrediction` (or the index-th item of a (predictions, labels) tuple)."""
    if hasattr(eval_pred, name):
        return getattr(eval_pred, name)
    if isinstance(eval_pred, (tuple, list)) and len(eval_pred) >= 2:
        return eval_pred[index]
    raise InputError(
        f"Expected an EvalPrediction (predictions and label_ids), got {type(eval_pred).__name__}."
    )
