"""AdaFocal against Algorithm 1 of the paper, worked by hand; bins, training statistics, state and numerics."""

import io
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from adacal.errors import CheckpointError, InputError
from adacal.losses import AdaFocalLoss, adafocal_gamma_update, true_class_log_probs
from adacal.metrics.binning import assign_bins

K = 10


def _validation_set(confidences, correct):
    """Logits whose float64 softmax has top-1 class 0 with the given confidence; label 0 if correct else 1."""
    conf = torch.tensor(confidences, dtype=torch.float64)
    rest = ((1 - conf) / (K - 1)).unsqueeze(1).expand(-1, K - 1)
    logits = torch.log(torch.cat([conf.unsqueeze(1), rest], dim=1)).float()
    labels = torch.tensor([0 if ok else 1 for ok in correct])
    return logits, labels


def _training_batch(p_true, k=2):
    p = torch.tensor(p_true, dtype=torch.float64)
    rest = ((1 - p) / (k - 1)).unsqueeze(1).expand(-1, k - 1)
    return torch.log(torch.cat([p.unsqueeze(1), rest], dim=1)).float(), torch.zeros(len(p_true), dtype=torch.long)


# Six equal-mass bins of two samples; the last four confidences tie at 0.95, so bin 4 holds all four and bin 5 is
# empty. Per bin: C_val, A_val, E = C - A.
#   bin 0: 0.30 x, 0.40 x  -> C 0.35, A 0   -> E +0.35  (over-confident)
#   bin 1: 0.45 v, 0.55 v  -> C 0.50, A 1   -> E -0.50  (under-confident)
#   bin 2: 0.60 x, 0.70 x  -> C 0.65, A 0   -> E +0.65
#   bin 3: 0.75 v, 0.85 x  -> C 0.80, A 0.5 -> E +0.30
#   bin 4: 0.95 v x4       -> C 0.95, A 1   -> E -0.05
#   bin 5: empty
CONFIDENCES = [0.30, 0.40, 0.45, 0.55, 0.60, 0.70, 0.75, 0.85, 0.95, 0.95, 0.95, 0.95]
CORRECT = [0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1]
EDGES = [0.0, 0.425, 0.575, 0.725, 0.9, 0.95, 1.0]


def _loss_with_gammas(gammas):
    loss = AdaFocalLoss(n_bins=6, lam=1.0)
    loss.gammas.copy_(torch.tensor(gammas, dtype=torch.float64))
    return loss


def test_two_updates_worked_by_hand():
    loss = _loss_with_gammas([1.0, 0.25, -0.25, 19.0, -1.95, 7.0])
    logits, labels = _validation_set(CONFIDENCES, CORRECT)

    first = loss.update(logits, labels)
    np.testing.assert_allclose(first["edges"], EDGES, atol=1e-7)
    assert first["counts"] == [2, 2, 2, 2, 4, 0]
    np.testing.assert_allclose(first["val_confidence"], [0.35, 0.5, 0.65, 0.8, 0.95, 0.0], atol=1e-7)
    np.testing.assert_allclose(first["val_accuracy"], [0.0, 1.0, 0.0, 0.5, 1.0, 0.0])
    expected_first = [
        math.exp(0.35),  # over-confident focal bin: γ grows by exp(λ·E)
        -0.2,  # 0.25·exp(-0.5) = 0.152 < S_th: switch to inverse focal at -S_th
        0.2,  # inverse bin turned over-confident: -0.25·exp(-0.65) = -0.130, |γ| < S_th: back to focal at +S_th
        20.0,  # 19·exp(0.3) = 25.6, clipped to γ_max
        -2.0,  # -1.95·exp(0.05) = -2.05, clipped to γ_min
        7.0,  # empty bin: unchanged
    ]
    np.testing.assert_allclose(first["gammas"], expected_first, rtol=1e-6)
    np.testing.assert_allclose(loss.gammas.numpy(), expected_first, rtol=1e-6)
    np.testing.assert_allclose(loss.bin_edges.numpy(), EDGES, atol=1e-7)

    second = loss.update(logits, labels)
    expected_second = [
        math.exp(0.7),  # keeps growing while over-confident (CalFocal could not)
        -0.2 * math.exp(0.5),  # inverse bin still under-confident: |γ| grows
        0.2 * math.exp(0.65),
        20.0,
        -2.0,
        7.0,
    ]
    np.testing.assert_allclose(second["gammas"], expected_second, rtol=1e-6)
    assert len(loss.history) == 2 and loss.history[0]["gammas"] == first["gammas"]
    assert set(first) == {"edges", "gammas", "val_confidence", "val_accuracy", "counts"}


