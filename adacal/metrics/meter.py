"""`CalibrationMeter`: every metric of `compute_metrics`, accumulated batch by batch (and across ranks).

What each metric needs, and so what the meter keeps per sample (never the (N, K) matrix):
- top-label binned ECEs (equal-width, equal-mass, debiased, sweeps), MCE, smooth ECE and the error: the top-1
  confidence and whether the prediction was right (equal-mass edges, the sweep and the smooth ECE depend on all
  confidences together, so no fixed-size summary would be exact);
- NLL: log p(true class) per sample; Brier: Σ_k (p_k − 1[y = k])² per sample (only when those metrics are asked for);
- classwise ECE: a K × n_bins table of Σ p_k and of hits per equal-width bin, which adds up across batches and ranks.
So memory is a few float64 per sample plus K × n_bins, and `compute()` equals `compute_metrics` on all the
batches together (the same per-row arithmetic; sums in another order agree to ~1e-15).

Each batch of (B, K) scores decides by itself whether it holds probabilities or logits (as `prepare_predictions`
does); `compute()` refuses a mix, which `compute_metrics` on the concatenation would read differently. A binary
model's one score per sample is different: a batch of decision scores may happen to lie in [0, 1], so those batches
are kept as the scores themselves (one float64 and the label per sample) and read at `compute()` as
`compute_metrics` reads their concatenation: probabilities only when every batch (on every rank) lies in [0, 1].

Under torch.distributed (initialised, more than one process) `compute()` gathers the per-sample pieces of every rank
(`all_gather` of variable-length pieces: sizes first, then padded buffers) and sums the classwise tables, so every
rank returns the metrics of the whole dataset. NCCL groups exchange CUDA tensors, other backends CPU tensors.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from adacal.arrays import binary_score_columns, check_labels, in_unit_interval, one_score_per_sample
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bins_fit
from adacal.metrics.binning import bin_index, check_n_bins, equal_width_edges
from adacal.metrics.calibration import (
    _KERNELS,
    PreparedPredictions,
    check_not_probability_like,
    classwise_error,
    metric_key,
    prepare_predictions,
    resolve_metric_names,
)

_KINDS = ("probs", "logits")
_SCORING = ("nll", "brier")


class _BinaryBatch:
    """A binary model's batch as given: its one score per sample (float64) and labels, read at `compute()`."""

    def __init__(self, scores: np.ndarray, labels: np.ndarray) -> None:
        self.scores, self.labels = scores, labels

    @property
    def shape(self) -> tuple[int, ...]:
        return (int(self.scores.shape[0]),)


