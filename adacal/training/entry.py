"""`train(config)`, the library form of `adacal train`: check everything cheap, lock the run folder, load the data,
build the model, loss and optimiser (or restore them from a checkpoint on resume), hand them to the epoch loop
(`adacal.training.loop.Trainer`) and return its result. `resolved_config(config)` is the dry run behind
`adacal train --print-config`.

Resume: `TrainConfig(resume=RUN_OR_CHECKPOINT, epochs=N)` continues the run in its own folder up to N epochs in total.
Model, optimiser, scheduler, loss state (γ, bins, history) and all random generator states are restored, so on the
same machine and device a resumed run reproduces the uninterrupted run exactly.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.errors import InputError
from adacal.reports import make_report, new_run_dir
from adacal.runs import RUN_ID_KEY, RunFolder, new_run_id, require_run_folder, run_config, run_id_of
from adacal.training.checkpoints import (
    check_checkpoint_of_run,
    check_resume_split,
    checkpoint_safe,
    checkpoint_test_subset_method,
    load_checkpoint,
    resolve_checkpoint_path,
)
from adacal.training.config import (
    TrainConfig,
    check_model_options,
    check_names,
    resolve_config,
    resolved_loss_options,
)
from adacal.training.distributed import DistributedContext
from adacal.training.inference import resolve_device
from adacal.training.loop import Trainer
from adacal.training.results import TrainResult
from adacal.training.resume_config import merge_resume_config
from adacal.training.run_writer import INTERRUPTED, RunWriter
from adacal.version import __version__


def seed_everything(seed: int) -> None:
    """Seed torch (CPU and CUDA), numpy and python's random from one number."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def versions() -> dict[str, str]:
    return {
        "adacal": __version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def run_folder_name(dataset: str, model: str, loss: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = [part.replace(":", "-").replace("/", "-") for part in (dataset, model, loss)]
    return f"{stamp}-{'-'.join(safe)}"


def dataset_label(name: str) -> str:
    """A dataset's name in a run folder's name: a registered name as it is, the user's data by its file or folder name
    (without .csv / .npz)."""
    from adacal.data.user_data import user_data_path

    path = user_data_path(name)
    if path is None:
        return name
    return path.stem if path.is_file() else path.name


def _check_writable(out: str | os.PathLike) -> None:
    """Fail before any work when the output folder (or its nearest existing parent) cannot be written."""
    path = Path(out).expanduser().absolute()
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise InputError(f"Expected --out to be a folder, but {probe} is a file.")
    if not os.access(probe, os.W_OK):
        raise InputError(f"Cannot write to the output folder {path}: permission denied.")


def _check_name_free(out: str | os.PathLike, name: str | None) -> None:
    """An explicit --name that is taken under --out is refused before any data is loaded (`new_run_dir` refuses it
    again when it creates the folder, for a run that took the name in the meantime)."""
    if name is None:
        return
    from adacal.writing import check_name_lengths

    candidate = Path(out).expanduser() / name
    check_name_lengths(candidate, "--name")  # before the file system is asked (an over-long name is an OSError there)
    try:
        taken = os.path.lexists(candidate)
    except OSError:  # left to new_run_dir, which says what the file system refused
        return
    if taken:
        raise InputError(
            f"Expected --name {name} to be a new run folder, but {candidate} already exists (choose another --name, "
            f"or continue that run with --resume {candidate})."
        )


def _check_resume_epochs(resolved: TrainConfig, checkpoint: dict[str, Any], checkpoint_path: Path) -> None:
    if resolved.epochs < int(checkpoint["epoch"]):
        raise InputError(
            f"Expected --epochs to be at least the {checkpoint['epoch']} epoch(s) {checkpoint_path} has completed, "
            f"got {resolved.epochs}."
        )


def train(config: TrainConfig, progress: Any = None) -> TrainResult:
    """Run `adacal train` from Python: check everything cheap, load data, build, train, evaluate; see TrainConfig.

    Raises InputError (and its subclasses) for bad options before any training, NonFiniteLossError when the loss
    diverges, TrainingInterrupted on Ctrl-C/SIGTERM. The run folder is locked for the whole run (RunWriter.lock): a
    second `train --resume` of the same run fails at once with RunLockedError.
    """
    from adacal.training.config import check_structure
    from adacal.training.progress import check_progress

    check_structure(config)
    check_progress(progress)  # a listener the events cannot be sent to fails here, not inside the first epoch
    _check_environment()
    writers: list[RunWriter] = []
    try:
        return _train(config, progress, writers)
    finally:
        for writer in writers:
            writer.unlock()


def resolved_config(config: TrainConfig) -> dict[str, Any]:
    """The configuration `train(config)` would run with (`adacal train --print-config`): presets, the default model of
    the dataset and every loss hyper-parameter filled in, all checks passed; with `resume`, the run's own config with
    what may change. A dry run: no folder is created, no data is loaded, nothing is written."""
    from adacal.data.user_data import default_user_model
    from adacal.models import default_model
    from adacal.training.config import check_structure

    check_structure(config)
    _check_environment()
    if config.resume:
        from adacal.runs import find_run_folder

        checkpoint_path = resolve_checkpoint_path(config.resume)
        checkpoint = load_checkpoint(checkpoint_path)
        run = find_run_folder(checkpoint_path)
        if run is not None:
            check_checkpoint_of_run(run, checkpoint_path, checkpoint, _check_run_documents(run))
        resolved = merge_resume_config(checkpoint["config"], config, source=str(checkpoint_path))
        _check_resume_epochs(resolved, checkpoint, checkpoint_path)
        _continue_interrupted_epoch(checkpoint_path, checkpoint, resolved.epochs)
        check_names(resolved)
    else:
        resolved = resolve_config(config)
        check_names(resolved)
        check_model_options(resolved)
        _check_writable(resolved.out)  # what `train` would refuse before any work, --print-config refuses too
        _check_name_free(resolved.out, resolved.name)
        resolved.loss_options = resolved_loss_options(resolved.loss, resolved.loss_options)
        resolved.model = resolved.model or default_user_model(resolved.dataset) or default_model(str(resolved.dataset))
    return resolved.to_dict()


def _check_environment() -> None:
    """Refuse a bad $ADACAL_NUM_THREADS or $ADACAL_MEMORY_LIMIT now, not when the first epoch's metrics read it."""
    from adacal.memory import memory_limit
    from adacal.metrics.rows import scan_threads

    scan_threads()
    memory_limit()


def _locked_writer(run: RunFolder, dist: DistributedContext, writers: list[RunWriter]) -> RunWriter:
    """The run folder's writer, holding its lock (rank 0 only: the other ranks write nothing)."""
    writer = RunWriter(run, enabled=dist.is_main)
    writer.lock()
    writers.append(writer)
    return writer


def _train(config: TrainConfig, progress: Any, writers: list[RunWriter]) -> TrainResult:
    from adacal.data import load_dataset
    from adacal.losses import build_loss
    from adacal.models import build_model, check_input_shape, rebuild_options, default_model, model_options_for_dataset

    dist = DistributedContext.from_env()
    checkpoint = None
    run: RunFolder | None = None
    if config.resume:
        checkpoint_path = resolve_checkpoint_path(config.resume)
        checkpoint = load_checkpoint(checkpoint_path)  # safe (weights_only) and checked before anything else
        run = require_run_folder(checkpoint_path)
        run_report = _check_run_documents(run)  # config.json and every history line, before anything is written
        check_checkpoint_of_run(run, checkpoint_path, checkpoint, run_report)
        resolved = merge_resume_config(checkpoint["config"], config, source=str(checkpoint_path))
        _check_resume_epochs(resolved, checkpoint, checkpoint_path)
        chosen_path, checkpoint = _continue_interrupted_epoch(checkpoint_path, checkpoint, resolved.epochs)
        if chosen_path != checkpoint_path:
            check_checkpoint_of_run(run, chosen_path, checkpoint, run_report)
    else:
        resolved = resolve_config(config)
    check_names(resolved)
    if config.data_dir is not None:
        # Recorded as an absolute path: `ood --model RUN` / `evaluate RUN` may run from another folder.
        resolved.data_dir = os.path.abspath(os.path.expanduser(str(config.data_dir)))
    if checkpoint is None:
        resolved.loss_options = resolved_loss_options(resolved.loss, resolved.loss_options)  # config.json says all
        check_model_options(resolved)
    device = dist.device_for(resolve_device(resolved.device))
    if checkpoint is None and dist.is_main:
        _check_writable(resolved.out)
        _check_name_free(resolved.out, resolved.name)
    # One writer per run folder: after the cheap checks (a refused command touches nothing), before any work; a
    # second resume of a run that is training stops here. A new run takes its lock as soon as its folder exists.
    writer = _locked_writer(run, dist, writers) if run is not None else None

    dist.setup(device)
    created: Path | None = None  # the run folder this call made (a new run), removed again if it fails too early
    try:
        seed_everything(resolved.seed)
        data_dir, download = _data_source(config, resolved, resumed=checkpoint is not None)
        with _size_flags_named(resolved):
            dataset = load_dataset(
                resolved.dataset, data_dir=data_dir, seed=resolved.seed, train_subset=resolved.train_subset,
                val_size=resolved.val_size, download=download, **_loader_options(resolved),
            )
            if checkpoint is None:
                dataset.check_test_subset(resolved.test_subset)
        # A resumed run keeps the test images it was scored on (runs from before every class was kept: "random").
        method = checkpoint_test_subset_method(checkpoint) if checkpoint is not None else "every-class"
        dataset = dataset.limit_test(resolved.test_subset, method=method)
        if checkpoint is not None:
            check_resume_split(checkpoint, dataset.split_info)
        if resolved.channels_last and dataset.kind != "image":
            raise InputError(f"--channels-last applies to image datasets only; {dataset.name} is a {dataset.kind} "
                             "dataset.")
        model_name = resolved.model or dataset.extra.get("default_model") or default_model(dataset.name)
        resolved.model = model_name
        check_input_shape(model_name, tuple(dataset.input_shape), kind=dataset.kind)
        model_options = model_options_for_dataset(model_name, dataset, resolved.model_options or {})
        if checkpoint is not None:
            # The weights come from the checkpoint: a resumed run never rereads an initialisation file (GloVe) and
            # builds the architecture the checkpoint recorded (e.g. the embedding size that file had).
            model_options = rebuild_options({**model_options, **checkpoint["model_options"]})
        if checkpoint is not None and checkpoint["model_name"] != model_name:
            raise InputError(
                f"Expected the checkpoint's model '{checkpoint['model_name']}' to match --model {model_name}."
            )
        model = build_model(
            model_name, num_classes=dataset.num_classes, input_shape=tuple(dataset.input_shape), **model_options
        )
        _check_forward(model, model_name, dataset)
        loss = build_loss(resolved.loss, **(resolved.loss_options or {}))

        if run is None:
            root = None
            if dist.is_main:
                name = resolved.name or run_folder_name(dataset_label(dataset.name), model_name, resolved.loss)
                root = str(new_run_dir(resolved.out, name, unique=resolved.name is None))
                created = Path(root)
            run = RunFolder(Path(dist.broadcast(root)))
            writer = _locked_writer(run, dist, writers)
        trainer = Trainer(
            resolved, dataset=dataset, model=model, loss=loss, model_name=model_name,
            model_options=rebuild_options(model_options, model),
            device=device, run=run, dist=dist, progress=progress, writer=writer,
        )
        if checkpoint is not None:
            trainer.load_state(checkpoint)
        if dist.is_main:
            _write_config(
                trainer.writer, resolved, dataset, resumed_from=trainer.resumed_from,
                resumed_batch=trainer.resumed_batch
            )
        dist.barrier()
        return trainer.run()
    except BaseException:
        if created is not None:
            _remove_if_never_checkpointed(created)
        raise
    finally:
        dist.teardown()


@contextlib.contextmanager
def _size_flags_named(config: TrainConfig) -> Iterator[None]:
    """The dataset checks of --train-subset, --test-subset and --val-size (which need the split sizes) name those
    options as the other training checks do, not the loader's parameters ("Expected train_subset at most ...")."""
    try:
        yield
    except InputError as exc:
        message = str(exc)
        renamed = re.sub(r"^Expected (train_subset|test_subset|val_size) (to be )?",
                         lambda m: f"Expected --{m.group(1).replace('_', '-')} to be ", message)
        if config.val_size is not None:
            renamed = re.sub(r"^Expected a split size between (\d+) and (\d+) for (.+) \(val\), got",
                             r"Expected --val-size to be between \1 and \2 for \3 (samples split off its training "
                             r"set), got", renamed)
        if renamed == message:
            raise
        raise type(exc)(renamed) from None


def _check_forward(model: Any, name: str, dataset: Any) -> None:
    """One forward pass of two blank inputs in eval mode, before any folder exists: a model that cannot take the
    dataset's input size (torchvision's AlexNet or ViT at 32x32) fails here in one line, not as a traceback in the
    first batch with a run folder left behind. Eval mode and no_grad: no statistics, weights or random state move."""
    shape = tuple(int(d) for d in dataset.input_shape)
    blank = torch.zeros((2, *shape), dtype=torch.long if dataset.kind == "text" else torch.float32)
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(blank)
    except (RuntimeError, AssertionError, ValueError, IndexError, TypeError) as exc:
        reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise InputError(f"Expected model {name} to take {dataset.name}'s inputs of shape {shape}, but its forward "
                         f"pass fails ({reason[:160]}): pick a model for this input size.") from None
    finally:
        model.train(training)


def _remove_if_never_checkpointed(root: Path) -> None:
    """Remove a new run's folder when training failed before its first checkpoint (data that fails only once the
    model sees it, a corrupt image found by the first batch): it holds nothing to resume, and leaving it would take
    the --name of the retry. A folder with any checkpoint is kept (resumable, and the error says so)."""
    import shutil

    checkpoints = root / "checkpoints"
    if checkpoints.is_dir() and any(checkpoints.glob("*.pt")):
        return
    shutil.rmtree(root, ignore_errors=True)


def _continue_interrupted_epoch(
    path: Path, checkpoint: dict[str, Any], epochs: int
) -> tuple[Path, dict[str, Any]]:
    """The checkpoint to resume from, and its path: checkpoints/interrupted.pt instead of the run's last.pt when it
    continues last.pt's epoch (same `epoch`) and that epoch is within --epochs; a stale or unreadable one is ignored
    (last.pt is always a correct resume point: the interrupted epoch is then repeated from its start)."""
    partial = checkpoint.get("partial_epoch")
    if partial is not None:  # a mid-epoch checkpoint given directly
        if epochs < partial["epoch"]:
            raise InputError(
                f"Expected --epochs to be at least {partial['epoch']} to finish the interrupted epoch {path} holds, "
                f"got {epochs}."
            )
        return path, checkpoint
    candidate = path.with_name(f"{INTERRUPTED}.pt")
    if path.name != "last.pt" or not candidate.is_file():
        return path, checkpoint
    from adacal.errors import CheckpointError

    try:
        interrupted = load_checkpoint(candidate)
    except CheckpointError:
        return path, checkpoint
    partial = interrupted.get("partial_epoch")
    if (
        partial is None
        or interrupted["epoch"] != checkpoint["epoch"]
        or interrupted["model_name"] != checkpoint["model_name"]
        or epochs < partial["epoch"]
    ):
        return path, checkpoint
    return candidate, interrupted


def _data_source(given: TrainConfig, resolved: TrainConfig, *, resumed: bool) -> tuple[str | None, bool]:
    """(data folder, whether a download may write into it). A folder read from a resumed run's checkpoint (not typed
    now) is used only when it exists and is never downloaded into; otherwise the default data folder is used."""
    if not resumed or given.data_dir is not None or resolved.data_dir is None:
        return resolved.data_dir, True
    if os.path.isdir(os.path.expanduser(str(resolved.data_dir))):
        return resolved.data_dir, False
    return None, True


def _loader_options(config: TrainConfig) -> dict[str, Any]:
    """--workers goes to dataset loaders that decode files and take it; tensor-resident datasets need no workers."""
    from adacal.data import DATASETS
    from adacal.registry import option_names

    from adacal.data.user_data import is_user_data

    if is_user_data(config.dataset):
        options: dict[str, Any] = {"workers": config.workers} if config.workers else {}
        return {**options, "label_column": config.label_column} if config.label_column is not None else options
    if config.workers and "workers" in option_names(DATASETS.get(config.dataset)):
        return {"workers": config.workers}
    return {}


def _check_run_documents(run: RunFolder) -> dict[str, Any] | None:
    """What resume reads back from a run folder besides the checkpoint, checked before anything is written; returns
    config.json's report (None when the folder has none)."""
    from adacal.sources import read_history

    # Validated once here (every field resume and _write_config read back, results.resumes included), before
    # anything is loaded or written.
    report = run_config(run, required=True) if run.config.exists() else None
    if run.history.exists():
        read_history(run.history, torn_tail=True)
    return report


def _write_config(
    writer: RunWriter, config: TrainConfig, dataset: Any, *, resumed_from: int | None, resumed_batch: int | None = None
) -> None:
    run = writer.folder
    results: dict[str, Any] = {"split": checkpoint_safe(dataset.split_info), "versions": versions()}
    if resumed_from is not None and run.config.exists():
        previous = run_config(run, required=True)["results"]
        resumes = list(previous.get("resumes", []))  # a list of resume records (run_config checked)
        resume: dict[str, Any] = {"from_epoch": resumed_from}
        if resumed_batch is not None:  # from a mid-epoch checkpoint: epoch from_epoch + 1 after this batch
            resume["from_batch"] = resumed_batch
        resumes.append({**resume, "epochs": config.epochs, "versions": versions()})
        results = {**previous, "resumes": resumes}
    # A resumed run keeps its id (a run of an earlier adacal gets one now, with the predictions it will write).
    results[RUN_ID_KEY] = run_id_of({"results": results}) or new_run_id()
    writer.write_config(make_report("train-config", config=config.to_dict(), results=results))