def test_forward_uses_the_gamma_of_the_bin_after_the_edges_moved():
    loss = _loss_with_gammas([1.0, 0.25, -0.25, 19.0, -1.95, 7.0])
    loss.update(*_validation_set(CONFIDENCES, CORRECT))
    # p = 0.5 lies in bin 1 = (0.425, 0.575], whose γ is now -0.2 (inverse focal);
    # p = 0.8 lies in bin 3 = (0.725, 0.9], γ = 20 (focal)
    for p, expected in [(0.5, -(1.5**0.2) * math.log(0.5)), (0.8, -(0.2**20) * math.log(0.8))]:
        logits, labels = _training_batch([p])
        assert loss(logits, labels).item() == pytest.approx(expected, rel=1e-5)


def test_gamma_update_function_follows_algorithm_1():
    gammas = np.array([1.0, 0.25, -0.25, 19.0, -1.95, 7.0, 0.0, -0.3])
    gaps = np.array([0.35, -0.5, 0.65, 0.3, -0.05, 0.9, 0.1, -0.1])
    counts = np.array([2, 2, 2, 2, 4, 0, 3, 3])
    out = adafocal_gamma_update(gammas, gaps, counts, lam=1.0, gamma_min=-2.0, gamma_max=20.0, switch_threshold=0.2)
    expected = [math.exp(0.35), -0.2, 0.2, 20.0, -2.0, 7.0, -0.2, -0.3 * math.exp(0.1)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    # λ scales the exponent; a huge λ·gap cannot overflow into NaN
    np.testing.assert_allclose(adafocal_gamma_update([2.0], [0.1], [1], lam=3.0), [2.0 * math.exp(0.3)])
    assert adafocal_gamma_update([0.0, 1.0], [1.0, 1.0], [1, 1], lam=1e6).tolist() == [-0.2, 20.0]


def test_gamma_init_zero_switches_to_inverse_focal_first_then_back_where_over_confident():
    """0 · exp(λE) = 0 < S_th: the first update sends every bin with samples to −S_th, over- or under-confident
    alike; an over-confident bin (E > 0) shrinks −0.2 · exp(−λE) below S_th and flips to +S_th at the next."""
    first = adafocal_gamma_update([0.0, 0.0], [0.3, -0.3], [5, 5])
    assert first.tolist() == [-0.2, -0.2]
    second = adafocal_gamma_update(first, [0.3, -0.3], [5, 5])
    assert second[0] == 0.2 and second[1] == pytest.approx(-0.2 * math.exp(0.3))
    assert adafocal_gamma_update([0.0], [0.3], [0]).tolist() == [0.0]  # no samples: no switch


def test_training_samples_are_binned_like_assign_bins_including_edges_and_ends():
    loss = AdaFocalLoss(n_bins=4)  # equal-width: edges 0, 0.25, 0.5, 0.75, 1
    p = torch.tensor([0.0, 1e-30, 0.25, np.nextafter(0.25, 1), 0.5, 0.75, 0.7500001, 0.99, 1.0], dtype=torch.float64)
    expected = [0, 0, 0, 1, 1, 2, 3, 3, 3]
    assert loss.bin_index(p).tolist() == expected
    assert assign_bins(p.numpy(), loss.bin_edges.numpy()).tolist() == expected
    # edges that are not in [0, 1]'s interior still catch everything: below the first, above the last
    loss.bin_edges.copy_(torch.tensor([0.0, 0.3, 0.4, 0.6, 1.0], dtype=torch.float64))
    assert loss.bin_index(torch.tensor([0.0, 0.2, 0.35, 0.61, 1.0])).tolist() == [0, 0, 1, 3, 3]


def test_a_training_sample_exactly_on_an_edge_goes_to_the_lower_bin():
    logits, labels = _training_batch([0.3])
    p = true_class_log_probs(logits, labels)[0].exp().item()  # the float32 p the forward sees
    loss = AdaFocalLoss(n_bins=2)
    loss.bin_edges.copy_(torch.tensor([0.0, p, 1.0], dtype=torch.float64))
    loss(logits, labels)
    assert loss.pop_train_statistics()["train_counts"] == [1, 0]
    loss.bin_edges.copy_(torch.tensor([0.0, np.nextafter(p, 0.0), 1.0], dtype=torch.float64))
    loss(logits, labels)
    assert loss.pop_train_statistics()["train_counts"] == [0, 1]


def test_forward_binning_matches_assign_bins_on_random_batches():
    generator = torch.Generator().manual_seed(0)
    loss = AdaFocalLoss(n_bins=15)
    val_logits = torch.randn(500, K, generator=generator) * 3
    loss.update(val_logits, torch.randint(0, K, (500,), generator=generator))
    logits, labels = torch.randn(300, K, generator=generator) * 3, torch.randint(0, K, (300,), generator=generator)
    loss(logits, labels)
    stats = loss.pop_train_statistics()
    p = true_class_log_probs(logits, labels)[0].exp().double().numpy()
    index = assign_bins(p, loss.bin_edges.numpy())
    counts = np.bincount(index, minlength=15)
    assert stats["train_counts"] == counts.tolist()
    means = np.bincount(index, weights=p, minlength=15) / np.maximum(counts, 1)
    np.testing.assert_allclose(stats["train_confidence"], means, rtol=1e-12)


def test_pop_train_statistics_by_hand():
    loss = AdaFocalLoss(n_bins=2)  # bins [0, 0.5] and (0.5, 1]
    logits, labels = _training_batch([0.1, 0.3, 0.6, 0.8, 0.9])
    loss(logits, labels)
    loss(logits[:1], labels[:1])  # accumulates across calls
    loss.eval()
    loss(logits, labels)  # eval mode: not counted
    stats = loss.pop_train_statistics()
    assert stats["train_counts"] == [3, 3]
    np.testing.assert_allclose(stats["train_confidence"], [(0.1 + 0.3 + 0.1) / 3, (0.6 + 0.8 + 0.9) / 3], rtol=1e-6)
    assert isinstance(stats["train_counts"][0], int)
    assert loss.pop_train_statistics() == {"train_confidence": [0.0, 0.0], "train_counts": [0, 0]}


def _state_round_trip(loss, fresh):
    buffer = io.BytesIO()
    torch.save(loss.state_dict(), buffer)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    return fresh


def test_state_dict_round_trip_continues_identically():
    generator = torch.Generator().manual_seed(1)

    def batch(n):
        return torch.randn(n, K, generator=generator) * 2, torch.randint(0, K, (n,), generator=generator)

    loss = AdaFocalLoss(n_bins=5, lam=2.0)
    loss.update(*batch(400))
    loss(*batch(64))
    loss.update(*batch(400))
    loss(*batch(64))  # leaves training statistics pending in the accumulators
    resumed = _state_round_trip(loss, AdaFocalLoss(n_bins=5, lam=2.0))
    assert set(loss.state_dict()) == {"bin_edges", "gammas", "train_confidence_sum", "train_count", "_extra_state"}
    assert resumed.history == loss.history and resumed.history is not loss.history

    train, val = batch(64), batch(400)
    assert torch.equal(loss(*train), resumed(*train))
    assert loss.update(*val) == resumed.update(*val)
    assert loss.pop_train_statistics() == resumed.pop_train_statistics()
    assert torch.equal(loss.gammas, resumed.gammas) and torch.equal(loss.bin_edges, resumed.bin_edges)
    assert loss.history == resumed.history and len(resumed.history) == 3


def test_loading_a_state_with_other_n_bins_is_a_checkpoint_error():
    with pytest.raises(CheckpointError, match="n_bins=10, got one with 15 bins"):
        AdaFocalLoss(n_bins=10).load_state_dict(AdaFocalLoss(n_bins=15).state_dict())
    state = AdaFocalLoss().state_dict()
    state["_extra_state"] = {"history": "nope"}
    with pytest.raises(CheckpointError, match="extra state"):
        AdaFocalLoss().load_state_dict(state)


def test_update_accepts_numpy_and_checks_its_inputs():
    loss = AdaFocalLoss(n_bins=3)
    logits, labels = _validation_set([0.3, 0.5, 0.9], [1, 0, 1])
    record = loss.update(logits.numpy(), labels.numpy())
    assert record["counts"] == [1, 1, 1]
    with pytest.raises(InputError, match=r"val_labels in \[0, 9\], got values from 0 to 10"):
        loss.update(logits, torch.tensor([0, 10, 1]))
    with pytest.raises(InputError, match="val_logits to be finite"):
        loss.update(torch.full((3, K), float("nan")), labels)
    with pytest.raises(InputError, match=r"val_labels of shape \(3,\)"):
        loss.update(logits, labels[:2])
    assert len(loss.history) == 1
    # numpy views with negative strides (reversed arrays), which torch cannot wrap, are read like any array
    reversed_record = AdaFocalLoss(n_bins=3).update(logits.numpy()[::-1], labels.numpy()[::-1])
    assert reversed_record["counts"] == [1, 1, 1]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (
            {"gamma_max": 1, "gamma_min": 2},
            "Expected gamma_max to be greater than gamma_min, got gamma_max=1 and gamma_min=2.",
        ),
        ({"switch_threshold": 0}, "Expected switch_threshold to be greater than 0, got 0."),
        ({"switch_threshold": 3.0, "gamma_max": 2.0}, "gamma_max to be at least switch_threshold"),
        ({"gamma_min": -0.1}, "gamma_min to be at most -switch_threshold"),
        ({"n_bins": 0}, "Expected n_bins to be a positive integer, got 0."),
        ({"n_bins": 2.5}, "n_bins to be a positive integer"),
        ({"n_bins": True}, "n_bins to be a positive integer"),
        ({"lam": 0.0}, "Expected lam to be greater than 0, got 0.0."),
        ({"lam": float("nan")}, "lam to be a finite number"),
        ({"gamma_init": 25.0}, "gamma_init to be between -2 and 20"),
        ({"gamma_max": "20"}, "gamma_max to be a number"),
    ],
)
def test_bad_options_are_one_sentence_input_errors(options, match):
    with pytest.raises(InputError, match=match.replace("(", r"\(").replace(")", r"\)")):
        AdaFocalLoss(**options)


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_loss_and_gradients_are_finite_for_any_logits_and_gamma(data):
    n = data.draw(st.integers(1, 6), label="n")
    k = data.draw(st.integers(2, 5), label="k")
    extreme = st.sampled_from([-50.0, 50.0, 0.0])
    elements = st.one_of(extreme, st.floats(-50, 50, width=32))
    values = data.draw(hnp.arrays(np.float32, (n, k), elements=elements), label="logits")
    labels = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, k - 1)), label="labels")
    gammas = data.draw(hnp.arrays(np.float64, (3,), elements=st.floats(-2.0, 20.0)), label="gammas")
    loss = AdaFocalLoss(n_bins=3)
    loss.gammas.copy_(torch.from_numpy(gammas))
    logits = torch.from_numpy(values).requires_grad_(True)
    value = loss(logits, torch.from_numpy(labels))
    value.backward()
    assert torch.isfinite(value)
    assert torch.isfinite(logits.grad).all()
