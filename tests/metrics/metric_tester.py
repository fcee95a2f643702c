"""One harness for every comparison of an adacal metric with a reference implementation, after torchmetrics'
`tests/unittests/_helpers/testers.py`.

A `Reference` pairs a metric (its registry name, plus options such as `mode="marginal"`) with an independent
implementation: a slow loop from slow_metrics.py, or a published package (uncertainty-calibration, relplot,
scikit-learn; torchmetrics and netcal when installed). A `Case` is a set of predictions (probabilities, and the logits
they came from where there are any) with the bin counts to try. `MetricTester` runs the metric over every `Variant`
of a case — float64 and float32, probabilities and logits, numpy arrays and torch tensors — and, for the streaming
test, `CalibrationMeter` updates over uneven chunks against the batch function, and asserts agreement to the stated
tolerance. OOD detection metrics (AUROC, AUPRs, FPR at 95 % TPR) go the same way over an `OodCase` (in- and
out-of-distribution score vectors) in float64 and float32, numpy and torch.

The cases, variants and references are tables: a new reference is one `Reference(...)` line in
metric_references.py, a new kind of input one `Case` in `_cases()`.

The reference always sees the float64 probabilities that the variant's scores stand for: the softmax of the
(possibly float32-rounded) logits, the float64 probabilities as given, or float32-rounded probabilities divided by
their row sums. So a float32 variant is compared with the reference on the same numbers, and the only difference left
is adacal's own arithmetic.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy

from adacal.metrics import METRICS, CalibrationMeter, fpr_at_tpr, metric_key, ood_metrics

# ------------------------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Case:
    """Predictions to compare on: float64 `probs` (N, K), `labels` (N,), the float64 `logits` they are the softmax of
    (None for probabilities built directly), and the bin counts to try with binned metrics."""

    name: str
    probs: np.ndarray
    labels: np.ndarray
    logits: np.ndarray | None = None
    n_bins: tuple[int, ...] = (15,)

    def __repr__(self) -> str:
        return self.name

    @property
    def num_classes(self) -> int:
        return self.probs.shape[1]

    @cached_property
    def exact_values(self) -> np.ndarray:
        """Every probability that lies exactly on a bin edge for some n ≤ 200 (k/n, 0 and 1 included): where the
        (lower, upper] and [lower, upper) conventions part."""
        values = np.unique(self.probs)
        on_edge = np.zeros(values.shape, dtype=bool)
        for n in range(1, 201):
            on_edge |= np.isclose(values * n, np.round(values * n), rtol=0, atol=1e-9)
        return values[on_edge]

    @property
    def has_values_on_edges(self) -> bool:
        return self.exact_values.size > 0

    @property
    def has_zero_at_label(self) -> bool:
        return bool((self.probs[np.arange(self.labels.size), self.labels] == 0).any())


def make_logits(n, k, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * scale
    labels = rng.integers(0, k, size=n)
    # Make the model better than chance so bins see both hits and misses.
    hit = rng.random(n) < 0.6
    logits[hit, labels[hit]] += 2.0
    return logits, labels


def calibrated_sample(n, k, seed):
    """Probabilities from a Dirichlet, labels drawn from them: a perfectly calibrated model."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.3), size=n)
    cumulative = probs.cumsum(axis=1)
    labels = np.minimum((rng.random((n, 1)) > cumulative).sum(axis=1), k - 1)
    return probs, labels


def tied_probs():
    """Dyadic probabilities (exact in floating point) with many ties and top confidences of exactly 1."""
    rng = np.random.default_rng(7)
    top = rng.choice([0.5, 0.625, 0.75, 0.875, 1.0], size=120)
    probs = np.stack([top, 1.0 - top], axis=1)
    swap = rng.random(120) < 0.5
    probs[swap] = probs[swap][:, ::-1]
    labels = rng.integers(0, 2, size=120)
    return probs, labels


TIE_VALUE_SETS = [
    (0.7, 0.2, 0.1),
    (1 / 3, 1 / 3, 1 / 3),
    (0.15, 0.35, 0.5),
    (0.6, 0.25, 0.15),
    (0.45, 0.3, 0.15, 0.1),
    (0.55, 0.15, 0.15, 0.1, 0.05),
]


