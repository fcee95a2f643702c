"""RAPS's k_reg and λ chosen on validation as Angelopoulos, Bates, Malik & Jordan (2021) describe it (§2.2 and their
code's `pick_parameters`, `pick_kreg`, `pick_lamda_size`): 30 % of the calibration rows tune, k_reg is the (1 − α)
"higher" quantile of the true labels' 1-based ranks, λ the grid value {0.001, 0.01, 0.1, 0.2, 0.5} whose sets,
calibrated and measured on the tuning rows, are smallest on average (the first on ties); the other 70 % calibrate.

The reference below is a row-by-row transcription of that description with the paper's own score
E = Σ_{j<o(y)} π_(j) + u·π_(o(y)) + λ·(o(y) − k_reg)^+ (u = 1 − adacal's U, the same draw), independent of adacal's
vectorised kernel.
"""

import math

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.conformal import ConformalPredictor, raps_tuning_split, row_uniforms, select_raps_parameters
from adacal.errors import InputError

PAPER_LAMBDAS = [0.001, 0.01, 0.1, 0.2, 0.5]


def _paper_scores(probs, lam, k_reg, u):
    """E(x, y, u) of every class of every row, by loops (u: None for the non-randomised score, which counts π_y
    whole)."""
    n, k = probs.shape
    scores = np.empty((n, k))
    for i in range(n):
        order = sorted(range(k), key=lambda c: (-probs[i, c], c))
        total = 0.0
        for position, c in enumerate(order, start=1):
            weight = 1.0 if u is None else u[i]
            scores[i, c] = total + weight * probs[i, c] + lam * max(0, position - k_reg)
            total += probs[i, c]
    return scores


def _paper_selection(probs, labels, alpha, randomized, seed):
    n, k = probs.shape
    ranks0 = [sorted(range(k), key=lambda c: (-probs[i, c], c)).index(labels[i]) for i in range(n)]
    kstar = int(np.quantile(ranks0, 1 - alpha, method="higher")) + 1  # pick_kreg
    u = 1.0 - row_uniforms(probs, seed) if randomized else None
    best_size, lam_star = math.inf, None
    for lam in PAPER_LAMBDAS:  # pick_lamda_size
        every = _paper_scores(probs, lam, kstar, u)
        calibration = sorted(every[i, labels[i]] for i in range(n))
        threshold = calibration[math.ceil((n + 1) * (1 - alpha)) - 1]
        size = np.mean([sum(every[i, c] <= threshold for c in range(k)) for i in range(n)])
        if size < best_size:
            best_size, lam_star = size, lam
    return kstar, lam_star


def _data(n, k, seed, scale):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=scale, size=(n, k))
    labels = np.where(rng.random(n) < 0.6, logits.argmax(axis=1), rng.integers(0, k, n))
    return softmax(logits), labels


@pytest.mark.parametrize(("n", "k", "alpha", "randomized", "seed"),
                         [(150, 10, 0.1, False, 0), (120, 20, 0.2, True, 3), (200, 6, 0.05, True, 1),
                          (90, 30, 0.1, False, 2)])
def test_selection_equals_the_papers_description(n, k, alpha, randomized, seed):
    probs, labels = _data(n, k, seed, 2.5)
    chosen = select_raps_parameters(probs, labels, alpha, randomized=randomized, seed=seed)
    assert chosen == _paper_selection(probs, labels, alpha, randomized, seed)


def test_k_reg_by_hand():
    # True labels at ranks 1 (x6), 2 (x3) and 4 (x1), sorted 1,1,1,1,1,1,2,2,2,4: numpy's "higher" quantile of level
    # q takes the value at index ceil(9 q): q = 0.9 -> index 9 (rank 4), 0.8 -> index 8 (rank 2), 0.5 -> 5 (rank 1).
    probs = np.tile([[0.4, 0.3, 0.2, 0.1]], (10, 1))
    labels = np.array([0] * 6 + [1] * 3 + [3])
    assert [select_raps_parameters(probs, labels, alpha, randomized=False)[0] for alpha in (0.1, 0.2, 0.5)] == [4, 2, 1]


def test_tuning_split_is_thirty_percent_seeded_and_a_partition():
    tune, rest = raps_tuning_split(101, seed=4)
    assert len(tune) == math.ceil(0.3 * 101) and len(rest) == 101 - len(tune)
    assert sorted([*tune, *rest]) == list(range(101))
    assert not np.array_equal(tune, raps_tuning_split(101, seed=5)[0])
    assert np.array_equal(tune, raps_tuning_split(101, seed=4)[0])
    assert len(raps_tuning_split(10)[0]) == 3  # 0.3 x 10 is 3, not 4 after float rounding


@pytest.mark.parametrize("class_conditional", [False, True])
def test_auto_predictor_is_the_paper_split_then_a_fixed_raps(class_conditional):
    probs, labels = _data(400, 5, 7, 2.0)
    auto = ConformalPredictor("raps", alpha=0.1, class_conditional=class_conditional, seed=2, k_reg="auto",
                              lam="auto").fit(probs, labels, scores_kind="probs")
    tune, rest = raps_tuning_split(400, seed=2)
    k_reg, lam = select_raps_parameters(probs[tune], labels[tune], 0.1, randomized=True, seed=2)
    fixed = ConformalPredictor("raps", alpha=0.1, class_conditional=class_conditional, seed=2, k_reg=k_reg,
                               lam=lam).fit(probs[rest], labels[rest], scores_kind="probs")
    assert (auto.tuning_["k_reg"], auto.tuning_["lam"], auto.tuning_["n_tune"]) == (k_reg, lam, len(tune))
    assert auto.quantile_ == fixed.quantile_ and auto.n_calibration_ == fixed.n_calibration_
    assert np.array_equal(auto.predict_sets(probs), fixed.predict_sets(probs))
    again = ConformalPredictor.from_dict(auto.to_dict())
    assert again.tuning_ == auto.tuning_ and np.array_equal(again.predict_sets(probs), auto.predict_sets(probs))


def test_one_auto_option_keeps_the_other_as_given():
    probs, labels = _data(300, 8, 1, 2.0)
    predictor = ConformalPredictor("raps", alpha=0.1, k_reg=2, lam="auto").fit(probs, labels, scores_kind="probs")
    assert predictor.score_function_.k_reg == 2 and predictor.tuning_["selected"] == ["lam"]
    predictor = ConformalPredictor("raps", alpha=0.1, k_reg="auto", lam=0.3).fit(probs, labels, scores_kind="probs")
    assert predictor.score_function_.lam == 0.3 and predictor.tuning_["lam"] == 0.3


def test_auto_refusals():
    probs, labels = _data(60, 4, 0, 2.0)
    with pytest.raises(InputError, match="'auto' only for RAPS"):
        ConformalPredictor("aps", alpha=0.1, randomized="auto").fit(probs, labels)
    # 60 rows: 18 tune (enough for alpha 0.1) and 42 calibrate; at alpha 0.05 the 18 tuning rows are too few.
    with pytest.raises(InputError, match="RAPS tuning part"):
        ConformalPredictor("raps", alpha=0.05, k_reg="auto", lam="auto").fit(probs, labels)
