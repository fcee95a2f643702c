"""binning.py: edges, the (lower, upper] convention, equal counts without ties, ties never split, empty bins."""

import numpy as np
import pytest
import torch

import slow_metrics as slow
from adacal.errors import InputError
from adacal.metrics.binning import (
    assign_bins,
    bin_statistics,
    equal_mass_edges,
    equal_width_edges,
)


def test_equal_width_edges_are_i_over_m():
    assert equal_width_edges(4).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    edges = equal_width_edges(15)
    assert edges.tolist() == [i / 15 for i in range(16)]  # i / M, as the reference package computes them
    assert equal_width_edges(1).tolist() == [0.0, 1.0]


def test_assign_bins_convention_lower_open_upper_closed():
    edges = equal_width_edges(4)
    values = [0.0, 1e-12, 0.25, 0.2500001, 0.5, 0.75, 0.99, 1.0, -0.1, 1.5]
    # 0 is in the first bin (closed below), an edge value belongs to the bin below it, 1 to the last bin,
    # out-of-range values to the end bins.
    assert assign_bins(values, edges).tolist() == [0, 0, 0, 1, 1, 2, 3, 3, 0, 3]


def test_equal_mass_edges_match_slow_definition():
    rng = np.random.default_rng(0)
    values = rng.random(103)
    for n_bins in (1, 2, 7, 15, 103, 150):
        assert equal_mass_edges(values, n_bins).tolist() == pytest.approx(slow.mass_edges(values.tolist(), n_bins))


@pytest.mark.parametrize("n, n_bins", [(100, 15), (15, 15), (1000, 7), (31, 30), (16, 15)])
def test_equal_mass_counts_differ_by_at_most_one_without_ties(n, n_bins):
    values = np.random.default_rng(n).random(n)
    stats = bin_statistics(values, np.zeros(n), n_bins=n_bins, binning="equal-mass")
    assert stats.counts.sum() == n
    assert stats.counts.max() - stats.counts.min() <= 1
    # np.array_split: the larger bins come first.
    assert stats.counts.tolist() == sorted(stats.counts.tolist(), reverse=True)


def test_equal_mass_never_splits_ties():
    rng = np.random.default_rng(1)
    values = rng.choice([0.1, 0.3, 0.5, 0.7, 1.0], size=200)
    for n_bins in (2, 3, 10, 15, 50):
        edges = equal_mass_edges(values, n_bins)
        index = assign_bins(values, edges)
        for value in np.unique(values):
            assert np.unique(index[values == value]).size == 1, (n_bins, value)
        counts = np.bincount(index, minlength=n_bins)
        assert counts.sum() == 200
        if n_bins > 5:
            assert (counts == 0).any()  # five distinct values cannot fill more than five bins


def test_fewer_samples_than_bins():
    values = np.array([0.2, 0.9, 0.4])
    edges = equal_mass_edges(values, 5)
    # One sample per bin for the first three bins; the rest are empty (zero width at the top).
    assert edges.tolist() == [0.0, 0.30000000000000004, 0.65, 1.0, 1.0, 1.0]
    stats = bin_statistics(values, [1, 0, 1], edges=edges)
    assert stats.counts.tolist() == [1, 1, 1, 0, 0]
    assert stats.accuracy.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]


def test_bin_statistics_values_and_empty_bins():
    stats = bin_statistics([0.1, 0.2, 0.9], [1, 0, 1], n_bins=2)
    assert stats.counts.tolist() == [2, 0 + 1]
    assert stats.mean_confidence.tolist() == pytest.approx([0.15, 0.9])
    assert stats.accuracy.tolist() == [0.5, 1.0]
    assert stats.gaps.tolist() == pytest.approx([-0.35, -0.1])
    assert stats.weights.tolist() == pytest.approx([2 / 3, 1 / 3])
    empty = bin_statistics([0.9], [1], n_bins=3)
    assert empty.counts.tolist() == [0, 0, 1]
    assert empty.mean_confidence.tolist() == [0.0, 0.0, 0.9]
    as_dict = stats.to_dict()
    assert set(as_dict) == {"edges", "counts", "mean_confidence", "accuracy"}
    assert as_dict["counts"] == [2, 1] and all(isinstance(c, int) for c in as_dict["counts"])
    nothing = bin_statistics(np.zeros(0), np.zeros(0), n_bins=3)
    assert nothing.counts.tolist() == [0, 0, 0] and nothing.weights.tolist() == [0.0, 0.0, 0.0]


def test_explicit_edges_override_n_bins():
    stats = bin_statistics([0.1, 0.6], [1, 1], n_bins=15, edges=[0.0, 0.5, 1.0])
    assert stats.n_bins == 2 and stats.counts.tolist() == [1, 1]


def test_torch_inputs():
    stats = bin_statistics(torch.tensor([0.1, 0.9]), torch.tensor([True, False]), n_bins=2)
    assert stats.counts.tolist() == [1, 1] and stats.accuracy.tolist() == [1.0, 0.0]


def test_binning_errors():
    with pytest.raises(InputError, match="positive integer"):
        equal_width_edges(0)
    with pytest.raises(InputError, match="binning"):
        bin_statistics([0.5], [1], binning="quantile")
    with pytest.raises(InputError, match="same length"):
        bin_statistics([0.5, 0.6], [1])
    with pytest.raises(InputError, match="1-D"):
        bin_statistics([[0.5]], [[1]])
