"""The quality benchmarks' per-run result files: where they go, how they are read and written, and committed.

A result file is one small JSON, `<runs_dir>/<loss>-<arm>-seed<k>.json`. A run that updated AdaFocal's γ every few
batches (the reference schedule: ~2,000 updates of 76 numbers each) would make it megabytes, most of the tree a GPU
slice carries. Its updates then go beside it, gzip'd, into `<loss>-<arm>-seed<k>.updates.json.gz`; the JSON keeps the
last update of each epoch (what the per-epoch figures and the per-bin tables read) and names the side file with its
SHA-256. `read_result` puts the full updates back, so every reader sees the entry as it was written.

A run's validation and test logits and labels can go beside its result too, `<loss>-<arm>-seed<k>.predictions.npz`
(`--keep-predictions`), so that analyses asked later (conformal set sizes, selective prediction) read the very
predictions the table was computed from, without the run folder or a retrained model. They are kept as float16
logits minus each row's maximum (~0.25 MB a CIFAR-10 run, half of float32): softmax does not see the shift, the top
logit is exactly 0 so the predicted class and near ties survive, and probabilities move by ~1e-4 at most. Only the
runs a committed analysis reads keep them: every run's would outgrow the 64 MiB a GPU slice carries with the tree.
A run retrained only for its predictions (`--recover-predictions`: the result was committed before predictions
were kept) leaves its result file as committed; `<...>.predictions.json` beside the predictions then holds the
figures they give and whether they reproduce the result's (on another machine or another adacal, a retrained run
is another draw of the same cell).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULT_SCHEMA = "adacal-quality-run/1"
SIDE_SUFFIX = ".updates.json.gz"
PREDICTIONS_SUFFIX = ".predictions.npz"
PREDICTIONS_RECORD_SUFFIX = ".predictions.json"
PREDICTIONS_RECORD_SCHEMA = "adacal-quality-predictions/1"
PREDICTION_SPLITS = ("val", "test")
# Above this many bytes of γ-updates (compact JSON) an entry's updates go to the side file; one update an epoch for
# 30 epochs is ~80 kB and stays inline.
INLINE_UPDATES_LIMIT = 256 * 1024


def result_path(runs_dir: Path, name: str, arm: str, seed: int) -> Path:
    return Path(runs_dir) / f"{name}-{arm}-seed{seed}.json"


def side_path(path: Path) -> Path:
    """The side file of the result file `path` (…-seed0.json → …-seed0.updates.json.gz)."""
    path = Path(path)
    return path.with_name(path.name.removesuffix(".json") + SIDE_SUFFIX)


def read_result(path: Path, key: str | None = None) -> dict[str, Any] | None:
    """The result file at `path` if it is one and (when `key` is given) holds that key, else None; with its γ-updates
    read back from its side file when it has one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
        return None
    if key is not None and data.get("key") != key:
        return None
    if isinstance(data.get("history_updates"), dict):
        _restore_updates(Path(path), data)
    return data