class CalibrationMeter:
    """Streaming calibration metrics: `update(scores, labels)` per batch, `compute()` for the dict of
    `compute_metrics` over everything seen (on every rank under torch.distributed), `reset()` to start again.

    Args:
        n_bins: the number of bins of the binned metrics (default 15).
        names: the metrics, as `resolve_metric_names` takes them (default: all).
        sync: gather across ranks when torch.distributed is initialised with more than one process (default True).
        process_group: the torch.distributed group to gather over (default: the world).

    Example:
        >>> from adacal.metrics import CalibrationMeter
        >>> meter = CalibrationMeter(names=["error", "brier"])
        >>> meter.update([[0.9, 0.1], [0.9, 0.1]], [0, 1])  # numpy arrays or torch tensors on any device
        >>> meter.update([[0.2, 0.8], [0.2, 0.8]], [1, 1])
        >>> {key: round(value, 4) for key, value in meter.compute().items()}  # as compute_metrics on all 4 rows
        {'error': 0.25, 'brier': 0.45}
    """

    def __init__(
        self,
        *,
        n_bins: int = DEFAULT_N_BINS,
        names: str | Iterable[str] | None = None,
        sync: bool = True,
        process_group: Any = None,
    ) -> None:
        self.n_bins = check_n_bins(n_bins)
        self.names = resolve_metric_names(names)
        if not isinstance(sync, (bool, np.bool_)):
            raise InputError(f"Expected sync to be True or False, got {sync!r:.80}.")
        self.sync = bool(sync)
        self.process_group = process_group
        self.reset()

    def reset(self) -> None:
        """Forget every batch seen."""
        self._pieces: list[np.ndarray | _BinaryBatch] = []
        self._num_classes: int | None = None
        self._kinds: set[str] = set()
        self._classwise: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        """Samples seen on this rank."""
        return int(sum(piece.shape[0] for piece in self._pieces))

    def _columns(self) -> tuple[str, ...]:
        columns = ["confidences", "correct"]
        columns += [name for name in ("true_log_probs", "brier_terms") if self._wants(name)]
        return tuple(columns)

    def _wants(self, column: str) -> bool:
        return {"true_log_probs": "nll", "brier_terms": "brier"}[column] in self.names

    def update(self, scores: Any, labels: Any) -> None:
        """Add a batch.

        Args:
            scores: logits or probabilities (B, K), numpy or torch on any device; or a binary model's (B,) / (B, 1)
                scores, probabilities of the positive class when all in [0, 1], else decision scores.
            labels: class indices (B,). An empty batch (B = 0) adds nothing.
        """
        shape = _shape(scores)
        if shape == (0,):  # no samples, and no class count: any later batch may set it
            check_labels(labels, n=0)
            return
        # A binary model's one score per sample counts as two classes (`prepare_predictions` reads it so).
        classes = 2 if one_score_per_sample(scores) else (int(shape[1]) if len(shape) == 2 else 0)
        if len(shape) == 2 and shape[0] == 0 and classes >= 2:
            check_labels(labels, n=0)
            self._check_num_classes(classes, (0, classes))
            return
        pred = check_not_probability_like(prepare_predictions(scores, labels))
        self._check_num_classes(pred.num_classes, (pred.n_samples, pred.num_classes))
        if one_score_per_sample(scores):  # read at compute(), with every other binary batch (see the module doc)
            # Copies: the caller may refill its buffers for the next batch.
            self._pieces.append(_BinaryBatch(binary_score_columns(scores)[0][:, 1].copy(), pred.labels.copy()))
            return
        self._kinds.add(pred.assumed)
        self._pieces.append(np.column_stack([getattr(pred, column) for column in self._columns()]))
        if "classwise-ece" in self.names:
            table = _classwise_table(pred, self.n_bins)
            self._classwise = table if self._classwise is None else self._classwise + table

    def _check_num_classes(self, num_classes: int, shape: tuple[int, ...]) -> None:
        if self._num_classes is None:
            if "classwise-ece" in self.names:  # its K × n_bins table, refused before allocating (as compute_metrics)
                check_bins_fit(self.n_bins, num_classes=num_classes, classwise=True)
            self._num_classes = num_classes
        elif num_classes != self._num_classes:
            raise InputError(
                f"Expected every batch to have {self._num_classes} classes, got a batch of shape "
                f"({shape[0]}, {shape[1]})."
            )

    def _read_pieces(self, decision: bool) -> tuple[list[np.ndarray], set[str], np.ndarray | None]:
        """The per-sample columns of every batch, binary batches read as decision scores when `decision` (else as
        probabilities), with the kinds of scores seen and the classwise table; the meter's own state is unchanged."""
        pieces, kinds, classwise = [], set(self._kinds), self._classwise
        # Consecutive binary batches are read in one call (many small batches would cost a call each).
        for is_binary, group in itertools.groupby(self._pieces, key=lambda piece: isinstance(piece, _BinaryBatch)):
            if not is_binary:
                pieces.extend(group)
                continue
            batches = list(group)
            scores = np.concatenate([batch.scores for batch in batches])
            columns, _ = binary_score_columns(scores, decision=decision)
            pred = prepare_predictions(columns, np.concatenate([batch.labels for batch in batches]))
            kinds.add(pred.assumed)
            pieces.append(np.column_stack([getattr(pred, column) for column in self._columns()]))
            if "classwise-ece" in self.names:
                table = _classwise_table(pred, self.n_bins)
                classwise = table if classwise is None else classwise + table
        return pieces, kinds, classwise

    def compute(self) -> dict[str, float]:
        """The metrics of every batch seen (on all ranks).

        Returns:
            {report key: value}, as `compute_metrics` returns it on all the batches together.
        """
        columns = self._columns()
        distributed = self.sync and _distributed(self.process_group)
        # A binary model's scores are decision scores when any batch, on any rank, lies outside [0, 1].
        decision = any(isinstance(piece, _BinaryBatch) and not in_unit_interval(piece.scores)
                       for piece in self._pieces)
        if distributed:
            decision = _any_rank(decision, self.process_group)
        pieces, kinds_seen, classwise = self._read_pieces(decision)
        kinds = {_KINDS.index(kind) for kind in kinds_seen}
        num_classes = self._num_classes or 0
        if distributed:
            data = np.concatenate(pieces) if pieces else np.empty((0, len(columns)))
            data, kinds, num_classes, classwise = _gather(
                data, kinds, num_classes, classwise, self.n_bins, self.process_group, "classwise-ece" in self.names
            )
            values = [np.ascontiguousarray(data[:, index]) for index in range(len(columns))]
        else:  # each column straight from the pieces: no (N, columns) copy on the way
            values = [np.concatenate([piece[:, index] for piece in pieces]) if pieces else np.empty(0)
                      for index in range(len(columns))]
        n_samples = values[0].shape[0] if values else 0
        if n_samples == 0:
            raise InputError("Expected at least one sample before compute(), got none: call update() first.")
        if len(kinds) > 1:
            raise InputError(
                "Expected every batch to hold the same kind of scores, got some taken as probabilities and some as "
                "logits: pass logits (or probabilities) throughout."
            )
        assumed = _KINDS[next(iter(kinds))]
        pred = PreparedPredictions(None, np.zeros(n_samples, dtype=np.int64), assumed)
        for column, value in zip(columns, values):
            pred._cache[column] = value
        results = {}
        for name in self.names:
            if name == "classwise-ece":
                conf_sum, hit_sum = classwise  # type: ignore[misc]
                results[metric_key(name)] = classwise_error(conf_sum, hit_sum, n_samples, num_classes)
            else:
                results[metric_key(name)] = _KERNELS[name](pred, self.n_bins)
        return results