def tied_rows(k, seed, dtype=np.float64, renormalise=False):
    """Rows that are permutations of a few value sets (padded with zeros to k classes), as calibrator outputs are;
    `renormalise` divides by the row sums as a calibrator does, so sums then differ in the last bit."""
    rng = np.random.default_rng(seed)
    rows = []
    for values in (v for v in TIE_VALUE_SETS if len(v) <= k):
        padded = np.zeros(k)
        padded[: len(values)] = values
        perms = list(itertools.permutations(range(k)))
        for _ in range(60):
            rows.append(padded[list(perms[rng.integers(len(perms))])])
    probs = np.array(rows)[rng.permutation(len(rows))]
    if renormalise:
        probs = probs / probs.sum(axis=1, keepdims=True)
    probs = probs.astype(dtype)
    labels = rng.integers(0, k, size=probs.shape[0])
    return probs, labels


def boosted_logits(n, k, seed):
    """Logits with the true class raised by a uniform amount (the generator of the smooth-ECE and meter tests)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k)) * 2
    logits[np.arange(n), labels] += 2 * rng.random(n)
    return logits, labels


def meter_logits(n, k, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k)) * 2.0
    logits[np.arange(n), labels] += rng.random(n) * 3.0
    return logits, labels


def from_logits(name, logits, labels, n_bins=(15,)):
    return Case(name, softmax(logits, axis=1), np.asarray(labels), logits, tuple(n_bins))


def from_probs(name, probs, labels, n_bins=(15,)):
    return Case(name, np.asarray(probs, dtype=np.float64), np.asarray(labels), None, tuple(n_bins))


def _one_hot_among_continuous():
    """Exact 0/1 entries: confident one-hot rows (some wrong) among continuous ones."""
    logits, labels = make_logits(1000, 10, 0)
    probs = softmax(logits, axis=1)
    probs[:100] = np.eye(10)[np.arange(100) % 10]
    return probs, labels


def _cases() -> list[Case]:
    cases = [from_logits(f"logits-{n}x{k}-seed{seed}", *make_logits(n, k, seed), n_bins) for n, k, seed, n_bins in [
        (1000, 10, 0, (1, 2, 10, 15, 30)),
        (400, 10, 0, (15,)),
        (300, 10, 0, (15,)),
        (150, 10, 0, (15,)),
        (500, 2, 4, (15,)),
        (300, 3, 1, (15,)),
        (200, 2, 3, (5,)),  # binary
        (120, 4, 5, (15,)),
        (60, 3, 1, (15,)),
        (50, 3, 1, (15,)),
        (40, 5, 2, (15,)),
        (40, 3, 1, (15,)),
        (10, 4, 3, (15,)),
        (9, 5, 2, (15,)),
        (7, 4, 2, (15,)),  # fewer samples than bins
        (3, 2, 2, (15,)),
    ]]
    cases.append(from_logits("boosted-1500x6-seed4", *boosted_logits(1500, 6, 4)))
    cases.append(from_logits("meter-240x5-seed0", *meter_logits(240, 5, 0), (10,)))
    cases.append(from_probs("dyadic-ties-binary", *tied_probs(), (1, 4, 15, 200)))
    cases.append(from_probs("one-hot-rows-1000x10", *_one_hot_among_continuous()))
    for k, renormalise in itertools.product((3, 5), (False, True)):
        cases.append(from_probs(f"tied-rows-k{k}{'-renormalised' if renormalise else ''}",
                                *tied_rows(k, 11 + k, renormalise=renormalise), (2, 3, 5, 15)))
    return cases


CASES: list[Case] = _cases()


@dataclass(frozen=True)
class Variant:
    """How the scores reach adacal: float64 or float32, probabilities or logits, a numpy array or a torch tensor."""

    dtype: type
    form: str  # "probs" or "logits"
    container: str  # "numpy" or "torch"

    def __str__(self) -> str:
        return f"{np.dtype(self.dtype).name}/{self.form}/{self.container}"

    def applies(self, case: Case) -> bool:
        return self.form == "probs" or case.logits is not None

    def scores(self, case: Case) -> np.ndarray:
        """The scores as float64 values of the variant's precision."""
        source = case.probs if self.form == "probs" else case.logits
        return source.astype(self.dtype).astype(np.float64)

    def reference_probs(self, case: Case) -> np.ndarray:
        scores = self.scores(case)
        if self.form == "logits":
            return softmax(scores, axis=1)
        # adacal's convention: rows summing to 1 within K float32 epsilons (at most 1e-4) are used as given, in either
        # dtype; others are divided by their sums.
        sums = scores.sum(axis=1, keepdims=True)
        tolerance = min(scores.shape[1] * float(np.finfo(np.float32).eps), 1e-4)
        return np.where(np.abs(sums - 1.0) <= tolerance, scores, scores / sums)

    def inputs(self, case: Case, rows=slice(None)):
        scores, labels = self.scores(case)[rows].astype(self.dtype), case.labels[rows]
        if self.container == "torch":
            return torch.from_numpy(scores), torch.from_numpy(labels)
        return scores, labels


