"""Training a quality cell's run, or reusing one: `train_or_reuse` finds a finished run folder with the cell's protocol
options (or an unfinished one to resume from its checkpoint), else trains, printing one line per epoch
(`EpochPrinter`); the timing it returns and `machine_info` say where and how long the run trained.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Iterator

from quality_protocol import protocol_options, with_loss_defaults  # first: it puts the checkout on sys.path

import adacal
from quality_analysis import read_history


def gpu_name(device: str) -> str | None:
    """The name of the GPU `device` names on this machine (None for the CPU or where torch sees no CUDA)."""
    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return None


def machine_info(device: str = "cpu", gpu: str | None = None) -> dict[str, Any]:
    """This machine, and where the run trained: `device` and `gpu` as recorded when it trained (a reused run folder may
    have trained elsewhere)."""
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "device": str(device),
        "gpu": gpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "adacal": adacal.__version__,
        "load_average_at_start": None if load is None else [round(v, 2) for v in load],
    }


def _runs_with_options(folder: Path, options: dict[str, Any]) -> Iterator[Path]:
    """The run folders under `folder`, newest first, whose config.json holds the protocol options `options`."""
    if not folder.is_dir():
        return
    for run in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        try:
            config = json.loads((run / "config.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if with_loss_defaults(protocol_options(config)) == with_loss_defaults(options):
            yield run


def _finished_run(folder: Path, options: dict[str, Any]) -> Path | None:
    """The newest finished run under `folder` whose protocol options equal `options`, else None."""
    return next((run for run in _runs_with_options(folder, options)
                 if (run / "evaluate.json").is_file() and (run / "predictions.npz").is_file()), None)


def _unfinished_run(folder: Path, options: dict[str, Any]) -> Path | None:
    """The newest run under `folder` with the protocol options `options` that stopped before its end (no
    evaluate.json) but holds a checkpoint to resume from, else None."""
    return next((run for run in _runs_with_options(folder, options)
                 if not (run / "evaluate.json").is_file()
                 and any((run / "checkpoints" / name).is_file() for name in ("last.pt", "interrupted.pt"))), None)


class EpochPrinter:
    """A progress listener printing one line per epoch (with AdaFocal's γ range) and the epoch time."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.epoch_seconds: list[float] = []

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event != "epoch_end":
            return
        record, seconds = info["record"], float(info["seconds"])
        self.epoch_seconds.append(seconds)
        train, val = record["train"], record["val"]
        line = (f"  [{self.label}] epoch {info['epoch']:>3}/{info['epochs']}  {seconds:5.1f}s  lr {record['lr']:.4g}  "
                f"train loss {train['loss']:.4f} acc {100 * train['accuracy']:5.1f}%  "
                f"val err {100 * val['error']:5.2f}% ECE-EM {100 * val['ece_em']:5.2f}%")
        updates = (record.get("adafocal") or {}).get("updates") or []
        if updates:
            gammas = updates[-1]["gammas"]
            line += f"  γ [{min(gammas):+.2f}, {max(gammas):+.2f}]"
        print(line, flush=True)


def train_or_reuse(config: Any, *, folder: Path, label: str, reuse: bool) -> tuple[Path, dict[str, Any]]:
    """Train `config` (a TrainConfig) into `folder`, or reuse a finished run there with the same protocol options.

    Returns (run folder, timing dict)."""
    from adacal.training import resolve_config, train

    options = protocol_options(resolve_config(config).to_dict())
    resumed_from = None
    if reuse:
        found = _finished_run(folder, options)
        if found is not None:
            print(f"  [{label}] reusing finished run {found}", flush=True)
            recorded = _recorded_seconds(found)
            recorded.setdefault("device", _run_device(found))  # folders timed before the device was recorded
            return found, {"reused_run_folder": True, **recorded}
        # A run cut short (a session's end, Ctrl-C) continues from its last checkpoint: adacal's resume is exact, so
        # the result is the one an uninterrupted run gives, and the epochs already trained are not paid again.
        resumed_from = _unfinished_run(folder, options)
    folder.mkdir(parents=True, exist_ok=True)
    config = dataclasses.replace(config, out=str(folder), resume=None if resumed_from is None else str(resumed_from))
    device = _device_name(config.device)
    gpu = gpu_name(device)
    if resumed_from is not None:
        print(f"  [{label}] resuming unfinished run {resumed_from}", flush=True)
        before = _run_device(resumed_from)
        if before != device:  # epochs on two devices: its time is neither's
            device, gpu = "mixed", None
    printer = EpochPrinter(label)
    started = time.perf_counter()
    result = train(config, progress=printer)
    wall = time.perf_counter() - started
    epoch_seconds = printer.epoch_seconds
    if resumed_from is not None:
        # Every epoch's time, the ones before the interruption included, from the run's history.
        epoch_seconds = [float(line["seconds"]) for line in read_history(Path(result.run_dir)) if "seconds" in line]
        wall = sum(epoch_seconds) or wall
    timing = {
        "device": device,
        "gpu": gpu,
        "resumed_run_folder": resumed_from is not None,
        "train_wall_seconds": round(wall, 2),
        "train_loop_seconds": round(float(result.seconds), 2),
        "epoch_seconds_median": round(statistics.median(epoch_seconds), 2) if epoch_seconds else None,
        "epoch_seconds": [round(s, 2) for s in epoch_seconds],
        "torch_threads": _torch_threads(),
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    (Path(result.run_dir) / "benchmark_timing.json").write_text(json.dumps(timing))
    return Path(result.run_dir), {"reused_run_folder": False, **timing}


def _device_name(device: Any) -> str:
    """A run's device as the grid groups it: cpu, cuda or cuda:N as given; 'auto' as what it resolves to here."""
    text = str(device or "cpu").strip().lower()
    if text == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return text


def _run_device(run: Path) -> str:
    """The device a run folder's config.json names (the last one it trained on); the CPU when it names none."""
    try:
        config = json.loads((run / "config.json").read_text()).get("config") or {}
    except (OSError, ValueError):
        config = {}
    return _device_name(config.get("device"))


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _recorded_seconds(run: Path) -> dict[str, Any]:
    path = run / "benchmark_timing.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            data.pop("reused", None)
            data.pop("reused_run_folder", None)
            return data
        except ValueError:
            pass
    return {}


def set_threads(threads: int) -> None:
    """Torch threads of this process, and float32 arithmetic on CUDA (TF32 would make GPU seeds of a grid compute
    with a 10-bit mantissa where the CPU seeds had 23)."""
    import torch

    torch.set_num_threads(threads)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
