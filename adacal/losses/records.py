"""Typed records of the losses that learn from validation (CalFocal, AdaFocal, CALS), as history.jsonl stores them.

`BinUpdate` is one update (edges, γ after it, C_val, A_val, counts per validation bin); `TrainBinStatistics` is the
paper's C_train (mean true-class probability and count of the training samples per validation bin since the last
read) with `merge` to add up the ranks of a distributed run; `BinnedLossEpoch` is one epoch's section of a history
line ({"updates": [...], "train_confidence": [...], "train_counts": [...]}). `MultiplierUpdate` is one update of a
loss with per-class multipliers (CALS: λ, ρ and the mean constraint per class); a loss names its kind in its
`record_type` attribute, and `update_record_from_dict` reads either kind back by its keys.

`to_dict()` gives exactly the JSON-ready mapping history.jsonl holds, `from_dict()` reads one back. The records are
also read-only mappings with those keys (`record["gammas"]`), so code and files that index them by name keep working.
Values stay as stored (floats, or None where JSON holds null for a non-finite value); this module needs no torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
import math
from typing import Any

import numpy as np

UPDATES_KEY = "updates"


def _values(values: Any) -> tuple:
    """A tuple of plain Python numbers, JSON-ready: numpy or torch scalars become int / float, and a NaN or Inf
    becomes None (JSON's null), as history.jsonl stores it."""
    if hasattr(values, "tolist"):  # numpy arrays and torch tensors
        values = values.tolist()
    return tuple(_plain(value) for value in values)


def _plain(value: Any) -> Any:
    if type(value) not in (int, float) and hasattr(value, "item"):  # numpy (np.float64 too) / torch scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class _Record(Mapping):
    """Mapping view of a frozen dataclass: its field names are the keys, in declaration order."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        value = getattr(self, key)
        return list(value) if isinstance(value, tuple) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __post_init__(self) -> None:
        # However a record is built, its fields hold plain JSON-ready tuples (see `_values`).
        for key in self._keys():
            value = getattr(self, key)
            if value is not None:
                object.__setattr__(self, key, _values(value))

    @classmethod
    def _keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready mapping (lists, not tuples) history.jsonl stores."""
        return {key: self[key] for key in self._keys()}


@dataclass(frozen=True, eq=False)
class BinUpdate(_Record):
    """One update of a validation-binned loss: `edges` (M + 1), and per bin `gammas` (None when the loss has no
    per-bin γ, CalFocal's mode "sample"), `val_confidence` (C_val), `val_accuracy` (A_val) and `counts`."""

    edges: tuple[float, ...]
    gammas: tuple[float, ...] | None
    val_confidence: tuple[float, ...]
    val_accuracy: tuple[float, ...]
    counts: tuple[int, ...]

    @classmethod
    def from_statistics(cls, stats: Any, gammas: Any | None) -> BinUpdate:
        """The record of `adacal.metrics.binning.BinStatistics` (equal-mass validation bins) and the γ after it."""
        return cls(
            edges=_values(stats.edges),
            gammas=None if gammas is None else _values(gammas),
            val_confidence=_values(stats.mean_confidence),
            val_accuracy=_values(stats.accuracy),
            counts=_values(stats.counts),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BinUpdate:
        """Read a record back from its mapping; a missing key raises KeyError naming it."""
        gammas = data["gammas"]
        return cls(
            edges=_values(data["edges"]),
            gammas=None if gammas is None else _values(gammas),
            val_confidence=_values(data["val_confidence"]),
            val_accuracy=_values(data["val_accuracy"]),
            counts=_values(data["counts"]),
        )


@dataclass(frozen=True, eq=False)
class MultiplierUpdate(_Record):
    """One update of a loss with per-class Lagrange multipliers (CALS): per class, `multipliers` (λ after the
    update), `rho` (the penalty parameter ρ after it) and `val_constraints` (the mean over the validation samples of
    the normalised constraint h_j = (max_k z_k − z_j − m) / m, ≤ 0 where satisfied).

    Example:
        >>> from adacal.losses.records import MultiplierUpdate
        >>> record = MultiplierUpdate(multipliers=[0.5, 1e-6], rho=[1.0, 1.2], val_constraints=[0.1, -0.4])
        >>> record["multipliers"], MultiplierUpdate.from_dict(record.to_dict()).rho
        ([0.5, 1e-06], (1.0, 1.2))
    """

    multipliers: tuple[float, ...]
    rho: tuple[float, ...]
    val_constraints: tuple[float, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MultiplierUpdate:
        """Read a record back from its mapping; a missing key raises KeyError naming it."""
        return cls(multipliers=_values(data["multipliers"]), rho=_values(data["rho"]),
                   val_constraints=_values(data["val_constraints"]))


UpdateRecord = BinUpdate | MultiplierUpdate


def update_record_from_dict(data: Mapping[str, Any]) -> UpdateRecord:
    """One update record read back from history.jsonl or a checkpoint: a `MultiplierUpdate` when it holds
    "multipliers", else a `BinUpdate` (a missing key raises KeyError naming it).

    Example:
        >>> from adacal.losses.records import update_record_from_dict
        >>> type(update_record_from_dict({"multipliers": [1.0], "rho": [1.0], "val_constraints": [0.0]})).__name__
        'MultiplierUpdate'
    """
    if isinstance(data, (BinUpdate, MultiplierUpdate)):
        return data
    return MultiplierUpdate.from_dict(data) if "multipliers" in data else BinUpdate.from_dict(data)


@dataclass(frozen=True, eq=False)
class TrainBinStatistics(_Record):
    """C_train: mean true-class probability of the training samples per validation bin (0 for an empty bin) and
    how many fell in each bin."""

    train_confidence: tuple[float, ...]
    train_counts: tuple[int, ...]

    @classmethod
    def from_sums(cls, sums: np.ndarray, counts: np.ndarray) -> TrainBinStatistics:
        """From per-bin sums of true-class probabilities and counts (float64 arrays)."""
        means = np.where(counts > 0, sums / np.maximum(counts, 1.0), 0.0)
        return cls(train_confidence=_values(means), train_counts=_values(counts.astype(np.int64)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainBinStatistics:
        return cls(train_confidence=_values(data["train_confidence"]), train_counts=_values(data["train_counts"]))

    @classmethod
    def merge(cls, parts: Sequence[TrainBinStatistics | Mapping[str, Any]]) -> TrainBinStatistics:
        """One record for samples seen by several ranks: counts add up, mean confidences are count-weighted."""
        if not parts:
            raise ValueError("Expected at least one record to merge, got none.")
        parts = [p if isinstance(p, TrainBinStatistics) else cls.from_dict(p) for p in parts]
        counts = np.sum([np.asarray(p.train_counts, dtype=np.float64) for p in parts], axis=0)
        sums = np.sum(
            [np.asarray(p.train_confidence, dtype=np.float64) * np.asarray(p.train_counts, dtype=np.float64)
             for p in parts], axis=0
        )
        confidence = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
        return cls(train_confidence=_values(confidence), train_counts=tuple(int(c) for c in counts))


@dataclass(frozen=True)
class BinnedLossEpoch:
    """One epoch's section of a history line for a loss that learns from validation: its updates (`BinUpdate`s, or
    a CALS loss's `MultiplierUpdate`s) and, for a loss that tracks them (AdaFocal), the epoch's C_train."""

    updates: tuple[UpdateRecord, ...]
    train: TrainBinStatistics | None = None

    def to_dict(self) -> dict[str, Any]:
        section: dict[str, Any] = {UPDATES_KEY: [u.to_dict() for u in self.updates]}
        if self.train is not None:
            section.update(self.train.to_dict())
        return section

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BinnedLossEpoch:
        """Read a section back; `train` is None when it holds no train_confidence (null or absent)."""
        train = None
        if data.get("train_confidence") is not None and data.get("train_counts") is not None:
            train = TrainBinStatistics.from_dict(data)
        return cls(updates=tuple(update_record_from_dict(u) for u in data.get(UPDATES_KEY) or []), train=train)
