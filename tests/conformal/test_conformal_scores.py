"""The conformal score functions against slow transcriptions of their published formulas, hand-worked 3-class
examples, and the row-wise U.

References transcribed below (one row, one class at a time):
- THR / LAC: Sadinle, Lei & Wasserman 2019, s(x, y) = 1 − p_y (MAPIE `LacConformityScore`, TorchCP `THR`).
- APS: Romano, Sesia & Candès 2020, s(x, y, u) = Σ_{j ranked before y} p_j + u·p_y; TorchCP `APS._calculate_all_label`
  writes it as cumsum(sorted p) − U·p_y, the same number with U ↔ 1 − u. Non-randomised: the full cumsum.
- RAPS: Angelopoulos, Bates, Malik & Jordan 2021, APS + λ·(o(x, y) − k_reg)^+ with o the 1-based rank (TorchCP `RAPS`:
  `torch.maximum(penalty * (arange(1, K+1) - kreg), 0)`).
- top-k: the 1-based rank of y (TorchCP `TOPK`, non-randomised).
"""

import numpy as np
import pytest
from scipy import stats

from adacal.conformal import SCORES, build_score, row_ranks, row_uniforms, score_names
from adacal.errors import InputError, UnknownNameError


def _probs(n, k, seed, ties=False):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), size=n)
    if ties:  # equal entries in many rows: the rank rule (lower class first) decides
        probs = np.round(probs * 4) + 1.0
        probs = probs / probs.sum(axis=1, keepdims=True)
    return probs


def _rank_loop(row, label):
    """1-based rank: 1 + the classes with a higher probability, or an equal one and a lower index."""
    return 1 + sum(1 for j in range(len(row)) if row[j] > row[label] or (row[j] == row[label] and j < label))


def _aps_loop(row, label, u, randomized):
    rank = _rank_loop(row, label)
    above = sum(row[j] for j in range(len(row)) if _rank_loop(row, j) < rank)
    return above + row[label] - (u * row[label] if randomized else 0.0)


def _reference(name, options, row, label, u):
    if name in ("thr", "lac"):
        return 1.0 - row[label]
    if name == "topk":
        return float(_rank_loop(row, label))
    randomized = options.get("randomized", True)
    value = _aps_loop(row, label, u, randomized)
    if name == "raps":
        value += options.get("lam", 0.01) * max(0, _rank_loop(row, label) - options.get("k_reg", 1))
    return value


CASES = [("thr", {}), ("lac", {}), ("topk", {}), ("aps", {"randomized": False}), ("aps", {"randomized": True}),
         ("aps", {"randomized": True, "seed": 7}), ("raps", {"k_reg": 2, "lam": 0.3, "randomized": False}),
         ("raps", {"k_reg": 0, "lam": 0.05}), ("raps", {})]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(("name", "options"), CASES)
def test_every_class_score_equals_the_formula_loop(name, options, ties):
    probs = _probs(40, 5, seed=3, ties=ties)
    function = build_score(name, **options)
    every = function.all_scores(probs)
    u = row_uniforms(probs, options.get("seed", 0))
    expected = np.array([[_reference(name, options, row, k, u[i]) for k in range(5)] for i, row in enumerate(probs)])
    np.testing.assert_allclose(every, expected, rtol=0, atol=1e-12)
    labels = np.random.default_rng(1).integers(0, 5, size=40)
    np.testing.assert_allclose(function.score(probs, labels), expected[np.arange(40), labels], atol=1e-12)


def test_a_u_passed_in_is_used_as_given():
    probs = np.array([[0.5, 0.3, 0.2]])
    aps = build_score("aps")
    # hand-worked: cumsum by rank [0.5, 0.8, 1.0] minus U·p with U = 0.5
    np.testing.assert_allclose(aps.all_scores(probs, np.array([0.5])), [[0.25, 0.65, 0.9]])
    np.testing.assert_allclose(aps.score(probs, np.array([2]), uniforms=[1.0]), [0.8])


