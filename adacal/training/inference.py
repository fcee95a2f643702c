"""Running a model over a dataset split: logits for metrics, γ-updates, predictions.npz and `adacal evaluate`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.checks import check_integer
from adacal.errors import CheckpointError, DataUnavailableError, InputError
from adacal.data.loader import resolve_device  # noqa: F401  (the one --device reading, importable here too)
from adacal.predictions import Predictions
from adacal.training.checkpoints import checkpoint_test_subset_method, load_checkpoint, resolve_checkpoint_path

SPLITS = ("train", "val", "test")
EVAL_BATCH_SIZE = 512
CUDA_EVAL_BATCH_SIZE = 1024  # the trainer's validation and test passes on a GPU: 5,000 images in 5 batches


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module):
    """Eval mode inside, the previous mode restored afterwards (so a γ-update mid-epoch leaves the model training)."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def predict(
    model: torch.nn.Module,
    loader: Iterable[tuple[torch.Tensor, torch.Tensor]],
    device: torch.device | str | None = None,
    *,
    autocast_dtype: torch.dtype | None = None,
    on_batch: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Logits (N, K) float32 and labels (N,) int64 of every batch of `loader`, in eval mode without gradients.

    The loader yields (inputs, labels); inputs are moved to `device` when given (BatchLoader already puts them there).
    The model's train/eval mode is restored afterwards. `on_batch(done)`, when given, is called after each batch (for
    a progress bar).
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    logits_parts: list[torch.Tensor] = []
    label_parts: list[torch.Tensor] = []
    with eval_mode(model), torch.no_grad():
        for inputs, labels in loader:
            inputs = inputs.to(device, non_blocking=True)
            if autocast_dtype is not None:
                with torch.autocast(device_type=device.type, dtype=autocast_dtype):
                    logits = model(inputs)
            else:
                logits = model(inputs)
            logits_parts.append(logits.float())
            label_parts.append(labels)
            if on_batch is not None:
                on_batch(len(logits_parts))
    if not logits_parts:
        raise InputError("Expected at least one batch to predict on, got an empty split.")
    logits = torch.cat(logits_parts).cpu().numpy().astype(np.float32, copy=False)
    labels = torch.cat(label_parts).cpu().numpy().astype(np.int64, copy=False)
    return logits, labels


def slice_split(split: Any, start: int, stop: int) -> Any:
    """The samples [start, stop) of a data Split (used to give each distributed rank a shard)."""
    if start == 0 and stop == len(split):
        return split
    if isinstance(split.inputs, torch.Tensor):
        # Split.subset would call Tensor.select (a different method) on tensor inputs; slice directly.
        return type(split)(split.inputs[start:stop], split.labels[start:stop])
    return split.subset(np.arange(start, stop))


