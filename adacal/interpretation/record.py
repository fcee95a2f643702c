"""The result of reading a predictions file: the validated `Predictions` and the `Interpretation` record saying how
they were read — file, keys, split, kind of scores and the rule that decided it, N, K, rows renormalised. Every
command puts the record in its report under `results.input` and prints it as one `Note:` line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Interpretation:
    """How one set of predictions was read (docs/inputs.md gives the rules)."""

    file: str
    format: str  # npz, pt, npy, txt, csv, json, jsonl, safetensors, mat; "model" for a checkpoint's outputs
    scores_key: str | None  # None when the file holds one array without a key (.npy, .txt, a CSV's score columns)
    labels_key: str | None
    labels_file: str | None
    split: str  # "test", "val", or "whole file" (a file without split keys)
    kind: str  # probabilities, logits, binary probabilities, binary decision scores, top-label confidences
    kind_rule: str
    n: int
    k: int | None  # None for top-label confidences: no class columns
    renormalized_rows: int = 0
    dropped_rows: int = 0
    notes: tuple[str, ...] = ()

    @property
    def scores_kind(self) -> str:
        """"probs" or "logits": the kind as `scores_kind=` takes it (the calibrators, `adacal.scores_kind`), so a
        command passes the reader's decision on instead of making it again."""
        return "probs" if self.kind in ("probabilities", "binary probabilities") else "logits"

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON, for a report's `results.input`."""
        return {
            "file": self.file, "format": self.format, "scores_key": self.scores_key, "labels_key": self.labels_key,
            "labels_file": self.labels_file, "split": self.split, "kind": self.kind, "kind_rule": self.kind_rule,
            "n": self.n, "k": self.k, "renormalized_rows": self.renormalized_rows, "dropped_rows": self.dropped_rows,
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line: "preds.npz [probs, labels; whole file]: 500 x 10 probabilities (every row ... sums to 1)"."""
        keys = ", ".join(key for key in (self.scores_key, self.labels_key) if key)
        if self.labels_file:
            keys = ", ".join(filter(None, (keys, f"labels from {self.labels_file}")))
        where = f" [{keys}; {self.split}]" if keys else f" [{self.split}]"
        extra = f"; {self.renormalized_rows} rows renormalised" if self.renormalized_rows else ""
        extra += f"; {self.dropped_rows} rows dropped" if self.dropped_rows else ""
        size = f"{self.n}" if self.k is None else f"{self.n} x {self.k}"
        return f"read {self.file}{where}: {size} {self.kind} ({self.kind_rule}{extra})"


@dataclass(frozen=True)
class Predictions:
    """Validated scores (N, K) — logits or probabilities — and integer labels (N,); `notes` say what was assumed
    or converted on the way in (binary scores, renormalised rows, class names), for reports and the terminal;
    `interpretation` says how a file was read (None for arrays made in memory)."""

    logits: np.ndarray
    labels: np.ndarray
    notes: tuple[str, ...] = field(default=(), compare=False)
    # The names of the score columns, in order, when the file gives them (a `classes` array, a CSV header).
    classes: tuple[str, ...] | None = field(default=None, compare=False)
    interpretation: Interpretation | None = field(default=None, compare=False)
    # Per-sample group names by grouping key ("task", "subject", a column the user named), each an (N,) array of
    # str, for `--group-by`; None when the input names no groups.
    groups: dict[str, np.ndarray] | None = field(default=None, compare=False)

    @property
    def num_classes(self) -> int:
        return int(self.logits.shape[1])

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def model_interpretation(file: str, split: str, n: int, k: int) -> Interpretation:
    """The record of predictions made by running a checkpoint's model: logits by construction."""
    return Interpretation(file=file, format="model", scores_key=None, labels_key=None, labels_file=None,
                          split=split, kind="logits", kind_rule="the model's outputs", n=n, k=k)


def reading_lines(*records: Interpretation | None, names: tuple[str, ...] = ()) -> list[str]:
    """One line per record, for the `Note:` lines a command prints (`names`: "val", "test", ... before each)."""
    lines = []
    for index, record in enumerate(records):
        if record is not None:
            prefix = f"{names[index]}: " if index < len(names) else ""
            lines.append(prefix + record.summary())
    return lines
