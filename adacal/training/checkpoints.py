"""Checkpoints: one dict of tensors and plain values, written atomically, read only with torch.load(weights_only=True).

A checkpoint never holds pickled Python objects, so loading one cannot run code: a file that needs more than
`weights_only=True` is refused as a CheckpointError, as is a truncated or corrupt file or one adacal did not write.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.errors import CheckpointError, InputError
from adacal.reports import atomic_torch_save
from adacal.sources.files import check_allocation, safe_torch_load

FORMAT = "adacal-checkpoint"
FORMAT_VERSION = 1
# Bounds on what a checkpoint may declare, far beyond any real model: a file from elsewhere must not make adacal build
# a model with 10^12 classes or an input of 10^15 values (memory is checked separately, on the meta device).
MAX_CLASSES = 10_000_000
MAX_INPUT_VALUES = 1 << 28
MAX_OPTION_INT = 1 << 31
MAX_STATE_ENTRIES = 100_000
REQUIRED_KEYS = (
    "format", "format_version", "model_name", "model_options", "dataset", "num_classes", "input_shape", "config",
    "epoch", "model_state",
)


# ---------------------------------------------------------------------------------------------------------------------
# random number generator state, as tensors and plain lists (weights_only-safe)


def checkpoint_safe(value: Any) -> Any:
    """Checkpoint-safe copies of option values (paths become strings)."""
    if isinstance(value, dict):
        return {str(k): checkpoint_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [checkpoint_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def capture_rng_state() -> dict[str, Any]:
    """The torch, numpy, python and (if any) CUDA generator states, in a form torch.load(weights_only=True) accepts."""
    np_name, np_keys, np_pos, np_has_gauss, np_cached = np.random.get_state()
    py_version, py_internal, py_gauss = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "name": str(np_name),
            "keys": torch.from_numpy(np.asarray(np_keys, dtype=np.int64)),
            "pos": int(np_pos),
            "has_gauss": int(np_has_gauss),
            "cached_gaussian": float(np_cached),
        },
        "python": [int(py_version), [int(v) for v in py_internal], py_gauss],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = [s.cpu() for s in torch.cuda.get_rng_state_all()]
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Undo `capture_rng_state` (CUDA states only when this machine has as many devices)."""
    torch.set_rng_state(state["torch"].cpu())
    np_state = state["numpy"]
    keys = np.asarray(np_state["keys"].cpu().numpy() if hasattr(np_state["keys"], "numpy") else np_state["keys"])
    np.random.set_state(
        (np_state["name"], keys.astype(np.uint32), np_state["pos"], np_state["has_gauss"], np_state["cached_gaussian"])
    )
    version, internal, gauss = state["python"]
    random.setstate((int(version), tuple(int(v) for v in internal), gauss))
    cuda_states = state.get("cuda")
    if cuda_states and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda_states):
        torch.cuda.set_rng_state_all([s.cpu() for s in cuda_states])


# ---------------------------------------------------------------------------------------------------------------------
# save / load


def make_checkpoint(
    *,
    model_name: str,
    model_options: dict[str, Any],
    dataset: str,
    num_classes: int,
    input_shape: tuple[int, ...],
    config: dict[str, Any],
    epoch: int,
    model_state: dict[str, Any],
    optimizer_state: dict[str, Any] | None = None,
    scheduler_state: dict[str, Any] | None = None,
    loss_state: dict[str, Any] | None = None,
    rng_state: dict[str, Any] | None = None,
    best_metric: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The checkpoint dict of CONTRACTS.md (extra keys, e.g. `scaler_state`, are allowed; a mid-epoch checkpoint
    (checkpoints/interrupted.pt) adds `partial_epoch`, see `adacal.training.interrupts`)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_name": model_name,
        "model_options": dict(model_options),
        "dataset": dataset,
        "num_classes": int(num_classes),
        "input_shape": [int(s) for s in input_shape],
        "config": config,
        "epoch": int(epoch),
        "model_state": model_state,
        "optimizer_state": optimizer_state,
        "scheduler_state": scheduler_state,
        "loss_state": loss_state,
        "rng_state": rng_state if rng_state is not None else capture_rng_state(),
        "best_metric": best_metric,
        **extra,
    }


