"""OOD detection from an adacal checkpoint or run folder (`ood_from_model`): score the in-distribution test set
and the OOD set (SVHN, CIFAR-10-C) with the trained model, then `detect_ood` as for saved logits."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import check_labels, check_scores
from adacal.checks import check_integer
from adacal.errors import InputError, unknown_name
from adacal.ood.scores import DEFAULT_CORRUPTION, DEFAULT_SEVERITY, OOD_REPORT_PREFIX, SEVERITIES
from adacal.runs import OOD_FILE, RunFolder, check_predictions_of_run, predictions_are_from, require_run_folder
from adacal.sources.files import check_regular_file
from adacal.interpretation import Predictions, load_split_predictions

def check_ood_options(
    *,
    in_name: str | None,
    out_name: str,
    corruption: str | None = None,
    severity: int | None = None,
) -> tuple[str | None, str, str | None, int | None]:
    """Check the names before any work; returns (in_name, out_name, corruption, severity) with defaults filled in.

    `in_name` must be a registered dataset, or None for the dataset the model was trained on; `out_name` a registered
    dataset, a corrupted set ("cifar10-c", "cifar100-c") or an .npz file of inputs. A corruption applies when asked
    for (--corruption or --severity) and by default to the "-c" sets: gaussian_noise at severity 5, the paper's
    CIFAR-10-C setting. Any of Hendrycks' 19 corruption names is accepted here; whether its files are there is
    checked when the set is loaded.
    """
    from adacal.data import check_corruption, dataset_names, ood_names

    choices = dataset_names()
    if in_name is not None:
        key = str(in_name).lower()
        if key not in choices:
            raise unknown_name("dataset", str(in_name), choices)
        in_name = key
    out = str(out_name)
    if (out.lower().endswith(".npz") or "/" in out or os.sep in out or Path(out).is_file()
            or (Path(out).is_dir() and out.lower() not in ood_names())):
        if not Path(out).expanduser().exists():
            raise InputError(f"Expected --out to be a dataset name or an .npz file of inputs, but {out} does not "
                             "exist.")
        if not Path(out).expanduser().is_dir():  # a folder of images: for a model trained on an image folder
            check_regular_file(Path(out).expanduser(), "an .npz file of OOD inputs (--out)")
    elif out.lower() in ood_names():
        out = out.lower()
    else:
        raise unknown_name("OOD dataset", out, ood_names())
    if severity is not None and (
        isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or int(severity) not in SEVERITIES
    ):
        raise InputError(f"Expected --severity to be an integer from 1 to 5, got {severity!r}.")
    if corruption is not None or severity is not None or out.endswith("-c"):
        corruption = check_corruption(corruption or DEFAULT_CORRUPTION)  # unknown → error listing the corruptions
        severity = int(severity) if severity is not None else DEFAULT_SEVERITY
    return in_name, out, corruption, severity


def ood_report_name(out_name: str, corruption: str | None = None, severity: int | None = None) -> str:
    """The report file for one OOD set, so reports on different sets sit side by side in a run folder:
    ood-svhn.json, ood-cifar10-c-gaussian_noise-5.json, ood-<stem>.json for an image or predictions file."""
    text = str(out_name)
    stem = Path(text).stem if _looks_like_file(text) else text.lower()
    parts = [stem] + ([corruption, str(severity)] if corruption is not None else [])
    name = "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", part).strip("._-") or "set" for part in parts)
    return f"{OOD_REPORT_PREFIX}{name}.json"


def ood_report_paths(folder: str | os.PathLike) -> list[Path]:
    """The OOD reports in a run folder: a single-file ood.json first when there is one, then every ood-*.json (one per
    OOD set) sorted by name."""
    folder = Path(folder)
    paths = sorted(folder.glob(f"{OOD_REPORT_PREFIX}*.json"))
    single = folder / OOD_FILE
    return ([single] if single.is_file() else []) + [p for p in paths if p.is_file()]


def run_ood_reports(folder: str | os.PathLike) -> list[Path]:
    """The OOD reports of a run folder (`ood_report_paths`); a folder that is not a run or holds none is an error."""
    run = require_run_folder(Path(folder))
    paths = ood_report_paths(run.root)
    if not paths:
        raise InputError(
            f"Expected OOD reports ({OOD_REPORT_PREFIX}*.json, written by 'adacal ood --model RUN') in {run.root}, "
            "found none."
        )
    return paths


def _looks_like_file(text: str) -> bool:
    from adacal.sources.formats import FORMATS

    return text.lower().endswith(FORMATS) or "/" in text or os.sep in text or Path(text).is_file()


def resolve_checkpoint(model_path: str | os.PathLike) -> tuple[Path, RunFolder | None]:
    """(checkpoint file, run folder or None) from a run folder or a checkpoint file.

    For a run folder: the model training selected (checkpoints/best.pt when it was trained with --select best-val,
    else checkpoints/last.pt) — the one its predictions.npz and evaluate.json describe.
    """
    from adacal.runs import resolve_checkpoint as checkpoint_of

    return checkpoint_of(model_path)


def ood_from_model(
    model_path: str | os.PathLike,
    *,
    in_name: str | None = None,
    out_name: str,
    corruption: str | None = None,
    severity: int | None = None,
    data_dir: str | os.PathLike | None = None,
    device: str = "auto",
    batch_size: int = 512,
    seed: int = 0,
    limit: int | None = None,
    download: bool = True,
    with_val: bool = False,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Score the in-distribution test set and the OOD set with a trained adacal model: (in_logits, out_logits, info).

    - `model_path`: a run folder (its selected checkpoint) or a checkpoint file; loaded with weights_only=True.
    - In-distribution: the test split of `in_name` (default: the dataset the model was trained on). The run folder's
      predictions.npz test logits are reused when `in_name` is the training dataset and they came from this
      checkpoint (same epoch).
    - OOD: `out_name` through `adacal.data.load_ood_set` (a dataset's test split, "cifar10-c" with `corruption` and
      `severity` from Hendrycks' files or generated, or an .npz of inputs: uint8 HWC images for an image model,
      float feature vectors (N, *input_shape) in the training data's representation for a vector model; refused for
      a text model). Its inputs must have the model's input shape (checked before any compute); images are
      normalised like the model's training data, vectors scored as given.
    - Equal sizes: a model trained with --test-subset m is scored on m in-distribution images; the OOD set is then
      subsampled to m too — for CIFAR-10-C the corrupted versions of those same m images, else a seeded random m.
    - `limit=N`: a seeded random N of each set (the same positions for CIFAR-10-C as for the CIFAR-10 test images it
      is made from). Only the kept images are read (Hendrycks' files) or corrupted, so memory follows N.
    - `with_val`: info["val"] holds validation Predictions (from predictions.npz, else computed on the validation
      split the model was trained with) for fitting a temperature.
    Models run in eval mode without gradients. info: checkpoint, run (folder or None), dataset (trained on), in_source
    ("predictions.npz" or "model"), device, in, out, corruption, severity, out_source (dataset, file, hendrycks-files
    or generated), out_files, out_table (the corruption's severity table, None for none), out_size (samples in the
    whole OOD set), out_subsample (why and how it was subsampled to the in-distribution size, or None), out_range (for
    a file of feature vectors: their min and max and the training dataset's feature range, else None), and val when
    asked.
    """
    from adacal.data import load_dataset, load_ood_set
    from adacal.data.corruptions import cifar_test_labels, hendrycks_file
    from adacal.data.base import subset_test_rows
    from adacal.checks import check_device_name
    from adacal.models import model_input_kind
    from adacal.training.checkpoints import checkpoint_test_subset_method, load_checkpoint
    from adacal.training.inference import (
        CheckpointModel,
        checkpoint_data_options,
        recorded_data_folder,
        resolve_device,
    )

    in_name, out_name, corruption, severity = check_ood_options(
        in_name=in_name, out_name=out_name, corruption=corruption, severity=severity
    )
    if isinstance(device, str):  # a torch.device is checked by resolve_device
        check_device_name(device)
    _check_int("--batch-size", batch_size, minimum=1)
    _check_int("--seed", seed, minimum=0)
    if limit is not None:
        _check_int("--limit", limit, minimum=1)
    checkpoint_path, run = resolve_checkpoint(model_path)
    checkpoint = load_checkpoint(checkpoint_path)
    torch_device = resolve_device(device)
    from adacal.data.user_data import is_user_data
    from adacal.training.inference import checkpoint_normalisation, user_data_options

    user_data = is_user_data(checkpoint["dataset"])  # a path keeps its spelling; names are lowercase
    trained = str(checkpoint["dataset"]) if user_data else str(checkpoint["dataset"]).lower()
    in_name = in_name or trained
    input_shape = tuple(int(v) for v in checkpoint["input_shape"])
    input_kind = model_input_kind(str(checkpoint["model_name"]))  # how an .npz given as --out is read
    options = checkpoint_data_options(checkpoint, checkpoint_path)
    if data_dir is None and options["data_dir"] is not None:
        # The folder the run trained from, as its checkpoint records it: read, never downloaded into (a path inside a
        # file is not the user's word to write there); --data-dir names a folder that may be.
        data_dir, download, recorded = options["data_dir"], False, True
    else:
        recorded = False
    same = in_name == trained
    test_subset = options["test_subset"] if same else None

    # Which OOD samples to score, given the set's size: the in-distribution test subset's size (the same images for
    # the corrupted copy of the training dataset), then --limit.
    subsample: dict[str, Any] = {}

    subset_method = checkpoint_test_subset_method(checkpoint)

    def select(n: int, labels: np.ndarray) -> np.ndarray | None:
        rows = np.arange(n)
        if test_subset is not None and int(test_subset) < n:
            m = int(test_subset)
            if out_name.endswith("-c") and out_name[:-2] == in_name:
                # As Dataset.limit_test picks the test subset: the corrupted versions of the very same images.
                rows = subset_test_rows(labels, m, method=subset_method)
                why = f"the corrupted copies of the model's {m} {in_name} test-subset images"
            elif out_name == in_name and corruption is None:
                # The model's own test set as the OOD set: the very images of its test subset, as the in-set.
                rows = subset_test_rows(labels, m, method=subset_method)
                why = f"the model's own {m} {in_name} test-subset images"
            else:
                rows = limit_indices(n, m, seed)  # m < n here: never None
                why = f"a seeded random {m} (--seed {seed}) to match the model's {m}-image {in_name} test subset"
            subsample.update({"from": int(n), "to": int(m), "reason": why})
        index = limit_indices(len(rows), limit, seed)
        rows = rows if index is None else rows[index]
        if subsample and index is not None:
            subsample["limited_to"] = int(len(rows))  # --limit then takes some of the test subset's images
        return None if len(rows) == n else rows

    _check_cifar_c_labels(out_name, corruption, data_dir)
    # A named set's shape is known from its spec: one the model cannot take is refused before anything is loaded or
    # downloaded.
    _check_known_input(out_name, "OOD", input_kind, input_shape)
    if not same:
        _check_known_input(in_name, "in-distribution", input_kind, input_shape)
    # Hendrycks' files must hold the clean test set's images in order (so a test subset's OOD images are its very
    # images): compared with the test labels of <data-dir>/cifar10.npz, else with the run's saved full test set.
    saved: Any = _UNREAD
    test_labels, test_source = None, None
    if hendrycks_file(out_name, corruption, data_dir) is not None:
        found = cifar_test_labels(out_name[:-2], data_dir)
        if found is not None:
            test_labels, test_source = found[0], str(found[1])
        elif out_name[:-2] == in_name and test_subset is None:
            saved = saved_predictions(run, checkpoint, in_name=in_name)
            if saved is not None:
                test_labels, test_source = np.asarray(saved["test"].labels), f"{run.predictions}"
    # The OOD set first: a shape the model cannot take is reported before the model or the in-distribution data.
    out_path = Path(out_name).expanduser()
    user_out = user_data and corruption is None and (
        out_path.is_dir() or out_path.suffix.lower() in (".csv", ".tsv") or input_kind == "vector")
    if out_path.is_dir() and not user_out:
        raise InputError(f"Expected --out {out_name} to be a dataset name or an .npz file: a folder of images is read "
                         "for a model trained on an image folder, without --corruption.")
    if user_out:
        from adacal.data.corruptions import OODSet
        from adacal.data.user_data import load_user_ood

        split = load_user_ood(out_path, dict(checkpoint.get("split") or {}), input_shape)
        size = len(split)
        rows = select(size, split.labels.numpy())
        split = split if rows is None else split.subset(np.asarray(rows, dtype=np.int64))
        ood = OODSet(split, tuple(int(v) for v in split.inputs.shape[1:]), size, "file", (str(out_path),))
    else:
        with recorded_data_folder(recorded, data_dir, checkpoint_path, gone=options["recorded_data_dir_gone"]):
            ood = load_ood_set(
                out_name, data_dir=data_dir, corruption=corruption, severity=severity, seed=seed, download=download,
                select=select, input_kind=input_kind, input_shape=input_shape, test_labels=test_labels,
                test_source=test_source,
            )
    if tuple(ood.shape) != input_shape:
        raise InputError(f"Expected OOD inputs of shape {input_shape} like the model's input, got {tuple(ood.shape)}.")
    if len(ood.split) == 0:
        raise InputError(f"Expected the OOD set {out_name} to hold at least one sample, got none.")

    if saved is _UNREAD:
        saved = saved_predictions(run, checkpoint, in_name=in_name)
    vectors = ood.source == "file" and input_kind == "vector" and not user_out  # scored as given: vs the training range
    dataset = None
    if saved is None or (with_val and saved["val"] is None) or vectors:
        with recorded_data_folder(recorded, data_dir, checkpoint_path, gone=options["recorded_data_dir_gone"]):
            dataset = load_dataset(
                in_name, data_dir=data_dir, download=download,
                seed=options["seed"] if same else 0,
                val_size=options["val_size"] if same else None,
                **(user_data_options(options) if same else {}),
            ).limit_test(test_subset, method=subset_method)
        if tuple(dataset.input_shape) != input_shape:
            raise InputError(
                f"Expected {in_name} inputs of shape {input_shape} like the model's input, got "
                f"{tuple(dataset.input_shape)}."
            )
        if len(dataset.test) == 0:
            raise InputError(f"Expected the {in_name} test set to hold at least one sample, got none.")

    scorer = CheckpointModel(checkpoint, checkpoint_path, device=torch_device, batch_size=batch_size)

    def logits_of(split: Any) -> np.ndarray:
        return scorer.predict(split, normalise_as=checkpoint_normalisation(checkpoint) if user_data else trained)[0]

    in_split = None if saved is not None else _subset_split(dataset.test, limit, seed)
    in_labels = _subset_rows(np.asarray(saved["test"].labels), limit, seed) if in_split is None else (
        in_split.labels.numpy())
    if out_name == f"{in_name}-c" and ood.source == "hendrycks-files":
        _check_same_images(ood, in_labels, out_name=out_name, in_name=in_name)
    if in_split is None:
        in_logits, in_source = _subset_rows(saved["test"].logits, limit, seed), "predictions.npz"
    else:
        in_logits, in_source = logits_of(in_split), "model"
    if out_name == in_name and corruption is None and np.array_equal(ood.split.labels.numpy(), in_labels):
        # The in-distribution set's very images (the same rows of the same test set): their logits, not a second
        # computation (another batch size, or predictions.npz against the model) differing by float noise, which
        # would rank identical images apart (AUROC 0 or 100 % for one image instead of 50 %).
        out_logits = np.array(in_logits, copy=True)
    else:
        out_logits = logits_of(ood.split)
    out_range = None
    if vectors:
        values = ood.split.inputs
        expected = dataset.extra.get("feature_range") if dataset.name == trained else None
        out_range = {"min": float(values.min()), "max": float(values.max()),
                     "expected": None if expected is None else [float(v) for v in expected], "dataset": trained}
    info: dict[str, Any] = {
        "checkpoint": str(checkpoint_path),
        "run": None if run is None else str(run.root),
        "dataset": trained,
        "in_source": in_source,
        "device": str(torch_device),
        "in": in_name,
        "out": out_name,
        "corruption": corruption,
        "severity": severity,
        "out_source": ood.source,
        "out_files": list(ood.files),
        "out_table": ood.table,
        "out_size": ood.size,
        "out_subsample": subsample or None,
        "out_range": out_range,
        "data_dir": None if data_dir is None else str(data_dir),  # the folder the data were read from (None: default)
    }
    if with_val:
        if saved is not None and saved["val"] is not None:
            info["val"] = saved["val"]
        else:
            if len(dataset.val) == 0:
                raise InputError(f"Expected a {in_name} validation split to fit the temperature on, got none.")
            val_logits = check_scores(logits_of(dataset.val), name=f"{in_name} validation logits")
            labels = check_labels(dataset.val.labels, n=len(val_logits), num_classes=val_logits.shape[1],
                                  name=f"{in_name} validation labels")
            info["val"] = Predictions(logits=val_logits, labels=labels)
    return (
        check_scores(in_logits, name=f"{in_name} test logits"),
        check_scores(out_logits, name=f"{out_name} logits"),
        info,
    )


