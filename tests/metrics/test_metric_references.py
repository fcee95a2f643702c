"""Every metric against its reference implementations (metric_references.py) through the shared harness
(metric_tester.py): float32 and float64, probabilities and logits, numpy and torch, several bin counts, ties and exact
0/1 entries, binary and multiclass; `CalibrationMeter` over uneven chunks against the batch function; and the OOD
detection metrics against scikit-learn and slow loops."""

import numpy as np
import pytest

from adacal.metrics import METRIC_NAMES
from metric_references import OOD_REFERENCES, REFERENCES
from metric_tester import CASES, OOD_CASES, OOD_METRICS, VARIANTS, pairs


def test_every_registered_metric_has_a_reference_and_a_published_one_where_there_is_one():
    covered = {reference.metric for reference in REFERENCES}
    assert covered == set(METRIC_NAMES)
    published = {reference.metric for reference in REFERENCES if reference.source != "slow loop"}
    # The sweeps (Roelofs et al. 2021) and the classwise ECE have no published implementation to compare with.
    assert set(METRIC_NAMES) - published == {"ece-sweep-em", "ece-sweep-ew", "classwise-ece"}


def test_the_cases_cover_what_the_harness_promises():
    assert {c.num_classes == 2 for c in CASES} == {True, False}  # binary and multiclass
    assert any(c.has_values_on_edges and c.logits is None for c in CASES)  # ties, exact 0 and 1
    assert any(c.labels.size < max(c.n_bins) for c in CASES)  # fewer samples than bins
    assert {b for c in CASES for b in c.n_bins} >= {1, 2, 3, 4, 5, 10, 15, 30, 200}
    assert {np.dtype(v.dtype).name for v in VARIANTS} == {"float32", "float64"}
    assert {v.form for v in VARIANTS} == {"probs", "logits"} and {v.container for v in VARIANTS} == {"numpy", "torch"}


@pytest.mark.parametrize("reference, case", pairs(REFERENCES, CASES))
def test_metric_matches_reference(metric_tester, reference, case):
    assert metric_tester.run_functional_test(reference, case) > 0


# Each metric alone (the meter keeps only the columns it needs) on a few cases of each kind; all together on every case.
FEW = ["meter-240x5-seed0", "logits-200x2-seed3", "logits-3x2-seed2", "dyadic-ties-binary", "tied-rows-k5-renormalised"]
STREAMED = [pytest.param((name,), case, id=f"{name}-{case.name}") for name in METRIC_NAMES for case in CASES
            if case.name in FEW]
STREAMED += [pytest.param(METRIC_NAMES, case, id=f"all-{case.name}") for case in CASES]


def test_streamed_cases_exist():
    assert len(STREAMED) == len(METRIC_NAMES) * len(FEW) + len(CASES)


@pytest.mark.parametrize("names, case", STREAMED)
def test_streamed_meter_equals_batch_function(metric_tester, names, case):
    assert metric_tester.run_class_test(names, case) > 0


def test_every_ood_metric_has_a_slow_reference():
    assert {r.metric for r in OOD_REFERENCES if r.source == "slow loop"} == set(OOD_METRICS)


@pytest.mark.parametrize("case", OOD_CASES, ids=repr)
@pytest.mark.parametrize("reference", OOD_REFERENCES, ids=lambda r: r.id)
def test_ood_metric_matches_reference(metric_tester, reference, case):
    assert metric_tester.run_ood_test(reference, case) > 0