VARIANTS = [Variant(*v) for v in itertools.product((np.float64, np.float32), ("probs", "logits"), ("numpy", "torch"))]

# ------------------------------------------------------------------------------------------------------ OOD scores


@dataclass(frozen=True)
class OodCase:
    """Uncertainty scores (higher = more OOD) of in-distribution and OOD samples, float64."""

    name: str
    in_scores: np.ndarray
    out_scores: np.ndarray

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class OodVariant:
    dtype: type
    container: str

    def __str__(self) -> str:
        return f"{np.dtype(self.dtype).name}/{self.container}"

    def inputs(self, case: OodCase):
        pair = [scores.astype(self.dtype) for scores in (case.in_scores, case.out_scores)]
        return [torch.from_numpy(s) for s in pair] if self.container == "torch" else pair

    def reference_inputs(self, case: OodCase):
        return [scores.astype(self.dtype).astype(np.float64) for scores in (case.in_scores, case.out_scores)]


OOD_VARIANTS = [OodVariant(*v) for v in itertools.product((np.float64, np.float32), ("numpy", "torch"))]


def _entropy_pair(seed=0):
    """Entropies of confident in-distribution logits and of noisier OOD logits."""
    rng = np.random.default_rng(seed)
    in_logits = rng.normal(size=(300, 10))
    in_logits[np.arange(300), rng.integers(0, 10, 300)] += 4.0
    out_logits = rng.normal(size=(200, 10)) + rng.normal(size=(200, 1))
    return [scipy_entropy(softmax(logits, axis=1), axis=1) for logits in (in_logits, out_logits)]


def _rounded_normal(seed):
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(size=80), 1), np.round(rng.normal(size=60) + 1.5, 1)  # rounded: ties


def _tenths(seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 12, size=57) / 10, rng.integers(4, 16, size=83) / 10  # heavily tied


OOD_CASES = [
    OodCase("entropy-300-vs-200", *_entropy_pair()),
    *(OodCase(f"rounded-normal-seed{seed}", *_rounded_normal(seed)) for seed in range(4)),
    *(OodCase(f"tenths-seed{seed}", *_tenths(seed)) for seed in range(4)),
]


# ------------------------------------------------------------------------------------------------------- references


@dataclass(frozen=True)
class Reference:
    """An independent implementation of one adacal metric.

    `compute(probs, labels, n_bins, module=...)` gets float64 probabilities (N, K), integer labels, the bin count (None
    for metrics without bins) and the imported `package`. Agreement asked for on float64 inputs: |diff| <= atol, or
    relative rtol; float32 inputs are held to max(atol, FLOAT32_ATOL). `options` are passed to the adacal metric.
    `excludes(case)` returns why a case is outside the reference's definition (None when it is inside). `package` names
    the module to import: optional ones skip with the reason when absent.
    """

    source: str
    metric: str
    compute: Callable[..., float]
    atol: float
    binned: bool = True
    options: dict = field(default_factory=dict)
    excludes: Callable[[Case], str | None] = lambda case: None
    package: str | None = None
    optional: bool = False
    rtol: float = 0.0

    @property
    def id(self) -> str:
        options = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.metric}{'[' + options + ']' if options else ''}~{self.source.replace(' ', '-')}"

    def module(self):
        if self.package is None:
            return None
        if self.optional:
            name = self.package.split(".")[0]
            return pytest.importorskip(self.package, reason=f"{name} (an optional reference) is not installed")
        return importlib.import_module(self.package)  # a test dependency: missing it is an error, not a skip


FLOAT32_ATOL = 1e-6  # float32 probabilities: values rounded to float32 (references see float32 values)


@dataclass(frozen=True)
class OodReference:
    """An independent implementation of one OOD detection metric: `compute(in_scores, out_scores, module)`."""

    source: str
    metric: str  # a key of OOD_METRICS
    compute: Callable[..., float]
    atol: float
    package: str | None = None

    @property
    def id(self) -> str:
        return f"{self.metric}~{self.source.replace(' ', '-')}"

    def module(self):
        return None if self.package is None else importlib.import_module(self.package)


def _ood_metric(key):
    return lambda in_scores, out_scores: ood_metrics(in_scores, out_scores)[key]