_CIFAR_C_FOLDERS = {"cifar10-c": "CIFAR-10-C", "cifar100-c": "CIFAR-100-C"}


_UNREAD = object()  # predictions.npz not looked at yet


def _check_same_images(ood: Any, in_labels: np.ndarray, *, out_name: str, in_name: str) -> None:
    """The corrupted copy of the in-distribution test set (Hendrycks' files) must be the very images scored: as
    many, with the same labels in the same order; otherwise the files are of another test set."""
    out_labels = ood.split.labels.numpy()
    if len(out_labels) == len(in_labels) and np.array_equal(out_labels, in_labels):
        return
    where = ood.files[1] if len(ood.files) > 1 else out_name
    if len(out_labels) != len(in_labels):
        found = f"got {len(out_labels):,} images for {len(in_labels):,}"
    else:
        row = int(np.flatnonzero(out_labels != in_labels)[0])
        found = f"their labels differ (image {row}: {out_labels[row]} in {where}, {in_labels[row]} in {in_name})"
    raise InputError(
        f"Expected the {out_name} images to be the corrupted copies of the {len(in_labels):,} {in_name} test images "
        f"scored, in their order, but {found}: the files do not match the {in_name} test set."
    )


def _check_known_input(name: str, what: str, input_kind: str, input_shape: tuple[int, ...]) -> None:
    """Refuse a named set whose inputs (kind and shape, from the dataset's spec) the model cannot take — before it
    is loaded or downloaded. Files and sets whose shape follows loader options are checked once loaded."""
    from adacal.data.corruptions import ood_set_input

    known = ood_set_input(name)
    if known is None:
        return
    kind, shape = known
    if shape is not None and tuple(shape) != tuple(input_shape):
        raise InputError(f"Expected {what} inputs of shape {input_shape} like the model's input, got {tuple(shape)} "
                         f"({name}).")
    if shape is None and kind != input_kind:
        raise InputError(f"Expected {what} inputs of shape {input_shape} like the model's input ({input_kind}), got "
                         f"{name}, a {kind} dataset.")


