"""Training: the epoch loop with validation-driven losses (AdaFocal), checkpoints, resume, DDP, and inference.

    >>> from adacal.training import TrainConfig, train
    >>> result = train(TrainConfig(dataset="digits", loss="adafocal", epochs=5))
    >>> result.test_metrics["ece_em"], result.run_dir

Modules: config (options, presets, checks), update_schedule (--update-every), resume_config (a resumed run's
options), schedules (LR), optimizers, checkpoints (weights_only-safe save/load), entry (train, resolved_config), loop
(Trainer: the epoch loop), trainer_state (what a Trainer checkpoints and restores), results (TrainResult, the final
report), interrupts (Ctrl-C/SIGTERM handling), run_writer (the run folder's files and lock), inference (predict,
predict_checkpoint), distributed (torchrun/DDP), progress (events).
"""

from adacal.training.checkpoints import load_checkpoint, save_checkpoint
from adacal.training.config import TrainConfig, resolve_config
from adacal.training.inference import build_model_from_checkpoint, checkpoint_data_options, predict, predict_checkpoint
from adacal.training.entry import resolved_config, train
from adacal.training.interrupts import TrainingInterrupted
from adacal.training.loop import NonFiniteLossError, Trainer
from adacal.training.progress import TrainingProgress
from adacal.training.results import TrainResult
from adacal.training.run_writer import RunLockedError, RunWriter
from adacal.training.update_schedule import UpdateSchedule, parse_update_every

__all__ = [
    "NonFiniteLossError",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "TrainingInterrupted",
    "TrainingProgress",
    "UpdateSchedule",
    "build_model_from_checkpoint",
    "checkpoint_data_options",
    "load_checkpoint",
    "parse_update_every",
    "predict",
    "predict_checkpoint",
    "resolve_config",
    "resolved_config",
    "RunLockedError",
    "RunWriter",
    "save_checkpoint",
    "train",
]
