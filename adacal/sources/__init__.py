"""The one place where a path a user typed becomes data: predictions files of any framework, checkpoints, run
folders, reports, calibrator files, config.json and history.jsonl.

- `files`: only regular files are opened (never a FIFO or device), declared sizes are checked against memory first;
- `documents`: JSON parsed with limits and validated against its schema; `read_history`;
- `formats`: predictions of any framework (.npz/.pt/.npy/.safetensors/.mat and the text formats), key spellings,
  binary scores, class names, renormalising; `text_tables` reads the text formats, `safetensors_file` .safetensors,
  `matlab_file` .mat;
- `resolve`: a predictions file, checkpoint or run folder → what evaluate, calibrate and ood need.
"""

from adacal.sources.documents import check_report, parse_json, read_history, read_json, read_report
from adacal.sources.files import (
    NpzArchive, check_allocation, check_regular_file, memory_budget, open_regular, read_npy, safe_torch_load,
)
from adacal.sources.formats import (
    LABEL_KEYS, SCORE_KEYS, Predictions, ReadOptions, load_predictions, load_scores, load_split_predictions,
    open_arrays, read_arrays,
)
from adacal.sources.resolve import (
    CHECKPOINT_FORMAT, CalibrationInput, EvaluationInput, load_ood_scores, load_validation_split,
    resolve_calibration_input, resolve_checkpoint, resolve_evaluation_input, resolve_ood_inputs,
)

__all__ = [
    "CHECKPOINT_FORMAT", "CalibrationInput", "EvaluationInput", "LABEL_KEYS", "NpzArchive", "Predictions",
    "ReadOptions", "SCORE_KEYS", "check_allocation", "check_regular_file", "check_report", "load_ood_scores",
    "load_predictions", "load_scores", "load_split_predictions", "load_validation_split", "memory_budget",
    "open_arrays", "open_regular", "parse_json", "read_arrays", "read_history", "read_json", "read_npy",
    "read_report", "resolve_calibration_input", "resolve_checkpoint", "resolve_evaluation_input", "resolve_ood_inputs", "safe_torch_load",
]