def build_model_from_checkpoint(checkpoint: dict[str, Any], path: str | os.PathLike = "the checkpoint"
                                ) -> tuple[torch.nn.Module, str]:
    """Rebuild the architecture a checkpoint was trained with and load its weights; returns (model, dataset name)."""
    from adacal.models import build_model, rebuild_options
    from adacal.training.checkpoints import check_weights_fit

    check_weights_fit(checkpoint, path)  # names and shapes first, on the meta device: nothing allocated for a misfit
    model = build_model(
        checkpoint["model_name"],
        num_classes=int(checkpoint["num_classes"]),
        input_shape=tuple(int(s) for s in checkpoint["input_shape"]),
        # Init-only options (a GloVe file, a vocabulary) are dropped: the weights carry their effect, and a path
        # inside a checkpoint must not make adacal read a file.
        **rebuild_options(dict(checkpoint.get("model_options") or {})),
    )
    try:
        model.load_state_dict(checkpoint["model_state"])
    except (RuntimeError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise CheckpointError(
            f"Expected the checkpoint's weights to fit model '{checkpoint['model_name']}', but they do not ({first})."
        ) from None
    model.eval()
    return model, str(checkpoint["dataset"])


def checkpoint_data_options(checkpoint: dict[str, Any], path: str | os.PathLike) -> dict[str, Any]:
    """The data options a checkpoint's run trained with (seed, subsets, validation size, data folder, channels_last).

    A checkpoint may come from anywhere, so each value is checked before use (a wrong type is a CheckpointError), and
    the recorded data folder is used only when it is an existing folder: a path read from a file never makes adacal
    create folders or download data into a place the user did not name (otherwise the default data folder is used).
    """
    config = checkpoint.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise CheckpointError(f"Expected the training options in {path} to be a dict, got {type(config).__name__}.")

    def integer(key: str, minimum: int) -> int | None:
        value = config.get(key)
        if value is None:
            return None
        if not isinstance(value, int):
            raise CheckpointError(
                f"Expected the training option {key} in {path} to be an integer >= {minimum}, got {value!r}."
            )
        return check_integer(value, f"the training option {key} in {path}", minimum=minimum, error=CheckpointError)

    data_dir = config.get("data_dir")
    if data_dir is not None and not isinstance(data_dir, str):
        raise CheckpointError(f"Expected the training option data_dir in {path} to be a folder path, got {data_dir!r}.")
    # A recorded folder that is gone (moved, another machine): the default data folder is used instead, and a set
    # missing there is reported with the folder the run trained from (`recorded_data_folder`).
    recorded_gone = None
    if data_dir is not None and not os.path.isdir(os.path.expanduser(data_dir)):
        data_dir, recorded_gone = None, data_dir
    channels_last = config.get("channels_last", False)
    if not isinstance(channels_last, bool):
        raise CheckpointError(f"Expected the training option channels_last in {path} to be true or false, got "
                              f"{channels_last!r}.")
    label_column = config.get("label_column")
    if label_column is not None and not isinstance(label_column, str):
        raise CheckpointError(f"Expected the training option label_column in {path} to be a column name, got "
                              f"{label_column!r}.")
    return {
        "data_dir": data_dir,
        "recorded_data_dir_gone": recorded_gone,
        "label_column": label_column,
        "seed": integer("seed", 0) or 0,
        "train_subset": integer("train_subset", 1),
        "val_size": integer("val_size", 1),
        "test_subset": integer("test_subset", 1),
        "channels_last": channels_last,
    }


def user_data_options(options: dict[str, Any]) -> dict[str, Any]:
    """The loader options of `checkpoint_data_options` that only the user's own data takes (--label-column)."""
    return {"label_column": options["label_column"]} if options.get("label_column") is not None else {}


def checkpoint_normalisation(checkpoint: dict[str, Any]) -> Any:
    """What to normalise a checkpoint's inputs as: its dataset's name when registered, else the (mean, std) its run
    recorded in the split record (the user's image data), else None (feature vectors: no normalisation)."""
    from adacal.data import DATASETS

    name = str(checkpoint["dataset"])
    if name.lower() in DATASETS:
        return name.lower()
    split = checkpoint.get("split")
    if isinstance(split, dict) and isinstance(split.get("mean"), list) and isinstance(split.get("std"), list):
        return tuple(float(v) for v in split["mean"]), tuple(float(v) for v in split["std"])
    return None


def predict_checkpoint(
    path: str | os.PathLike,
    *,
    split: str = "test",
    data_dir: str | os.PathLike | None = None,
    device: str = "auto",
) -> Predictions:
    """Logits and labels of a checkpoint's model on a split of the dataset it was trained on (same seed and split)."""
    return predict_checkpoint_splits(path, (split,), data_dir=data_dir, device=device)[split]


class CheckpointModel:
    """A checkpoint's model, rebuilt on first use and kept, and its logits on any split.

    The one path from a checkpoint to logits (`predict_checkpoint_splits`, `adacal ood`, `adacal shift`): eval mode,
    no gradients, inputs normalised with the training dataset's statistics (the model's input convention, whatever
    set is scored), and an image model in channels_last when its run trained that way (the faster CPU layout).
    """

    def __init__(self, checkpoint: dict[str, Any], path: str | os.PathLike = "the checkpoint", *,
                 device: torch.device, batch_size: int = EVAL_BATCH_SIZE) -> None:
        from adacal.models import model_input_kind

        self.checkpoint, self.path, self.device, self.batch_size = checkpoint, path, device, batch_size
        options = checkpoint_data_options(checkpoint, path)
        self.channels_last = bool(options["channels_last"]) and model_input_kind(
            str(checkpoint["model_name"])) == "image"
        self._model: torch.nn.Module | None = None

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            model, _ = build_model_from_checkpoint(self.checkpoint, self.path)
            model = model.to(self.device)
            self._model = model.to(memory_format=torch.channels_last) if self.channels_last else model
        return self._model

    def predict(self, split: Any, *, normalise_as: Any) -> tuple[np.ndarray, np.ndarray]:
        """Logits (N, K) float32 and labels (N,) of `split`; `normalise_as` is the training dataset (name or
        object)."""
        from adacal.data import BatchLoader

        loader = BatchLoader(split, self.batch_size, dataset=normalise_as, shuffle=False, augment=False,
                             device=self.device, channels_last=self.channels_last)
        return predict(self.model, loader, self.device)


@contextlib.contextmanager
def recorded_data_folder(recorded: bool, data_dir: Any, checkpoint_path: Path, *, gone: str | None = None
                         ) -> Iterator[None]:
    """A set missing from the data folder a checkpoint records (never downloaded into) names the fix: --data-dir.
    `data_dir`: the folder read (None: the default one). `gone`: the folder the checkpoint records when it no longer
    exists (`checkpoint_data_options`); when the default folder was read instead, the error names it, so that a moved
    data folder is not a mystery."""
    try:
        yield
    except DataUnavailableError as exc:
        if gone is not None and not recorded and data_dir is None:
            raise DataUnavailableError(
                f"{str(exc).rstrip('.')} (the data folder recorded in {checkpoint_path.name}, {gone}, no longer "
                "exists, so adacal looked in its default folder)."
            ) from None
        if not recorded:
            raise
        missing = str(exc).split(" and download is off.")[0].rstrip(".")
        raise DataUnavailableError(
            f"{missing} ({data_dir} is the data folder recorded in {checkpoint_path.name}, which adacal reads but "
            "never downloads into): pass --data-dir DIR, a folder holding the set or one to download it into."
        ) from None


def predict_checkpoint_splits(
    path: str | os.PathLike,
    splits: Iterable[str],
    *,
    data_dir: str | os.PathLike | None = None,
    device: str = "auto",
    contents: Any = None,
) -> dict[str, Predictions]:
    """`predict_checkpoint` for several splits, reading the checkpoint and the dataset once. `contents`: the checkpoint
    file as the caller already loaded it (`safe_torch_load`), so that it is not read again."""
    from adacal.data import load_dataset

    splits = tuple(splits)
    for split in splits:
        if split not in SPLITS:
            raise InputError(f"Expected split to be one of {', '.join(SPLITS)}, got {split!r}.")
    checkpoint_path = resolve_checkpoint_path(path)
    checkpoint = load_checkpoint(checkpoint_path, contents)
    options = checkpoint_data_options(checkpoint, checkpoint_path)
    scorer = CheckpointModel(checkpoint, checkpoint_path, device=resolve_device(device))
    _ = scorer.model  # the weights are checked against the architecture before any data is read
    with recorded_data_folder(False, data_dir, checkpoint_path, gone=options["recorded_data_dir_gone"]):
        dataset = load_dataset(
            str(checkpoint["dataset"]),
            data_dir=data_dir if data_dir is not None else options["data_dir"],
            seed=options["seed"],
            train_subset=options["train_subset"],
            val_size=options["val_size"],
            **user_data_options(options),
        ).limit_test(options["test_subset"], method=checkpoint_test_subset_method(checkpoint))
    from adacal.data.user_data import check_same_data

    check_same_data(checkpoint.get("split"), dataset.split_info, what="scoring this model on it")
    predictions = {}
    for split in splits:
        logits, labels = scorer.predict(getattr(dataset, split), normalise_as=dataset)
        predictions[split] = Predictions(logits=logits, labels=labels)
    return predictions