def _shape(scores: Any) -> tuple[int, ...]:
    """The shape of an array, a tensor or nested lists (an empty list is an empty batch too); () when it has none
    (ragged lists: `prepare_predictions` then says what is wrong)."""
    if hasattr(scores, "shape"):
        return tuple(int(size) for size in scores.shape)
    try:
        return tuple(np.shape(scores))
    except ValueError:
        return ()


def _classwise_table(pred: PreparedPredictions, n_bins: int) -> np.ndarray:
    """(2, K · n_bins): Σ p_k and hit counts per (class, equal-width bin), as adacal.metrics.ece._classwise_ece
    sums them."""
    k = pred.num_classes
    edges = equal_width_edges(n_bins)
    table = np.zeros((2, k * n_bins))
    offsets = np.arange(k) * n_bins
    for rows, probs, _, _ in pred.blocks():
        flat = probs.ravel()
        cells = bin_index(flat, edges).reshape(probs.shape) + offsets
        table[0] += np.bincount(cells.ravel(), weights=flat, minlength=k * n_bins)
        table[1] += np.bincount(cells[np.arange(probs.shape[0]), pred.labels[rows]], minlength=k * n_bins)
    return table


def _distributed(group: Any) -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def _group_device(group: Any) -> Any:
    """Where the group's collectives exchange tensors: the current CUDA device for NCCL, else the CPU."""
    import torch
    import torch.distributed as dist

    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _any_rank(flag: bool, group: Any) -> bool:
    """Whether `flag` holds on any rank of the group (every rank must call this)."""
    import torch
    import torch.distributed as dist

    value = torch.tensor([int(flag)], dtype=torch.int64, device=_group_device(group))
    dist.all_reduce(value, op=dist.ReduceOp.MAX, group=group)
    return bool(value.item())


def _gather(
    data: np.ndarray,
    kinds: set[int],
    num_classes: int,
    classwise: np.ndarray | None,
    n_bins: int,
    group: Any,
    want_classwise: bool,
) -> tuple[np.ndarray, set[int], int, np.ndarray | None]:
    """Every rank's rows (in rank order), kinds, class count and the summed classwise table."""
    import torch
    import torch.distributed as dist

    device = _group_device(group)
    world = dist.get_world_size(group)
    # Header: rows, columns, classes, and a bit per kind of scores seen.
    header = torch.tensor(
        [data.shape[0], data.shape[1], num_classes, sum(1 << kind for kind in kinds)], dtype=torch.int64, device=device
    )
    headers = [torch.zeros_like(header) for _ in range(world)]
    dist.all_gather(headers, header, group=group)
    rows = [int(h[0]) for h in headers]
    classes = {int(h[2]) for h in headers if int(h[0]) > 0}
    if len(classes) > 1:
        raise InputError(f"Expected every rank to see the same number of classes, got {sorted(classes)}.")
    all_kinds = {kind for h in headers for kind in range(len(_KINDS)) if int(h[3]) >> kind & 1}
    padded = torch.zeros((max(rows), data.shape[1]), dtype=torch.float64, device=device)
    padded[: data.shape[0]] = torch.from_numpy(data).to(device)
    pieces = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(pieces, padded, group=group)
    gathered = np.concatenate([piece[:count].cpu().numpy() for piece, count in zip(pieces, rows)])
    num_classes = classes.pop() if classes else num_classes
    if want_classwise:  # every rank asks for the same metrics, so every rank joins this all_reduce
        if classwise is None:
            classwise = np.zeros((2, num_classes * n_bins))
        table = torch.from_numpy(np.ascontiguousarray(classwise)).to(device)
        dist.all_reduce(table, group=group)
        classwise = table.cpu().numpy()
    return gathered, all_kinds, num_classes, classwise