# The OOD detection metrics by name: the keys of `ood_metrics`, and the FPR of the closest-TPR rule.
OOD_METRICS = {
    "auroc": _ood_metric("auroc"),
    "aupr-in": _ood_metric("aupr_in"),
    "aupr-out": _ood_metric("aupr_out"),
    "fpr-at-95-tpr": _ood_metric("fpr_at_95_tpr"),
    "fpr-at-95-tpr-closest": lambda in_scores, out_scores: fpr_at_tpr(in_scores, out_scores, rule="closest"),
}


# ------------------------------------------------------------------------------------------------------------ tester


class MetricTester:
    """Runs an adacal metric against a reference over every variant of a case (the functional test),
    `CalibrationMeter` over uneven chunks against the batch function (the streaming test), and an OOD detection
    metric against a reference over float32/float64 numpy/torch scores (the OOD test)."""

    variants: Sequence[Variant] = VARIANTS
    ood_variants: Sequence[OodVariant] = OOD_VARIANTS
    chunk_sizes: Sequence[int] = (1, 50, 7, 100, 82)
    stream_atol: float = 1e-9  # sums in another order

    def run_functional_test(self, reference: Reference, case: Case) -> int:
        """Assert agreement for every variant and bin count; returns the number of comparisons made."""
        module = reference.module()
        metric = METRICS.get(reference.metric)
        checked, failures = 0, []
        for n_bins in case.n_bins if reference.binned else (None,):
            expected_by_probs: dict[bytes, float] = {}
            for variant in self.variants:
                if not variant.applies(case):
                    continue
                probs = variant.reference_probs(case)
                digest = probs.tobytes()
                if digest not in expected_by_probs:
                    expected_by_probs[digest] = float(reference.compute(probs, case.labels, n_bins, module=module))
                expected = expected_by_probs[digest]
                options = dict(reference.options, **({} if n_bins is None else {"n_bins": n_bins}))
                got = metric(*variant.inputs(case), **options)
                atol = reference.atol if variant.dtype == np.float64 else max(reference.atol, FLOAT32_ATOL)
                checked += 1
                if not (isinstance(got, float) and math.isclose(got, expected, rel_tol=reference.rtol, abs_tol=atol)):
                    failures.append(f"{variant} n_bins={n_bins}: adacal {got!r}, {reference.source} {expected!r} "
                                    f"(|diff| {abs(got - expected):.3g} > {atol:g})")
        assert not failures, f"{reference.id} on {case.name}:\n" + "\n".join(failures)
        return checked

    def chunks(self, n: int):
        start = 0
        for size in itertools.cycle(self.chunk_sizes):
            if start >= n:
                return
            yield slice(start, min(start + size, n))
            start += size

    def run_class_test(self, names: Sequence[str], case: Case) -> int:
        """`CalibrationMeter(names=names)` fed the case in uneven chunks equals each batch function on the whole."""
        checked, failures = 0, []
        for n_bins in case.n_bins:
            for variant in self.variants:
                if not variant.applies(case):
                    continue
                meter = CalibrationMeter(names=list(names), n_bins=n_bins)
                for rows in self.chunks(case.labels.size):
                    meter.update(*variant.inputs(case, rows))
                got = meter.compute()
                scores, labels = variant.inputs(case)
                expected = {metric_key(name): METRICS.get(name)(scores, labels, n_bins=n_bins) for name in names}
                checked += 1
                if list(got) != list(expected) or not all(
                    math.isclose(got[key], value, rel_tol=0, abs_tol=self.stream_atol)
                    for key, value in expected.items()
                ):
                    failures.append(f"{variant} n_bins={n_bins}: meter {got!r}, batch {expected!r}")
        assert not failures, f"CalibrationMeter {', '.join(names)} on {case.name}:\n" + "\n".join(failures)
        return checked

    def run_ood_test(self, reference: OodReference, case: OodCase) -> int:
        """Assert the adacal OOD metric equals the reference for every variant; returns the number of comparisons."""
        module, metric = reference.module(), OOD_METRICS[reference.metric]
        failures = []
        for variant in self.ood_variants:
            expected = float(reference.compute(*variant.reference_inputs(case), module=module))
            got = metric(*variant.inputs(case))
            if not (isinstance(got, float) and math.isclose(got, expected, rel_tol=0, abs_tol=reference.atol)):
                failures.append(f"{variant}: adacal {got!r}, {reference.source} {expected!r}")
        assert not failures, f"{reference.id} on {case.name}:\n" + "\n".join(failures)
        return len(self.ood_variants)


def pairs(references: Sequence[Reference], cases: Sequence[Case]):
    """(reference, case) parameters, leaving out cases outside a reference's definition."""
    return [pytest.param(r, c, id=f"{r.id}-{c.name}") for r in references for c in cases if r.excludes(c) is None]