def write_result(path: Path, entry: dict[str, Any]) -> Path:
    """Write `entry` to `path` atomically; γ-updates over `INLINE_UPDATES_LIMIT` go to the side file first."""
    from adacal.reports import to_jsonable, write_json
    from adacal.writing import write_file

    path, entry = Path(path), to_jsonable(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    updates = [((record.get("adafocal") or {}).get("updates") or []) for record in entry.get("history") or []]
    text = json.dumps(updates, separators=(",", ":"), allow_nan=False)
    side = side_path(path)
    if len(text) <= INLINE_UPDATES_LIMIT:
        side.unlink(missing_ok=True)
        return write_json(path, entry)
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    write_file(side, lambda handle: handle.write(packed), binary=True)
    history = []
    for record, epoch_updates in zip(entry["history"], updates):
        record = dict(record)
        if epoch_updates:
            record["adafocal"] = {**record["adafocal"], "updates": epoch_updates[-1:]}
        history.append(record)
    trimmed = {**entry, "history": history, "history_updates": {
        "file": side.name, "sha256": hashlib.sha256(packed).hexdigest(),
        "updates_per_epoch": [len(u) for u in updates],
        "note": "every γ-update of each epoch is in the side file (a JSON list per epoch, gzip'd); the history here "
                "keeps each epoch's last update"}}
    return write_json(path, trimmed)


def _restore_updates(path: Path, data: dict[str, Any]) -> None:
    """Replace each epoch's kept update by all of them, from the side file named in `history_updates` (checked by its
    hash). A missing or altered side file leaves the entry with one update an epoch and says so in the block."""
    block = data["history_updates"]
    side = path.with_name(str(block.get("file")))
    try:
        packed = side.read_bytes()
        if hashlib.sha256(packed).hexdigest() != block.get("sha256"):
            raise ValueError("hash mismatch")
        updates = json.loads(gzip.decompress(packed))
        if len(updates) != len(data.get("history") or []):
            raise ValueError("epoch count mismatch")
    except (OSError, ValueError, EOFError) as error:
        block["restored"] = False
        block["error"] = f"{side.name}: {error}"
        return
    for record, epoch_updates in zip(data["history"], updates):
        if epoch_updates:
            record["adafocal"] = {**(record.get("adafocal") or {}), "updates": epoch_updates}
    del data["history_updates"]


def predictions_path(path: Path) -> Path:
    """The predictions kept beside the result file `path` (…-seed0.json → …-seed0.predictions.npz)."""
    path = Path(path)
    return path.with_name(path.name.removesuffix(".json") + PREDICTIONS_SUFFIX)


def predictions_record_path(path: Path) -> Path:
    """The record of retrained predictions beside the result file `path` (…-seed0.json → …-seed0.predictions.json)."""
    path = Path(path)
    return path.with_name(path.name.removesuffix(".json") + PREDICTIONS_RECORD_SUFFIX)


def write_predictions_record(path: Path, record: dict[str, Any]) -> Path:
    """Write the record of the predictions beside the result file `path`, atomically."""
    from adacal.reports import to_jsonable, write_json

    return write_json(predictions_record_path(path), to_jsonable({"schema": PREDICTIONS_RECORD_SCHEMA, **record}))


def read_predictions_record(path: Path) -> dict[str, Any] | None:
    """The record beside the result file `path`, or None when there is none (its predictions are the result's)."""
    try:
        data = json.loads(predictions_record_path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == PREDICTIONS_RECORD_SCHEMA else None


def keep_predictions(run_dir: Path, path: Path) -> Path:
    """Copy the validation and test logits and labels of the run folder `run_dir` beside the result file `path`,
    compressed and atomically (the run's identity key goes along, so `adacal` knows the file as that run's)."""
    import numpy as np

    from adacal.writing import write_file

    with np.load(Path(run_dir) / "predictions.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files
                  if name.split("_")[0] in PREDICTION_SPLITS or not name.endswith(("_logits", "_labels"))}
    missing = [f"{split}_{kind}" for split in PREDICTION_SPLITS for kind in ("logits", "labels")
               if f"{split}_{kind}" not in arrays]
    if missing:
        raise ValueError(f"{run_dir}/predictions.npz lacks {', '.join(missing)}")
    for split in PREDICTION_SPLITS:
        arrays[f"{split}_logits"] = compact_logits(arrays[f"{split}_logits"])
    target = predictions_path(path)
    return write_file(target, lambda handle: np.savez_compressed(handle, **arrays), binary=True)


def compact_logits(logits: Any) -> Any:
    """float16 logits minus each row's maximum: the same softmax, the top logit exactly 0 (so the argmax and near
    ties are kept: float16 is finest near 0), the others to ~3 significant digits."""
    import numpy as np

    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    # float16 ends at -65504: a class that far below the top has probability 0 either way.
    return np.maximum(shifted, -6e4).astype(np.float16)


def result_files(path: Path) -> list[Path]:
    """The result file `path` and its side files when it has them (γ-updates, predictions): what a commit or a
    transfer takes along."""
    sides = [side_path(path), predictions_path(path), predictions_record_path(path)]
    return [Path(path)] + [side for side in sides if side.is_file()]


def commit_file(path: Path, message: str, *, attempts: int = 20) -> bool:
    """`git add` + `git commit` of this one file (and its side file, if any) in the repository holding it (retried
    while another process holds the index lock). Returns whether a commit was made; never pushes."""
    path = Path(path).resolve()
    names = [p.name for p in result_files(path)]
    for attempt in range(attempts):
        add = subprocess.run(["git", "-C", str(path.parent), "add", "--", *names], capture_output=True, text=True)
        commit = None
        if add.returncode == 0:
            commit = subprocess.run(["git", "-C", str(path.parent), "commit", "-q", "-m", message, "--", *names],
                                    capture_output=True, text=True)
            if commit.returncode == 0:
                return True
            if "nothing to commit" in (commit.stdout + commit.stderr) or "no changes added" in commit.stdout:
                return False
        error = (commit or add).stderr
        if "index.lock" not in error:
            print(f"  warning: could not commit {path}: {error.strip()}", file=sys.stderr, flush=True)
            return False
        time.sleep(0.5 + 0.25 * attempt)
    print(f"  warning: could not commit {path}: the git index stayed locked", file=sys.stderr, flush=True)
    return False
