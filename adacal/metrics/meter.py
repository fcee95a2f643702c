"""`CalibrationMeter`: every metric of `compute_metrics`, accumulated batch by batch (and across ranks).

What each metric needs, and so what the meter keeps per sample (never the (N, K) matrix):
- top-label binned ECEs (equal-width, equal-mass, debiased, sweeps), MCE, smooth ECE and the error: the top-1
  confidence and whether the prediction was right (equal-mass edges, the sweep and the smooth ECE depend on all
  confidences together, so no fixed-size summary would be exact);
- NLL: log p(true class) per sample; Brier: Σ_k (p_k − 1[y = k])² per sample (only when those metrics are asked for);
- the positive-class metrics of a binary model (brier-positive, ece-positive-ew/-em): P(class 1) and 1[label = 1];
- classwise ECE: a K × n_bins table of Σ p_k and of hits per equal-width bin, which adds up across batches and ranks;
- the selective-prediction metrics (AURC, E-AURC, AUGRC, risk@C, coverage@R, AUROC of correctness): the top-1
  confidence and correctness again, nothing more.
So memory is a few float64 per sample plus K × n_bins, and `compute()` equals `compute_metrics` on all the
batches together (the same per-row arithmetic; sums in another order agree to ~1e-15).

The kind of scores is decided once for the stream, never batch by batch: by `scores_kind` ("logits", "probs"), or in
"auto" by the per-row rule of docs/inputs.md §2 (`adacal.scores_kind.matrix_verdict`) on the row counts of every
batch (on every rank) together, as `compute_metrics` decides it on their concatenation; a stream the rule refuses
is refused at `compute()`, naming the batches. A batch is read when it arrives — as probabilities when every row is
a probability row, else as logits — so a batch of probability rows in a stream of logits (where the rule allows up
to 1 % such rows, by chance) is read again as logits at `compute()`: the meter keeps the scores of such batches,
up to RAW_BUDGET entries in all, and refuses a stream whose batches it can no longer read again (pass
`scores_kind="logits"`); once a row that is not a probability row has been seen, later batches are read as logits
straight away. It never mixes readings silently. A binary model's one score per sample is kept as the scores
themselves (one float64 and the label per sample) and read at `compute()` by the binary rule on every batch (on
every rank) together: probabilities when all lie in [0, 1], decision scores when clearly outside, refused between.

Under torch.distributed (initialised, more than one process) `compute()` gathers the per-sample pieces of every rank
(`all_gather` of variable-length pieces: sizes first, then padded buffers) and sums the classwise tables, so every
rank returns the metrics of the whole dataset. NCCL groups exchange CUDA tensors, other backends CPU tensors.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from adacal.arrays import binary_score_columns, check_labels, one_score_per_sample
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bins_fit
from adacal.metrics.binary import BINARY_METRIC_NAMES, check_binary
from adacal.metrics.binning import bin_index, check_n_bins, equal_width_edges
from adacal.metrics.calibration import (
    PreparedPredictions,
    classwise_error,
    kernel_of,
    metric_key,
    prepare_batch,
    prepare_predictions,
    resolve_metric_names,
)
from adacal.scores_kind import (
    BinaryCounts,
    RowCounts,
    binary_counts,
    binary_values,
    binary_verdict,
    check_scores_kind,
    matrix_verdict,
    refuse_binary_claimed,
    API_WORDS,
)

_KINDS = ("probs", "logits")
_SCORING = ("nll", "brier")
# Scores of batches of probability rows kept (entries in all) to read them again as logits should the stream turn
# out to be logits (see the module doc): 8 MiB of float64.
RAW_BUDGET = 1 << 20
_FIX = "pass CalibrationMeter(scores_kind='logits') if they are logits, or divide each row by its sum"


class _BinaryBatch:
    """A binary model's batch as given: its one score per sample (float64) and labels, read at `compute()`."""

    def __init__(self, scores: np.ndarray, labels: np.ndarray, batch: int) -> None:
        self.scores, self.labels, self.batch = scores, labels, batch

    @property
    def shape(self) -> tuple[int, ...]:
        return (int(self.scores.shape[0]),)


class _Batch:
    """A batch of (B, K) scores as read when it arrived: its per-sample columns, the kind they were read as, the row
    counts of the kind rule, whether its first column is all zeros (K = 2: decision scores [0, s]), and, for a batch
    of probability rows, its scores and labels to read it again as logits (None past RAW_BUDGET)."""

    def __init__(self, columns: np.ndarray, kind: str, counts: RowCounts, zero_first: bool, batch: int,
                 raw: tuple[np.ndarray, np.ndarray] | None) -> None:
        self.columns, self.kind, self.counts, self.zero_first, self.batch, self.raw = (
            columns, kind, counts, zero_first, batch, raw)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.columns.shape


