"""Out-of-distribution detection from a classifier's logits: scores, AUROC / AUPR / FPR@95, before and after T-scaling.

The paper's test (AdaFocal §5, PAPER.md "OOD detection"): score every image by the entropy of its softmax, with the
in-distribution test set as negatives and the OOD set (SVHN, CIFAR-10-C Gaussian noise severity 5) as positives, and
report AUROC before and after temperature scaling. Higher score = more OOD throughout.

Two ways in, both ending in `detect_ood` (the results block of ood.json):
- from saved logits of any model (`load_ood_logits`), or
- from an adacal checkpoint or run folder (`ood_from_model`), which scores the in-distribution test set and the OOD set.
The math of each score and metric lives in `adacal.metrics.ood`; this module validates, wires and reports.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import check_labels, check_scores, looks_like_probs
from adacal.errors import InputError, unknown_name
from adacal.metrics.ood import OOD_SCORES as SCORE_REGISTRY
from adacal.reports import make_report, read_report
from adacal.runs import OOD_FILE, RunFolder, predictions_are_from, require_run_folder
from adacal.sources.files import check_regular_file
from adacal.sources.formats import Predictions, ReadOptions, load_split_predictions
from adacal.sources.resolve import load_ood_scores, load_validation_split
from adacal.sources.resolve import resolve_checkpoint as _resolve_checkpoint

OOD_SCORES = tuple(SCORE_REGISTRY.names())  # every score adacal.metrics.ood registers
DEFAULT_CORRUPTION = "gaussian_noise"
DEFAULT_SEVERITY = 5
SEVERITIES = (1, 2, 3, 4, 5)
TEMPERATURE_SOURCES = ("none", "option", "calibrate.json", "fitted")
# The paper picks T on the validation set by minimising ECE_EM (PAPER.md, "Post-hoc calibration").
FIT_OBJECTIVE = "ece-em"
OOD_REPORT_PREFIX = "ood-"


# ------------------------------------------------------------------------------------------------------- scores


def check_score_names(scores: str | Iterable[str]) -> tuple[str, ...]:
    """Score names from "entropy,max-prob" or a sequence; unknown names are an error listing the choices."""
    items = scores.split(",") if isinstance(scores, str) else list(scores)
    names: list[str] = []
    for item in items:
        name = str(item).strip().lower()
        if not name:
            continue
        if name not in OOD_SCORES:
            raise unknown_name("OOD score", name, OOD_SCORES)
        if name not in names:
            names.append(name)
    if not names:
        raise InputError(f"Expected --scores to name at least one of {', '.join(OOD_SCORES)}, got '{scores}'.")
    return tuple(names)


def ood_scores(logits: Any, score: str = "entropy", *, temperature: float | None = None) -> np.ndarray:
    """Per-sample OOD scores (N,) from logits (N, K), higher = more OOD; with `temperature`, of logits / T."""
    from adacal.metrics.ood import ood_scores as compute

    (name,) = check_score_names([score])
    logits = check_scores(logits)
    if temperature is not None:
        temperature = check_temperature(temperature)
    return compute(logits, name, temperature=temperature)


def detect_ood(
    in_logits: Any,
    out_logits: Any,
    *,
    scores: str | Sequence[str] = ("entropy",),
    temperature: float | None = None,
    temperature_source: str | None = None,
    in_name: str = "in",
    out_name: str = "out",
) -> dict[str, Any]:
    """The `results` block of ood.json: per score, AUROC / AUPR-in / AUPR-out / FPR@95 and the ROC curve.

    OOD is the positive class. `pre` uses the logits as given; `post` (only when `temperature` is given) uses
    logits / T. Metric values are fractions in [0, 1].
    """
    names = check_score_names(scores)
    in_logits = check_scores(in_logits, name="in-distribution logits")
    out_logits = check_scores(out_logits, name="OOD logits")
    if in_logits.shape[1] != out_logits.shape[1]:
        raise InputError(
            f"Expected the in-distribution and OOD logits to have the same number of classes, "
            f"got {in_logits.shape[1]} and {out_logits.shape[1]}."
        )
    if temperature is not None:
        temperature = check_temperature(temperature)
        for what, logits in (("in-distribution", in_logits), ("OOD", out_logits)):
            if looks_like_probs(logits):
                raise InputError(
                    f"Expected {what} logits to apply a temperature to, but they look like probabilities "
                    f"(rows in [0, 1] summing to 1); save the logits instead."
                )
    source = temperature_source or ("option" if temperature is not None else "none")
    if source not in TEMPERATURE_SOURCES:
        raise InputError(f"Expected temperature_source to be one of {', '.join(TEMPERATURE_SOURCES)}, got '{source}'.")
    if (source == "none") != (temperature is None):
        raise InputError(f"Expected a temperature with temperature_source '{source}', got {temperature!r}.")

    results: dict[str, Any] = {}
    for name in names:
        pre = _score_metrics(in_logits, out_logits, name)
        post = None if temperature is None else _score_metrics(in_logits / temperature, out_logits / temperature, name)
        results[name] = {"pre": pre, "post": post}
    return {
        "in": {"name": str(in_name), "n": int(in_logits.shape[0])},
        "out": {"name": str(out_name), "n": int(out_logits.shape[0])},
        "temperature": temperature,
        "temperature_source": source,
        "scores": results,
    }


def ood_report(results: dict[str, Any], *, config: dict[str, Any]) -> dict[str, Any]:
    """The full ood.json report (the common envelope around `detect_ood`'s results)."""
    return make_report("ood", config=config, results=results)


def _score_metrics(in_logits: np.ndarray, out_logits: np.ndarray, name: str) -> dict[str, Any]:
    from adacal.metrics.ood import ood_metrics, ood_scores, roc_curve_points

    in_scores = ood_scores(in_logits, name)
    out_scores = ood_scores(out_logits, name)
    metrics = ood_metrics(in_scores, out_scores)
    fpr, tpr, _ = roc_curve_points(in_scores, out_scores)
    return {
        "auroc": float(metrics["auroc"]),
        "aupr_in": float(metrics["aupr_in"]),
        "aupr_out": float(metrics["aupr_out"]),
        "fpr_at_95_tpr": float(metrics["fpr_at_95_tpr"]),
        "roc": {"fpr": [float(v) for v in fpr], "tpr": [float(v) for v in tpr]},
    }


# ------------------------------------------------------------------------------------------------- temperature


def check_temperature(temperature: Any, *, name: str = "--temperature") -> float:
    if isinstance(temperature, bool):
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.")
    try:
        value = float(temperature)
    except (TypeError, ValueError):
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.")
    return value


def temperature_from_calibration(path: str | os.PathLike) -> float | None:
    """T from a calibrate.json: the temperature calibrator's, else the best calibrator's if it has one; else None."""
    report = read_report(path, kind="calibrate")
    results = report["results"] if isinstance(report["results"], dict) else {}
    calibrators = results.get("calibrators")
    if not isinstance(calibrators, dict):
        return None
    for name in ("temperature", results.get("best")):
        entry = calibrators.get(name) if isinstance(name, str) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        value = params.get("temperature") if isinstance(params, dict) else None
        if value is not None:
            return check_temperature(value, name=f"the temperature of '{name}' in {path}")
    return None


def fit_temperature(val_logits: Any, val_labels: Any, *, objective: str = FIT_OBJECTIVE) -> float:
    """Fit temperature scaling on validation logits (by default minimising ECE_EM, as the paper does); return T."""
    from adacal.calibrators import build_calibrator

    logits = check_scores(val_logits, name="validation logits")
    labels = check_labels(val_labels, n=logits.shape[0], num_classes=logits.shape[1], name="validation labels")
    calibrator = build_calibrator("temperature", objective=objective).fit(logits, labels)
    return check_temperature(calibrator.temperature_, name="the fitted temperature")


def temperature_edge(temperature: float, *, objective: str = FIT_OBJECTIVE) -> dict[str, Any] | None:
    """Where a fitted T sits on the edge of the range the fit searched, {"edge": "lower" | "upper", "range": [lo, hi]};
    else None. A T on the edge is the best the search could return, not necessarily the best T: the model may need
    a T beyond the range (the grid objectives search 0.1 ... 10 in steps of 0.1, "nll" searches [0.05, 20])."""
    from adacal.calibrators.temperature import NLL_BOUNDS, TEMPERATURE_GRID

    value = check_temperature(temperature, name="the fitted temperature")
    if objective == "nll":
        low, high = (float(v) for v in NLL_BOUNDS)
        tolerance = 1e-3  # in log T: Brent's bounded search stops within xatol of a bound it presses against
        at_low = abs(math.log(value) - math.log(low)) < tolerance
        at_high = abs(math.log(value) - math.log(high)) < tolerance
    else:
        low, high = float(np.min(TEMPERATURE_GRID)), float(np.max(TEMPERATURE_GRID))
        at_low, at_high = value <= low * (1 + 1e-9), value >= high * (1 - 1e-9)
    if not (at_low or at_high):
        return None
    return {"edge": "lower" if at_low else "upper", "range": [low, high]}


def resolve_temperature(
    *,
    temperature: float | None = None,
    fit: bool = False,
    calibration: str | os.PathLike | None = None,
    val: Predictions | None = None,
) -> tuple[float | None, str]:
    """(T, temperature_source): the option if given, else fitted on `val` when `fit`, else from `calibration`
    (a calibrate.json, used only when the file exists), else (None, "none")."""
    if temperature is not None and fit:
        raise InputError("Expected either --temperature or --fit-temperature, not both.")
    if temperature is not None:
        return check_temperature(temperature), "option"
    if fit:
        if val is None:
            raise InputError(
                "Expected validation logits and labels to fit the temperature (--fit-temperature), but none were found."
            )
        return fit_temperature(val.logits, val.labels), "fitted"
    if calibration is not None and Path(calibration).is_file():
        value = temperature_from_calibration(calibration)
        if value is not None:
            return value, "calibrate.json"
    return None, "none"


# ---------------------------------------------------------------------------------------------- saved logits


def load_ood_logits(path: str | os.PathLike, *, split: str = "test", options: ReadOptions | None = None) -> np.ndarray:
    """Scores (N, K) of saved model outputs (labels optional): any file and key spelling `adacal.sources` reads
    (`logits`, `probs`, ..., or `test_logits` as in predictions.npz; .npz, .pt, .npy, .csv)."""
    return load_ood_scores(path, split=split, options=options or ReadOptions())


def load_validation_predictions(path: str | os.PathLike, *, options: ReadOptions | None = None) -> Predictions | None:
    """`val_logits` and `val_labels` (or their other spellings) from a predictions file, or None when it holds no
    validation split."""
    return load_validation_split(path, options=options or ReadOptions())


# ------------------------------------------------------------------------------------------- from a checkpoint


def check_ood_options(
    *,
    in_name: str | None,
    out_name: str,
    corruption: str | None = None,
    severity: int | None = None,
) -> tuple[str | None, str, str | None, int | None]:
    """Check the names before any work; returns (in_name, out_name, corruption, severity) with defaults filled in.

    `in_name` must be a registered dataset, or None for the dataset the model was trained on; `out_name` a registered
    dataset, a corrupted set ("cifar10-c", "cifar100-c") or an .npz file of images. A corruption applies when asked
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
    if out.lower().endswith(".npz") or "/" in out or os.sep in out or Path(out).is_file():
        if not Path(out).expanduser().exists():
            raise InputError(f"Expected --out to be a dataset name or an .npz file of images, but {out} does not exist.")
        check_regular_file(Path(out).expanduser(), "an .npz file of OOD images (--out)")
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
    """The OOD reports in a run folder: every ood-*.json (one per OOD set), and a single-file ood.json of older
    versions, sorted by name."""
    folder = Path(folder)
    paths = sorted(folder.glob(f"{OOD_REPORT_PREFIX}*.json"))
    legacy = folder / OOD_FILE
    return ([legacy] if legacy.is_file() else []) + [p for p in paths if p.is_file()]


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
    return text.lower().endswith((".npz", ".pt", ".npy", ".csv")) or "/" in text or os.sep in text or Path(text).is_file()


def resolve_checkpoint(model_path: str | os.PathLike) -> tuple[Path, RunFolder | None]:
    """(checkpoint file, run folder or None) from a run folder or a checkpoint file.

    For a run folder: the model training selected (checkpoints/best.pt when it was trained with --select best-val,
    else checkpoints/last.pt) — the one its predictions.npz and evaluate.json describe.
    """
    return _resolve_checkpoint(model_path)


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
      `severity` from Hendrycks' files or generated, or an .npz of images). Its images must have the model's input
      shape (checked before any compute) and are normalised like the model's training data.
    - Equal sizes: a model trained with --test-subset m is scored on m in-distribution images; the OOD set is then
      subsampled to m too — for CIFAR-10-C the corrupted versions of those same m images, else a seeded random m.
    - `limit=N`: a seeded random N of each set (the same positions for CIFAR-10-C as for the CIFAR-10 test images it
      is made from). Only the kept images are read (Hendrycks' files) or corrupted, so memory follows N.
    - `with_val`: info["val"] holds validation Predictions (from predictions.npz, else computed on the validation
      split the model was trained with) for fitting a temperature.
    Models run in eval mode without gradients. info: checkpoint, run (folder or None), dataset (trained on),
    in_source ("predictions.npz" or "model"), device, in, out, corruption, severity, out_source (dataset, file,
    hendrycks-files or generated), out_files, out_size (samples in the whole OOD set), out_subsample (why and how
    it was subsampled to the in-distribution size, or None), and val when asked.
    """
    from adacal.data import BatchLoader, load_dataset, load_ood_set
    from adacal.data.base import TEST_SUBSET_SEED
    from adacal.training.checkpoints import load_checkpoint
    from adacal.training.inference import build_model_from_checkpoint, checkpoint_data_options, predict, resolve_device

    in_name, out_name, corruption, severity = check_ood_options(
        in_name=in_name, out_name=out_name, corruption=corruption, severity=severity
    )
    _check_int("--batch-size", batch_size, minimum=1)
    _check_int("--seed", seed, minimum=0)
    if limit is not None:
        _check_int("--limit", limit, minimum=1)
    checkpoint_path, run = resolve_checkpoint(model_path)
    checkpoint = load_checkpoint(checkpoint_path)
    torch_device = resolve_device(device)
    trained = str(checkpoint["dataset"]).lower()
    in_name = in_name or trained
    input_shape = tuple(int(v) for v in checkpoint["input_shape"])
    options = checkpoint_data_options(checkpoint, checkpoint_path)
    if data_dir is None:
        data_dir = options["data_dir"]
    same = in_name == trained
    test_subset = options["test_subset"] if same else None

    # Which OOD samples to score, given the set's size: the in-distribution test subset's size (the same images for
    # the corrupted copy of the training dataset), then --limit.
    subsample: dict[str, Any] = {}

    def select(n: int) -> np.ndarray | None:
        rows = np.arange(n)
        if test_subset is not None and int(test_subset) < n:
            m = int(test_subset)
            if out_name.endswith("-c") and out_name[:-2] == in_name:
                # As Dataset.limit_test picks the test subset: the corrupted versions of the very same images.
                rows = np.sort(np.random.default_rng(TEST_SUBSET_SEED).choice(n, size=m, replace=False))
                why = f"the corrupted copies of the model's {m} {in_name} test-subset images"
            else:
                rows = np.sort(np.random.default_rng(seed).permutation(n)[:m])
                why = f"a seeded random {m} (--seed {seed}) to match the model's {m}-image {in_name} test subset"
            subsample.update({"from": int(n), "to": int(m), "reason": why})
        index = _limit_indices(len(rows), limit, seed)
        rows = rows if index is None else rows[index]
        return None if len(rows) == n else rows

    # The OOD set first: a shape the model cannot take is reported before the model or the in-distribution data.
    ood = load_ood_set(
        out_name, data_dir=data_dir, corruption=corruption, severity=severity, seed=seed, download=download,
        select=select,
    )
    if tuple(ood.shape) != input_shape:
        raise InputError(f"Expected OOD images of shape {input_shape} like the model's input, got {tuple(ood.shape)}.")
    if len(ood.split) == 0:
        raise InputError(f"Expected the OOD set {out_name} to hold at least one sample, got none.")

    saved = _saved_predictions(run, checkpoint, in_name=in_name)
    dataset = None
    if saved is None or (with_val and saved["val"] is None):
        dataset = load_dataset(
            in_name, data_dir=data_dir, download=download,
            seed=options["seed"] if same else 0,
            val_size=options["val_size"] if same else None,
        ).limit_test(test_subset)
        if tuple(dataset.input_shape) != input_shape:
            raise InputError(
                f"Expected {in_name} inputs of shape {input_shape} like the model's input, got {tuple(dataset.input_shape)}."
            )
        if len(dataset.test) == 0:
            raise InputError(f"Expected the {in_name} test set to hold at least one sample, got none.")

    model = None

    def logits_of(split: Any) -> np.ndarray:
        nonlocal model
        if model is None:
            model, _ = build_model_from_checkpoint(checkpoint)
            model = model.to(torch_device)
        # Normalise with the training dataset's statistics (the model's input convention), whatever the set.
        loader = BatchLoader(split, batch_size, dataset=trained, shuffle=False, augment=False, device=torch_device)
        logits, _ = predict(model, loader, torch_device)
        return logits

    if saved is not None:
        in_logits, in_source = _subset_rows(saved["test"].logits, limit, seed), "predictions.npz"
    else:
        in_logits, in_source = logits_of(_subset_split(dataset.test, limit, seed)), "model"
    out_logits = logits_of(ood.split)
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
        "out_size": ood.size,
        "out_subsample": subsample or None,
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


def _saved_predictions(run: RunFolder | None, checkpoint: dict[str, Any], *, in_name: str) -> dict[str, Any] | None:
    """The run's predictions.npz ({"val", "test"}) when they are this checkpoint's outputs on `in_name`, else None.

    They are when `in_name` is the training dataset and the checkpoint's epoch is the epoch training evaluated
    (evaluate.json's selected_epoch; for --select last, the final epoch). Anything else — another dataset, a run
    resumed or still training, a checkpoint from another epoch — is scored by the model instead.
    """
    if run is None or in_name != str(checkpoint["dataset"]).lower() or not predictions_are_from(run, checkpoint):
        return None
    return load_split_predictions(run.predictions)


def _limit_indices(n: int, limit: int | None, seed: int) -> np.ndarray | None:
    """A seeded random `limit` of range(n) in ascending order (CIFAR test sets are sorted by class), or None for all."""
    if limit is None or limit >= n:
        return None
    return np.sort(np.random.default_rng(seed).permutation(n)[:limit])


def _subset_rows(array: np.ndarray, limit: int | None, seed: int) -> np.ndarray:
    index = _limit_indices(len(array), limit, seed)
    return array if index is None else array[index]


def _subset_split(split: Any, limit: int | None, seed: int) -> Any:
    import torch

    from adacal.data import Split

    index = _limit_indices(len(split), limit, seed)
    if index is None:
        return split
    index = torch.from_numpy(index)
    return Split(split.inputs[index], split.labels[index])


def _check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InputError(f"Expected {name} to be {kind}, got {value!r}.")
    return int(value)


# ------------------------------------------------------------------------------------------------- the command


@dataclass(frozen=True)
class OodRun:
    """What `run_ood` did: the report (its results and config), where it was written and what a reader must know."""

    report: dict[str, Any]
    written: Path | None = None  # the run folder's ood-<set>.json or --json; None when not saved
    notes: list[str] = field(default_factory=list)

    @property
    def results(self) -> dict[str, Any]:
        return self.report["results"]

    @property
    def config(self) -> dict[str, Any]:
        return self.report["config"]


def run_ood(
    *,
    in_name: str | None = None,
    out_name: str | None = None,
    model: str | os.PathLike | None = None,
    in_preds: str | os.PathLike | None = None,
    out_preds: str | os.PathLike | None = None,
    corruption: str | None = None,
    severity: int | None = None,
    scores: str | Iterable[str] = "entropy",
    temperature: float | None = None,
    fit_temperature: bool = False,
    data_dir: str | os.PathLike | None = None,
    download: bool = True,
    device: str = "auto",
    batch_size: int = 512,
    limit: int | None = None,
    seed: int = 0,
    json_path: str | os.PathLike | None = None,
    force: bool = False,
    options: ReadOptions | None = None,
    status: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> OodRun:
    """Everything `adacal ood` does, without printing.

    Either `model` (a run folder or checkpoint; `out_name` is the OOD set, a dataset name, cifar10-c or an .npz of
    images) or `in_preds` and `out_preds` (saved outputs of any model; `options` says how to read them). The
    temperature is `temperature`, else fitted on the validation logits with `fit_temperature`, else the run's
    calibrate.json. The report goes to `json_path` ("-": standard output), else for a run to ood-<set>.json in its
    folder. `status(message)` is a context manager around the long scoring of a model (a spinner). Every option is
    checked before a model is run, and nothing is written before the results exist.
    """
    from adacal.runs import find_run_folder
    from adacal.reports import write_json
    from adacal.writing import check_output

    model = None if model is None else Path(model)
    in_preds = None if in_preds is None else Path(in_preds)
    out_preds = None if out_preds is None else Path(out_preds)
    json_path = None if json_path is None else Path(json_path)
    data_dir = None if data_dir is None else Path(data_dir)
    options = options or ReadOptions()

    model_run = find_run_folder(model) if model is not None else None  # its calibrate.json gives T
    check_output(json_path, flag="--json", force=force, inputs=(
        model, in_preds, out_preds, model_run.report("calibrate.json") if model_run is not None else None))
    score_names = check_score_names(scores)
    if json_path is not None and json_path.is_dir():
        raise InputError(f"Expected --json to be a file path, but {json_path} is a folder.")
    if model is not None and (in_preds is not None or out_preds is not None):
        raise InputError("Expected either --model or --in-preds/--out-preds, not both.")
    if temperature is not None:
        check_temperature(temperature)
        if fit_temperature:
            raise InputError("Expected either --temperature or --fit-temperature, not both.")
    if severity is not None and severity not in SEVERITIES:
        raise InputError(f"Expected --severity to be an integer from 1 to 5, got {severity}.")

    if model is not None:
        if options.logits_key is not None or options.labels_key is not None or options.renormalize:
            raise InputError("Expected --logits-key, --labels-key and --renormalize only with --in-preds/--out-preds.")
        if out_name is None:
            raise InputError("Expected --out (the OOD set: a dataset name, cifar10-c or an .npz of images) with --model.")
        in_name, out_name, corruption, severity = check_ood_options(
            in_name=in_name, out_name=out_name, corruption=corruption, severity=severity
        )
        _, run = resolve_checkpoint(model)
        run_dir = run.root if run is not None else None
        if not fit_temperature:  # option or calibrate.json: settled before the long work
            value, source = resolve_temperature(
                temperature=temperature, calibration=run_dir / "calibrate.json" if run_dir is not None else None
            )
        with status("Scoring the in-distribution and OOD sets") if status is not None else contextlib.nullcontext():
            in_logits, out_logits, info = ood_from_model(
                model, in_name=in_name, out_name=out_name, corruption=corruption, severity=severity,
                data_dir=data_dir, device=device, batch_size=batch_size, seed=seed, limit=limit,
                download=download, with_val=fit_temperature,
            )
        if fit_temperature:
            value, source = resolve_temperature(fit=True, val=info.get("val"))
        in_name = info["in"]
        target = json_path or (run_dir / ood_report_name(out_name, corruption, severity) if run_dir is not None else None)
        out_label = out_name if corruption is None else f"{out_name} {corruption} s{severity}"
        sources = {"model": str(model), "checkpoint": info["checkpoint"], "in_preds": None, "out_preds": None,
                   "in_source": info["in_source"], "data_dir": None if data_dir is None else str(data_dir),
                   "limit": limit, "seed": seed, "out_source": info["out_source"], "out_files": info["out_files"],
                   "out_size": info["out_size"], "out_subsample": info["out_subsample"]}
    elif in_preds is not None or out_preds is not None:
        if in_preds is None or out_preds is None:
            raise InputError("Expected both --in-preds and --out-preds (saved logits), got only one.")
        for flag, given in (("--corruption", corruption), ("--severity", severity), ("--data-dir", data_dir),
                            ("--limit", limit)):
            if given is not None:
                raise InputError(f"Expected {flag} only with --model, not with --in-preds/--out-preds.")
        from adacal.sources import resolve_ood_inputs

        in_logits, out_logits, val = resolve_ood_inputs(in_preds, out_preds, options=options, with_val=fit_temperature)
        value, source = resolve_temperature(temperature=temperature, fit=fit_temperature, val=val)
        in_name = in_name or in_preds.stem
        out_name = out_name or out_preds.stem
        out_label = out_name
        target = json_path
        sources = {"model": None, "checkpoint": None, "in_preds": str(in_preds), "out_preds": str(out_preds)}
    else:
        raise InputError("Expected --model (with --out) or --in-preds and --out-preds.")

    results = detect_ood(
        in_logits, out_logits, scores=score_names, temperature=value, temperature_source=source,
        in_name=in_name, out_name=out_label,
    )
    edge = temperature_edge(value, objective=FIT_OBJECTIVE) if source == "fitted" else None
    config = {"in": in_name, "out": out_name, "corruption": corruption, "severity": severity,
              "scores": list(score_names), **sources, "temperature": value, "temperature_source": source,
              "temperature_edge": edge}
    report = ood_report(results, config=config)
    written = write_json(target, report) if target is not None else None
    return OodRun(report=report, written=written, notes=ood_notes(results, config))


def ood_notes(results: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """What a reader of the results must know: where the OOD images came from, a subsampled OOD set, sets of
    different sizes, a temperature fitted at the edge of its search range."""
    notes = []
    if config.get("out_source") == "hendrycks-files":
        notes.append(f"OOD images: Hendrycks' CIFAR-C file {config['out_files'][0]}.")
    elif config.get("out_source") == "generated":
        missing = " (no Hendrycks CIFAR-C file for it in the data folder)" if str(config["out"]).endswith("-c") else ""
        notes.append(f"OOD images: {config['corruption']} generated by adacal{missing}.")
    subsample = config.get("out_subsample")
    if subsample:
        notes.append(f"OOD set subsampled from {subsample['from']} to {subsample['to']}: {subsample['reason']}.")
    n_in, n_out = results["in"]["n"], results["out"]["n"]
    if n_in != n_out:
        notes.append(f"The sets differ in size ({n_in} in-distribution, {n_out} OOD): AUROC and FPR@95 do not "
                     "depend on the ratio, AUPR-in and AUPR-out do.")
    edge = config.get("temperature_edge")
    if edge:
        low, high = edge["range"]
        notes.append(f"The fitted T = {config['temperature']:.3g} is at the {edge['edge']} edge of its search range "
                     f"[{low:g}, {high:g}]: the best T may lie beyond it.")
    return notes
