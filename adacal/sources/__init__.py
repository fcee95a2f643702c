"""The one place where a path a user typed becomes bytes and named arrays: predictions files of any framework,
checkpoints, reports, calibrator files, config.json and history.jsonl. What the arrays mean is decided above, in
`adacal.interpretation`.

- `files`: only regular files are opened (never a FIFO or device), declared sizes are checked against memory first;
- `documents`: JSON parsed with limits and validated against its schema; `read_history`;
- `formats`: predictions files as named raw arrays (.npz/.pt/.npy/.safetensors/.mat and the text formats);
  `text_tables` reads the text formats, `torch_file` a .pt file's structures, `safetensors_file` .safetensors,
  `matlab_file` .mat.
"""

from adacal.sources.documents import check_report, parse_json, read_history, read_json, read_report
from adacal.sources.files import (
    NpzArchive, check_allocation, check_regular_file, memory_budget, open_regular, read_npy, safe_torch_load,
)
from adacal.sources.formats import LABEL_KEYS, SCORE_KEYS, ReadOptions, open_arrays, read_arrays

__all__ = [
    "LABEL_KEYS", "NpzArchive", "ReadOptions", "SCORE_KEYS", "check_allocation", "check_regular_file",
    "check_report", "memory_budget", "open_arrays", "open_regular", "parse_json", "read_arrays", "read_history",
    "read_json", "read_npy", "read_report", "safe_torch_load",
]