class CalibrationMeter:
    """Streaming calibration metrics: `update(scores, labels)` per batch, `compute()` for the dict of
    `compute_metrics` over everything seen (on every rank under torch.distributed), `reset()` to start again.

    Args:
        n_bins: the number of bins of the binned metrics (default 15).
        names: the metrics, as `resolve_metric_names` takes them (default: all).
        sync: gather across ranks when torch.distributed is initialised with more than one process (default True).
        process_group: the torch.distributed group to gather over (default: the world).
        scores_kind: "auto" (default: decided once for the whole stream by the per-row rule, docs/inputs.md §2),
            "logits" (whatever the values) or "probs" (every row must be a probability row; checked per batch).

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
        scores_kind: str = "auto",
    ) -> None:
        self.n_bins = check_n_bins(n_bins)
        self.names = resolve_metric_names(names)
        if not isinstance(sync, (bool, np.bool_)):
            raise InputError(f"Expected sync to be True or False, got {sync!r:.80}.")
        self.sync = bool(sync)
        self.process_group = process_group
        self.scores_kind = check_scores_kind(scores_kind)
        self.reset()

    def reset(self) -> None:
        """Forget every batch seen."""
        self._pieces: list[_Batch | _BinaryBatch] = []
        self._num_classes: int | None = None
        # Classwise tables of the batches read as probabilities and as logits, kept apart (see the module doc).
        self._classwise: dict[str, np.ndarray | None] = {"probs": None, "logits": None}
        self._raw_entries = 0
        self._batches = 0
        self._seen_other_rows = False  # a row that is not a probability row: the stream cannot be probabilities

    @property
    def n_samples(self) -> int:
        """Samples seen on this rank."""
        return int(sum(piece.shape[0] for piece in self._pieces))

    def _columns(self) -> tuple[str, ...]:
        columns = ["confidences", "correct"]
        columns += [name for name in ("true_log_probs", "brier_terms") if self._wants(name)]
        if self._positive():
            columns += ["positive_probs", "positive_outcomes"]
        return tuple(columns)

    def _wants(self, column: str) -> bool:
        return {"true_log_probs": "nll", "brier_terms": "brier"}[column] in self.names

    def _positive(self) -> bool:
        """Whether a positive-class metric is asked for (it keeps P(class 1) and 1[label = 1] per sample)."""
        return any(name in BINARY_METRIC_NAMES for name in self.names)

    def update(self, scores: Any, labels: Any) -> None:
        """Add a batch.

        Args:
            scores: logits or probabilities (B, K), numpy or torch on any device; or a binary model's (B,) / (B, 1)
                scores (positive-class probabilities or decision scores, decided for the stream at `compute()`).
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
        batch = self._batches
        if one_score_per_sample(scores):  # read at compute(), with every other binary batch (see the module doc)
            flat = binary_values(scores, name=f"the scores of batch {batch}")
            if self.scores_kind == "probs":
                error = refuse_binary_claimed(flat, name=f"the scores of batch {batch}", words=API_WORDS)
                if error is not None:
                    raise error
            self._check_num_classes(2, (flat.size, 2))
            checked = check_labels(labels, n=flat.size, num_classes=2)  # a copy: the caller may refill its buffers
            self._pieces.append(_BinaryBatch(flat.copy(), checked, batch))
            self._batches += 1
            return
        pred = prepare_batch(scores, labels, self.scores_kind)
        self._check_num_classes(pred.num_classes, (pred.n_samples, pred.num_classes))
        counts = pred.row_counts
        kind, raw = pred.assumed, None
        if self.scores_kind == "auto":
            if counts.probability < counts.rows:
                self._seen_other_rows = True
            elif self._seen_other_rows:  # the stream cannot be probabilities any more: read as logits now
                pred = prepare_batch(scores, labels, "logits")
                kind = "logits"
            elif self._raw_entries + pred.scores.size <= RAW_BUDGET:  # to read it again as logits if need be
                raw = (np.array(pred.scores, copy=True), pred.labels.copy())
                self._raw_entries += pred.scores.size
        zero_first = pred.num_classes == 2 and not np.asarray(pred.scores[:, 0]).any()
        self._pieces.append(_Batch(self._columns_of(pred), kind, counts, zero_first, batch, raw))
        self._batches += 1
        if "classwise-ece" in self.names:
            table = _classwise_table(pred, self.n_bins)
            known = self._classwise[kind]
            self._classwise[kind] = table if known is None else known + table

    def _columns_of(self, pred: PreparedPredictions) -> np.ndarray:
        return np.column_stack([getattr(pred, column) for column in self._columns()])

    def _check_num_classes(self, num_classes: int, shape: tuple[int, ...]) -> None:
        if self._num_classes is None:
            if self._positive():  # a binary model's metrics: other K refused at the first batch
                check_binary(num_classes)
            if "classwise-ece" in self.names:  # its K × n_bins table, refused before allocating (as compute_metrics)
                check_bins_fit(self.n_bins, num_classes=num_classes, classwise=True)
            self._num_classes = num_classes
        elif num_classes != self._num_classes:
            raise InputError(
                f"Expected every batch to have {self._num_classes} classes, got a batch of shape "
                f"({shape[0]}, {shape[1]})."
            )

    def _local_counts(self) -> tuple[RowCounts, int, BinaryCounts]:
        """This rank's row counts of the (B, K) batches, how many of them do not have an all-zero first column, and
        the counts of the binary batches' values."""
        counts, not_zero_first, binary = RowCounts(), 0, BinaryCounts()
        for piece in self._pieces:
            if isinstance(piece, _BinaryBatch):
                binary = binary.plus(binary_counts(piece.scores))
            else:
                counts = counts.plus(piece.counts)
                not_zero_first += not piece.zero_first
        return counts, not_zero_first, binary

    def _matrix_kind(self, counts: RowCounts, not_zero_first: int) -> str | None:
        """The stream's kind of (B, K) scores, or None without any; refused where the rule refuses."""
        if not counts.rows:
            return None
        if self.scores_kind != "auto":
            return self.scores_kind
        verdict = matrix_verdict(counts, zero_first_column=self._num_classes == 2 and not not_zero_first)
        if verdict.kind != "refused":
            return verdict.kind
        local = [piece for piece in self._pieces if isinstance(piece, _Batch)]
        other = [piece.batch for piece in local if piece.counts.probability < piece.counts.rows]
        where = f" (not all probability rows: batches {_listed(other)})" if other else ""
        n = counts.rows
        if verdict.rule == "near":
            found = (f"got values in [0, 1] whose rows sum to nearly 1 ({counts.near} of {n} rows), but only "
                     f"{counts.probability} of {n} rows are probability rows{where}")
        elif verdict.rule == "percent":
            found = f"got values in [0, 100] ({counts.percent} of {n} rows), percentages it seems{where}"
        else:
            found = f"{counts.probability} of {n} rows are probabilities and {n - counts.probability} are not{where}"
        raise InputError(f"Expected every batch to hold the same kind of scores, logits or probabilities whose rows "
                         f"sum to 1, {found}: {_FIX}.")

    def _binary_kind(self, counts: BinaryCounts) -> str | None:
        """The stream's kind of one score per sample ("probs" for [1 − p, p], "logits" for [0, s]), or None."""
        if not counts.values:
            return None
        if self.scores_kind != "auto":
            return self.scores_kind
        verdict = binary_verdict(counts)
        if verdict is None:
            raise InputError(
                f"Expected a binary model's scores (one per sample) to lie all in [0, 1] (probabilities) or clearly "
                f"outside it (decision scores), but only {counts.outside} of {counts.values} values lie outside: "
                "pass CalibrationMeter(scores_kind='probs') or scores_kind='logits'."
            )
        return "probs" if verdict else "logits"

    def _read_pieces(self, matrix_kind: str | None,
                     binary_kind: str | None) -> tuple[list[np.ndarray], set[str], np.ndarray | None, list[int]]:
        """The per-sample columns of every batch under the stream's kinds, the kinds read, the classwise table and
        the batches that could not be read again as logits; the meter's own state is unchanged."""
        pieces: list[np.ndarray] = []
        kinds: set[str] = set()
        unreadable: list[int] = []
        classwise = self._classwise.get(matrix_kind) if matrix_kind else None
        tables = []
        # Consecutive binary batches are read in one call (many small batches would cost a call each).
        for is_binary, group in itertools.groupby(self._pieces, key=lambda piece: isinstance(piece, _BinaryBatch)):
            batches = list(group)
            if is_binary:
                scores = np.concatenate([batch.scores for batch in batches])
                columns, _ = binary_score_columns(scores, decision=binary_kind == "logits")
                pred = prepare_predictions(columns, np.concatenate([batch.labels for batch in batches]),
                                           scores_kind=binary_kind)
                kinds.add(pred.assumed)
                pieces.append(self._columns_of(pred))
                if "classwise-ece" in self.names:
                    tables.append(_classwise_table(pred, self.n_bins))
                continue
            for batch in batches:
                if batch.kind == matrix_kind:
                    pieces.append(batch.columns)
                elif batch.raw is None:
                    unreadable.append(batch.batch)
                else:
                    pred = prepare_batch(*batch.raw, "logits")
                    pieces.append(self._columns_of(pred))
                    if "classwise-ece" in self.names:
                        tables.append(_classwise_table(pred, self.n_bins))
            if matrix_kind:
                kinds.add(matrix_kind)
        for table in tables:
            classwise = table if classwise is None else classwise + table
        return pieces, kinds, classwise, unreadable

    def compute(self) -> dict[str, float]:
        """The metrics of every batch seen (on all ranks).

        Returns:
            {report key: value}, as `compute_metrics` returns it on all the batches together.
        """
        columns = self._columns()
        distributed = self.sync and _distributed(self.process_group)
        counts, not_zero_first, binary = self._local_counts()
        if distributed:  # the stream's kinds are decided from every rank's counts together
            total = _sum_ranks([*counts, not_zero_first, *binary], self.process_group)
            counts, not_zero_first, binary = RowCounts(*total[:4]), total[4], BinaryCounts(*total[5:])
        if counts.rows + binary.values == 0:
            raise InputError("Expected at least one sample before compute(), got none: call update() first.")
        matrix_kind, binary_kind = self._matrix_kind(counts, not_zero_first), self._binary_kind(binary)
        pieces, kinds_seen, classwise, unreadable = self._read_pieces(matrix_kind, binary_kind)
        kinds = {_KINDS.index(kind) for kind in kinds_seen}
        num_classes = self._num_classes or 0
        if distributed:
            data = np.concatenate(pieces) if pieces else np.empty((0, len(columns)))
            data, kinds, num_classes, classwise, any_unreadable = _gather(
                data, kinds, num_classes, classwise, self.n_bins, self.process_group, "classwise-ece" in self.names,
                bool(unreadable),
            )
            values = [np.ascontiguousarray(data[:, index]) for index in range(len(columns))]
        else:  # each column straight from the pieces: no (N, columns) copy on the way
            any_unreadable = bool(unreadable)
            values = [np.concatenate([piece[:, index] for piece in pieces]) if pieces else np.empty(0)
                      for index in range(len(columns))]
        if any_unreadable:
            where = f"batches {_listed(unreadable)}" if unreadable else "batches on another rank"
            raise InputError(
                f"Expected the batches of probability rows in a stream of logits to be few enough to read again as "
                f"logits (the meter keeps {RAW_BUDGET} entries of them), but {where} could not be: pass "
                "CalibrationMeter(scores_kind='logits')."
            )
        n_samples = values[0].shape[0] if values else 0
        if len(kinds) > 1:
            raise InputError(
                "Expected every batch to hold the same kind of scores, got a binary model's one score per sample "
                "read as one kind and (B, 2) scores as the other: pass logits (or probabilities) throughout."
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
                results[metric_key(name)] = kernel_of(name)(pred, self.n_bins)
        return results


def _listed(batches: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(batch) for batch in batches[:limit])
    return shown + (f" and {len(batches) - limit} more" if len(batches) > limit else "")


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


def _sum_ranks(values: list[int], group: Any) -> list[int]:
    """The sums of integer counts over the ranks of the group (every rank must call this)."""
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([int(value) for value in values], dtype=torch.int64, device=_group_device(group))
    dist.all_reduce(tensor, group=group)
    return [int(value) for value in tensor.cpu().tolist()]


def _gather(
    data: np.ndarray,
    kinds: set[int],
    num_classes: int,
    classwise: np.ndarray | None,
    n_bins: int,
    group: Any,
    want_classwise: bool,
    unreadable: bool = False,
) -> tuple[np.ndarray, set[int], int, np.ndarray | None, bool]:
    """Every rank's rows (in rank order), kinds, class count, the summed classwise table and whether any rank has
    batches it could not read again (`unreadable`)."""
    import torch
    import torch.distributed as dist

    device = _group_device(group)
    world = dist.get_world_size(group)
    # Header: rows, columns, classes, a bit per kind of scores seen, and whether batches could not be read again.
    header = torch.tensor(
        [data.shape[0], data.shape[1], num_classes, sum(1 << kind for kind in kinds), int(unreadable)],
        dtype=torch.int64, device=device,
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
    return gathered, all_kinds, num_classes, classwise, any(int(h[4]) for h in headers)