def _check_cifar_c_labels(out_name: str, corruption: str | None, data_dir: str | os.PathLike | None) -> None:
    """Hendrycks' <corruption>.npy without its labels.npy is an error naming the missing file: otherwise the files
    would be passed over unseen (gaussian_noise generated instead, a download tried, or "files not found")."""
    from adacal.data.base import default_data_dir
    from adacal.data.corruptions import cifar_c_folder

    if out_name not in _CIFAR_C_FOLDERS or corruption is None or cifar_c_folder(out_name, data_dir) is not None:
        return
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    for folder in (root / _CIFAR_C_FOLDERS[out_name], root):
        if (folder / f"{corruption}.npy").is_file():
            raise InputError(
                f"Expected {folder / 'labels.npy'} beside {folder / (corruption + '.npy')} (Hendrycks' CIFAR-C "
                "layout), but it does not exist."
            )


def saved_predictions(run: RunFolder | None, checkpoint: dict[str, Any], *, in_name: str) -> dict[str, Any] | None:
    """The run's predictions.npz ({"val", "test"}) when they are this checkpoint's outputs on `in_name`, else None.

    They are when `in_name` is the training dataset and the checkpoint's epoch is the epoch training evaluated
    (evaluate.json's selected_epoch; for --select last, the final epoch). Anything else — another dataset, a run
    resumed or still training, a checkpoint from another epoch — is scored by the model instead.
    """
    if run is None or in_name != str(checkpoint["dataset"]).lower() or not predictions_are_from(run, checkpoint):
        return None
    splits = load_split_predictions(run.predictions)
    check_predictions_of_run(run, {name: len(split) for name, split in splits.items() if split is not None})
    return splits


def limit_indices(n: int, limit: int | None, seed: int) -> np.ndarray | None:
    """A seeded random `limit` of range(n) in ascending order (CIFAR test sets are sorted by class), or None for all."""
    if limit is None or limit >= n:
        return None
    return np.sort(np.random.default_rng(seed).permutation(n)[:limit])


def _subset_rows(array: np.ndarray, limit: int | None, seed: int) -> np.ndarray:
    index = limit_indices(len(array), limit, seed)
    return array if index is None else array[index]


def _subset_split(split: Any, limit: int | None, seed: int) -> Any:
    import torch

    from adacal.data import Split

    index = limit_indices(len(split), limit, seed)
    if index is None:
        return split
    index = torch.from_numpy(index)
    return Split(split.inputs[index], split.labels[index])


def _check_int(name: str, value: Any, *, minimum: int) -> int:
    return check_integer(value, name, minimum=minimum)