def test_hand_worked_thr_and_aps_sets():
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
    thr, aps = build_score("thr"), build_score("aps", randomized=False)
    # THR scores: row 0 [0.5, 0.7, 0.8]; row 1 [0.9, 0.4, 0.7]
    assert thr.sets(probs, 0.7).tolist() == [[True, True, False], [False, True, True]]
    assert thr.sets(probs, 0.45).tolist() == [[False, False, False], [False, True, False]]
    # APS scores: row 0 [0.5, 0.8, 1.0]; row 1 [1.0, 0.6, 0.9]
    assert aps.sets(probs, 0.8).tolist() == [[True, True, False], [False, True, False]]
    assert aps.sets(probs, 0.9).tolist() == [[True, True, False], [False, True, True]]
    assert aps.sets(probs, 0.79).tolist() == [[True, False, False], [False, True, False]]
    # one threshold per class (class-conditional)
    assert thr.sets(probs, [0.5, 0.8, 0.75]).tolist() == [[True, True, False], [False, True, True]]


def test_topk_sets_are_the_k_most_probable_classes():
    probs = _probs(30, 6, seed=5)
    sets = build_score("topk").sets(probs, 2.0)
    top2 = np.argsort(-probs, axis=1)[:, :2]
    expected = np.zeros_like(sets)
    np.put_along_axis(expected, top2, True, axis=1)
    assert (sets == expected).all()


@pytest.mark.parametrize(("name", "options"), CASES)
def test_a_label_is_in_its_set_exactly_when_its_score_is_at_most_the_threshold(name, options):
    probs = _probs(200, 4, seed=9, ties=True)
    labels = np.random.default_rng(2).integers(0, 4, size=200)
    function = build_score(name, **options)
    for threshold in (0.1, 0.5, 0.9, 1.0, 2.0, 3.0):
        sets = function.sets(probs, threshold)
        assert (sets[np.arange(200), labels] == (function.score(probs, labels) <= threshold)).all()


@pytest.mark.parametrize(("name", "options"), CASES)
def test_sets_grow_with_the_threshold_and_are_row_wise(name, options):
    probs = _probs(50, 4, seed=11)
    function = build_score(name, **options)
    small, large = function.sets(probs, 0.6), function.sets(probs, 0.9)
    assert (small <= large).all()
    alone = np.vstack([function.sets(probs[i:i + 1], 0.9) for i in range(50)])
    assert (alone == large).all()
    assert (function.sets(probs[::-1], 0.9) == large[::-1]).all()


def test_row_uniforms_look_uniform_and_depend_on_the_row_and_seed_only():
    probs = _probs(20000, 4, seed=13)
    u = row_uniforms(probs)
    assert ((u >= 0) & (u < 1)).all()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(u, probs[:, 0])[0, 1]) < 0.05  # no visible link to the values
    other = row_uniforms(probs, seed=1)
    assert not np.allclose(u, other) and stats.kstest(other, "uniform").pvalue > 1e-3
    assert (row_uniforms(probs[5:6]) == u[5:6]).all()
    assert (row_uniforms(probs[::-1]) == u[::-1]).all()


def test_row_ranks_break_ties_by_the_lower_class():
    order, ranks = row_ranks(np.array([[0.25, 0.5, 0.25, 0.0]]))
    assert order.tolist() == [[1, 0, 2, 3]] and ranks.tolist() == [[2, 1, 3, 4]]


def test_the_registry_lists_every_score_and_refuses_bad_names_and_options():
    assert score_names() == ["aps", "lac", "raps", "thr", "topk"]
    assert "APS" in SCORES
    with pytest.raises(UnknownNameError, match="raps"):
        build_score("rapss")
    with pytest.raises(InputError, match="k_reg"):
        build_score("aps", k_reg=1)
    with pytest.raises(InputError, match="randomized"):
        build_score("aps", randomized="yes")
    with pytest.raises(InputError, match="lam"):
        build_score("raps", lam=-0.1)
    with pytest.raises(InputError, match="k_reg"):
        build_score("raps", k_reg=-1)
    with pytest.raises(InputError, match="uniforms"):
        build_score("aps").sets(_probs(3, 3, 0), 0.5, uniforms=[0.1, 0.2])