def save_checkpoint(checkpoint: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write atomically (temp file + rename): a reader sees the old checkpoint or the new one, never half of one."""
    if checkpoint.get("format") != FORMAT:
        raise ValueError("save_checkpoint expects a dict built by make_checkpoint")
    return atomic_torch_save(checkpoint, path)


def load_checkpoint(path: str | os.PathLike, contents: Any = None) -> dict[str, Any]:
    """Read an adacal checkpoint safely (weights_only=True, on the CPU); anything else is a CheckpointError.

    `contents`: the file as a caller already loaded it (with `safe_torch_load`), checked here instead of read again."""
    path = Path(path)
    checkpoint = safe_torch_load(path, what="torch checkpoint", error=CheckpointError) if contents is None else contents
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise CheckpointError(f"Expected {path} to be an adacal checkpoint (written by 'adacal train'), but it is not.")
    version = checkpoint.get("format_version")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"Expected {path} to have checkpoint format_version {FORMAT_VERSION}, got {version!r} "
            f"(written by a different adacal version)."
        )
    missing = [key for key in REQUIRED_KEYS if key not in checkpoint]
    if missing:
        raise CheckpointError(f"Expected {path} to contain {', '.join(missing)}, but it does not.")
    _check_fields(checkpoint, path)
    _check_model(checkpoint, path)
    return checkpoint


def _is_count(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _check_fields(checkpoint: dict[str, Any], path: Path) -> None:
    """The types of the fields adacal reads from a checkpoint: a file from elsewhere is not trusted to have them."""
    expected = {
        "model_name": ("a name", lambda v: isinstance(v, str) and v != ""),
        "model_options": ("a dict", lambda v: isinstance(v, dict)),
        "dataset": ("a name", lambda v: isinstance(v, str) and v != ""),
        "num_classes": (f"an integer from 2 to {MAX_CLASSES}", lambda v: _is_count(v, 2) and v <= MAX_CLASSES),
        "input_shape": (f"a list of 1 to 4 positive integers with at most {MAX_INPUT_VALUES} values in all",
                        lambda v: isinstance(v, (list, tuple)) and 0 < len(v) <= 4 and all(_is_count(s, 1) for s in v)
                        and int(np.prod([int(s) for s in v], dtype=object)) <= MAX_INPUT_VALUES),
        "config": ("a dict", lambda v: isinstance(v, dict)),
        "epoch": ("an integer >= 0", lambda v: _is_count(v, 0)),
        "model_state": ("a dict of tensors", lambda v: isinstance(v, dict) and len(v) <= MAX_STATE_ENTRIES
                        and all(isinstance(k, str) and isinstance(t, torch.Tensor) for k, t in v.items())),
    }
    for key, (kind, ok) in expected.items():
        if not ok(checkpoint[key]):
            raise CheckpointError(f"Expected '{key}' in {path} to be {kind}, got {checkpoint[key]!r:.60}.")
    partial = checkpoint.get("partial_epoch")
    if partial is not None:
        _check_partial_epoch(partial, int(checkpoint["epoch"]), path)


def _plain_option(value: Any, depth: int = 0) -> bool:
    """A model option as a run records it: a JSON-like value with bounded integers and nesting."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_OPTION_INT
    if isinstance(value, float):
        return bool(np.isfinite(value))
    if isinstance(value, (list, tuple)) and depth < 4:
        return len(value) <= 10_000 and all(_plain_option(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth < 4:
        return all(isinstance(k, str) and _plain_option(v, depth + 1) for k, v in value.items())
    return False


def _check_model(checkpoint: dict[str, Any], path: Path) -> None:
    """The model the checkpoint describes, built on the meta device (no memory), against its weights: absurd model
    options are refused before any allocation, and so are weights whose names, shapes or dtypes do not fit."""
    for key, value in checkpoint["model_options"].items():
        if not isinstance(key, str) or not _plain_option(value):
            raise CheckpointError(
                f"Expected the model option '{key}' in {path} to be a plain value (integers up to {MAX_OPTION_INT}), "
                f"got {value!r:.60}."
            )
    state = checkpoint["model_state"]
    for key, tensor in state.items():
        if tensor.dtype.is_complex or tensor.dtype in (torch.quint8, torch.qint8, torch.qint32):
            raise CheckpointError(f"Expected the weight '{key}' in {path} to be a real tensor, got dtype "
                                  f"{tensor.dtype}.")
    model = _meta_model(checkpoint, path)
    if model is None:
        return
    nbytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    check_allocation(nbytes, what=f"the model '{checkpoint['model_name']}' that {path} describes")


def _meta_model(checkpoint: dict[str, Any], path: Path) -> torch.nn.Module | None:
    """The checkpoint's model built on the meta device (shapes only, no memory); None when it cannot be built there
    (it is then checked when it is built for real)."""
    from adacal.models import build_model, rebuild_options

    name = checkpoint["model_name"]
    try:
        with torch.device("meta"):
            return build_model(
                name, num_classes=int(checkpoint["num_classes"]),
                input_shape=tuple(int(s) for s in checkpoint["input_shape"]),
                **rebuild_options(dict(checkpoint["model_options"])),
            )
    except InputError:
        raise
    except (TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise CheckpointError(
            f"Expected the model options in {path} to build model '{name}', but they do not ({first:.120})."
        ) from None
    except Exception:  # noqa: BLE001 - a model that cannot be built on the meta device is checked when it is built
        return None


def check_weights_fit(checkpoint: dict[str, Any], path: str | os.PathLike) -> None:
    """The checkpoint's weights against the model it names — every name, shape and kind of dtype — before the model
    is built for real (one line naming the first difference)."""
    path = Path(path)
    model = _meta_model(checkpoint, path)
    if model is None:
        return
    name, state, expected = checkpoint["model_name"], checkpoint["model_state"], model.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        which = f"missing {missing[0]!r}" if missing else f"unexpected {unexpected[0]!r}"
        raise CheckpointError(
            f"Expected the checkpoint's weights to fit model '{name}', but they do not ({which}; "
            f"{len(missing)} missing, {len(unexpected)} unexpected)."
        )
    for key, tensor in expected.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"Expected the checkpoint's weights to fit model '{name}', but they do not ('{key}' has shape "
                f"{tuple(state[key].shape)}, the model needs {tuple(tensor.shape)})."
            )
        if tensor.dtype.is_floating_point != state[key].dtype.is_floating_point:
            kind = "floating" if tensor.dtype.is_floating_point else "integer"
            raise CheckpointError(
                f"Expected the weight '{key}' in {path} to be of a {kind} dtype like the model's {tensor.dtype}, "
                f"got {state[key].dtype}."
            )


def _check_partial_epoch(partial: Any, epoch: int, path: Path) -> None:
    """`partial_epoch` of a mid-epoch (interrupted.pt) checkpoint: epoch `epoch + 1` trained up to batch `batch`."""
    def is_number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)

    expected = {
        "epoch": (f"the integer {epoch + 1} (the epoch after 'epoch')", lambda v: _is_count(v, 1) and v == epoch + 1),
        "batch": ("an integer >= 1", lambda v: _is_count(v, 1)),
        "seen": ("an integer >= 1", lambda v: _is_count(v, 1)),
        "correct": ("an integer >= 0", lambda v: _is_count(v, 0)),
        "loss_sum": ("a finite number", is_number),
        "updates": ("a list of dicts", lambda v: isinstance(v, list) and all(isinstance(u, dict) for u in v)),
    }
    if not isinstance(partial, dict):
        raise CheckpointError(f"Expected 'partial_epoch' in {path} to be a dict, got {partial!r:.60}.")
    for key, (kind, ok) in expected.items():
        if key not in partial or not ok(partial[key]):
            raise CheckpointError(f"Expected 'partial_epoch.{key}' in {path} to be {kind}, got "
                                  f"{partial.get(key)!r:.60}.")
    if partial["correct"] > partial["seen"]:
        raise CheckpointError(f"Expected 'partial_epoch.correct' in {path} to be at most its 'seen', but it is not.")


def checkpoint_test_subset_method(checkpoint: dict[str, Any]) -> str:
    """How the run of `checkpoint` drew its --test-subset sample (`adacal.data.base.test_subset_rows`), so that a
    resumed run and `adacal evaluate` score the same test images: the method its `split` records; "random" for a
    checkpoint written before checkpoints recorded it (no `split`) or when its split records none."""
    from adacal.data.base import TEST_SUBSET_METHODS

    split = checkpoint.get("split")
    method = split.get("test_subset_method", "random") if isinstance(split, dict) else "random"
    return method if method in TEST_SUBSET_METHODS else "random"


def check_resume_split(checkpoint: dict[str, Any], split_info: dict[str, Any]) -> None:
    """InputError when the data a resumed run just loaded is not the data its checkpoint trained on: the training pool
    or the split sizes differ (e.g. --data-dir now points at another file). The path itself may change (data moved);
    a checkpoint that records no split (older runs) is not checked."""
    saved = checkpoint.get("split")
    if not isinstance(saved, dict):
        return
    from adacal.data.user_data import check_same_data

    check_same_data(saved, split_info, what="resuming this one")
    for key in ("train_pool", "sizes"):
        if key in saved and key in split_info and saved[key] != split_info[key]:
            raise InputError(
                f"Expected the data at {split_info.get('source', '--data-dir')} to give the split the resumed run "
                f"trained on ({saved.get('source', 'its data')}: {key} {saved[key]}), got {key} {split_info[key]}: "
                "resume with --data-dir pointing at the run's own data."
            )


def resolve_checkpoint_path(path: str | os.PathLike, which: str = "last") -> Path:
    """A checkpoint file given directly, or `<run>/checkpoints/<which>.pt` for a run folder."""
    from adacal.sources.files import check_regular_file

    path = Path(path)
    if path.is_dir():
        candidate = path / "checkpoints" / f"{which}.pt"
        if not candidate.is_file():
            raise CheckpointError(f"Expected a checkpoint at {candidate}, but the run folder {path} has none.")
        return candidate
    return check_regular_file(path, "a run folder or checkpoint", error=CheckpointError)


def check_checkpoint_of_run(
    run: Any, path: Path, checkpoint: dict[str, Any], run_report: dict[str, Any] | None
) -> None:
    """Refuse a checkpoint that is not this run's: the options it recorded must agree with the run folder's
    config.json on everything that defines the run (dataset, model, loss and its options, seed, subsets, schedule,
    ...); the options a resume may change (--epochs, --device, --workers, --data-dir) and the run's name and --out
    folder are not compared. An option only one side records (written by another adacal version) is not compared.
    A CheckpointError names every differing option, before anything is written."""
    from adacal.training.resume_config import defining_differences

    recorded = (run_report or {}).get("config")
    saved = checkpoint.get("config")
    if not isinstance(recorded, dict) or not isinstance(saved, dict):
        return
    differences = defining_differences(saved, recorded)
    if not differences:
        return
    shown = ", ".join(differences[:6]) + (f" and {len(differences) - 6} more" if len(differences) > 6 else "")
    raise CheckpointError(
        f"Expected {path} to be a checkpoint of the run in {run.root}, got one trained with other options than its "
        f"{run.config.name}: {shown}; nothing was written."
    )
