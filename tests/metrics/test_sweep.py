"""ECE_SWEEP (Roelofs et al. 2021): the number of bins it picks, against hand-worked cases and a slow loop."""

import numpy as np
import pytest

import slow_metrics as slow
from adacal.errors import InputError
from adacal.metrics import ece_em, ece_ew, ece_sweep_em, ece_sweep_ew, sweep_bins
from adacal.metrics.sweep import _equal_mass_cuts
from adacal.metrics.binning import assign_bins, equal_mass_edges


def test_monotone_accuracies_reach_n_bins():
    # Misses at low confidence, hits at high confidence: every binning is monotone, so b = N.
    conf = np.linspace(0.2, 0.9, 50)
    correct = (conf > 0.5).astype(float)
    assert sweep_bins(conf, correct, binning="equal-mass") == 50
    assert sweep_bins(conf, correct, binning="equal-width") == 50


def test_known_violation_equal_mass():
    # Sorted hits 0 1 0 1 1 1. b=2: (0 1 0)(1 1 1) = 1/3, 1; b=3: .5 .5 1; b=4 (sizes 2 2 1 1): .5 .5 1 1 — all
    # monotone. b=5 (sizes 2 1 1 1 1): .5, 0, ... decreases -> the sweep picks 4 bins.
    conf = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    correct = np.array([0, 1, 0, 1, 1, 1])
    assert sweep_bins(conf, correct, binning="equal-mass") == 4
    assert slow.sweep_bins(conf.tolist(), correct.tolist(), "equal-mass") == 4


def test_known_violation_equal_width():
    # b=2: (0,.5] {.1 .2 .3} acc 1/3, (.5,1] acc 1; b=3: {.1 .2 .3} 1/3, {.6} 1, {.7 .9} 1 — monotone.
    # b=4: (0,.25] {.1 .2} acc .5, (.25,.5] {.3} acc 0 -> decreases: the sweep picks 3 bins.
    conf = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    correct = np.array([0, 1, 0, 1, 1, 1])
    assert sweep_bins(conf, correct, binning="equal-width") == 3


def test_sweep_metric_is_the_ece_at_the_chosen_bins():
    # Two classes, top confidences .55 ... .8 with the hit pattern of the equal-mass case above: 4 bins.
    top = np.array([0.55, 0.6, 0.65, 0.7, 0.75, 0.8])
    probs = np.stack([top, 1 - top], axis=1)
    labels = np.array([1, 0, 1, 0, 0, 0])  # class 0 predicted everywhere: hits 0 1 0 1 1 1
    # Bins (.55 .6)(.65 .7)(.75)(.8): accuracies .5 .5 1 1, ECE = (2|.575-.5| + 2|.675-.5| + |.75-1| + |.8-1|)/6.
    expected = (2 * 0.075 + 2 * 0.175 + 0.25 + 0.2) / 6
    assert ece_sweep_em(probs, labels) == pytest.approx(expected, abs=1e-12)
    assert ece_sweep_em(probs, labels) == pytest.approx(ece_em(probs, labels, n_bins=4), abs=1e-15)


def test_violation_at_two_bins_reports_one_bin():
    # Hits at low confidence, misses at high: b=2 is already decreasing; one bin: |mean conf - accuracy|.
    conf = np.array([0.6, 0.7, 0.8, 0.9])
    correct = np.array([1, 1, 0, 0])
    assert sweep_bins(conf, correct) == 1
    probs = np.stack([conf, 1 - conf], axis=1)
    labels = 1 - correct
    assert ece_sweep_em(probs, labels) == pytest.approx(abs(0.75 - 0.5), abs=1e-12)
    assert ece_sweep_ew(probs, labels) == pytest.approx(abs(0.75 - 0.5), abs=1e-12)


def test_single_sample():
    assert sweep_bins([0.7], [1]) == 1
    assert ece_sweep_em(np.array([[0.7, 0.3]]), [0]) == pytest.approx(0.3)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_matches_slow_loop_on_random_and_tied_data(seed, binning):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    conf = rng.random(n) if seed % 2 else rng.choice([0.2, 0.4, 0.5, 0.8, 1.0], size=n)
    correct = (rng.random(n) < conf).astype(float)
    assert sweep_bins(conf, correct, binning=binning) == slow.sweep_bins(conf.tolist(), correct.tolist(), binning)


@pytest.mark.parametrize("chunk", [1 << 18, 40, 3])
@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_many_candidates_at_once_pick_what_one_at_a_time_picks(chunk, binning, monkeypatch):
    """Candidates are evaluated in chunks of array operations: nearly monotone data (sorted confidences, right above a
    threshold, one hit and one miss swapped near it) needs b* of tens to hundreds, across the 64-try finest-partition
    check and chunk boundaries; the choice equals the slow one-b-at-a-time loop's."""
    import adacal.metrics.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "_SWEEP_CHUNK_BINS", chunk)
    rng = np.random.default_rng(chunk)
    chosen = []
    for _ in range(4):
        conf = np.sort(rng.random(300))
        correct = (conf > rng.uniform(0.3, 0.7)).astype(float)
        first_hit = int(np.argmax(correct))
        gap = int(rng.integers(1, 4))  # a hit and a miss swapped across the threshold: seen only by fine bins
        correct[[first_hit - gap, first_hit + gap - 1]] = correct[[first_hit + gap - 1, first_hit - gap]]
        chosen.append(sweep_bins(conf, correct, binning=binning))
        assert chosen[-1] == slow.sweep_bins(conf.tolist(), correct.tolist(), binning)
    assert max(chosen) > 64


def test_equal_mass_cut_positions_match_binning_edges():
    # The sweep reads bins from prefix sums; its cut positions must be exactly binning.py's equal-mass bins.
    rng = np.random.default_rng(3)
    for values in (rng.random(97), rng.choice([0.1, 0.5, 0.5000000000000001, 0.9], size=60), np.full(10, 0.5)):
        ordered = np.sort(values)
        cuts = _equal_mass_cuts(ordered)
        for b in range(1, values.size + 3):
            index = assign_bins(ordered, equal_mass_edges(values, b))
            expected = np.searchsorted(index, np.arange(1, b), side="left")
            assert cuts(np.array([b])).tolist() == expected.tolist(), b


def test_sweep_ew_uses_the_equal_width_edges():
    probs = np.stack([np.linspace(0.5, 1.0, 30), 1 - np.linspace(0.5, 1.0, 30)], axis=1)
    labels = np.zeros(30, dtype=int)  # always right: accuracy 1 everywhere, monotone -> N bins
    assert ece_sweep_ew(probs, labels) == pytest.approx(ece_ew(probs, labels, n_bins=30), abs=1e-15)


def test_bad_binning():
    with pytest.raises(InputError, match="binning"):
        sweep_bins([0.5], [1], binning="quantile")
