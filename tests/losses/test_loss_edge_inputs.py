"""Probes of the losses on inputs the other tests do not try: wide unsigned labels, exact γ = 0, huge λ, tampered
states, unconvertible validation inputs, the loss state on another device, and JSON-ready history records."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from adacal.errors import CheckpointError, InputError
from adacal.losses import adafocal_gamma_update, build_loss, loss_names, signed_focal_loss
from adacal.losses.records import BinUpdate, TrainBinStatistics

WIDE_UNSIGNED = [getattr(torch, name) for name in ("uint16", "uint32", "uint64") if hasattr(torch, name)]


def _batch(n=12, k=4, seed=0, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n, k, generator=generator) * 3).to(dtype), torch.randint(0, k, (n,), generator=generator)


def _trained_adafocal(n_bins=5):
    loss = build_loss("adafocal", n_bins=n_bins)
    logits, labels = _batch(60, 3, seed=1)
    loss.update(logits, labels)
    loss(*_batch(8, 3, seed=2))
    return loss


def _slow_term(p, gamma):
    weight = (1 - p) ** gamma if gamma >= 0 else (1 + p) ** (-gamma)
    return -weight * math.log(p)


# --- labels -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", loss_names())
@pytest.mark.parametrize("dtype", WIDE_UNSIGNED, ids=str)
def test_wide_unsigned_labels_work_like_int64(name, dtype):
    logits, labels = _batch()
    expected = build_loss(name)(logits, labels)
    assert torch.equal(build_loss(name)(logits, labels.to(dtype)), expected)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED, ids=str)
def test_wide_unsigned_labels_out_of_range_are_input_errors(dtype):
    logits, labels = _batch()
    labels = labels.to(dtype)
    labels[3] = 4
    with pytest.raises(InputError, match=r"labels in \[0, 3\]"):
        build_loss("focal")(logits, labels)
    with pytest.raises(InputError, match=r"val_labels in \[0, 3\]"):
        build_loss("adafocal", n_bins=3).update(logits, labels)


def test_numpy_uint64_validation_labels_are_read_and_checked():
    logits, labels = _batch()
    loss = build_loss("adafocal", n_bins=3)
    record = loss.update(logits.numpy(), labels.numpy().astype(np.uint64))
    assert record.to_dict() == build_loss("adafocal", n_bins=3).update(logits, labels).to_dict()
    huge = labels.numpy().astype(np.uint64)
    huge[0] = 2**63 + 5
    with pytest.raises(InputError, match="val_labels"):
        loss.update(logits.numpy(), huge)


# --- exact references ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_focal_and_inverse_focal_at_gamma_zero_equal_cross_entropy_bit_for_bit(dtype):
    logits, labels = _batch(64, 10, dtype=dtype)
    reference = F.cross_entropy(logits if dtype in (torch.float32, torch.float64) else logits.float(), labels)
    assert torch.equal(build_loss("focal", gamma=0)(logits, labels), reference)
    assert torch.equal(build_loss("inverse-focal", gamma=0)(logits, labels), reference)
    assert torch.equal(build_loss("ce")(logits, labels), reference)


@pytest.mark.parametrize("gamma", [0, 0.0, -0.0, 0.2, -0.2, 3.0])
def test_signed_focal_loss_sum_is_n_times_mean_and_none_is_per_sample(gamma):
    logits, labels = _batch(37, 5, dtype=torch.float64)
    total = signed_focal_loss(logits, labels, gamma, reduction="sum")
    mean = signed_focal_loss(logits, labels, gamma, reduction="mean")
    terms = signed_focal_loss(logits, labels, gamma, reduction="none")
    assert terms.shape == (37,)
    torch.testing.assert_close(total, 37 * mean, rtol=1e-14, atol=0)
    torch.testing.assert_close(terms.sum(), total, rtol=1e-14, atol=0)
    probs = torch.softmax(logits, dim=1)
    slow = [_slow_term(float(probs[n, labels[n]]), float(gamma)) for n in range(37)]
    np.testing.assert_allclose(terms.numpy(), slow, rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.5, 1.0])
def test_label_smoothing_equals_torch_exactly(alpha):
    logits, labels = _batch(20, 7)
    assert torch.equal(
        build_loss("label-smoothing", alpha=alpha)(logits, labels),
        F.cross_entropy(logits, labels, label_smoothing=alpha),
    )


def test_adafocal_forward_matches_a_slow_loop_with_focal_inverse_and_zero_gammas():
    loss = build_loss("adafocal", n_bins=6, gamma_init=0.0)
    val_logits, val_labels = _batch(40, 4, seed=3, dtype=torch.float64)
    for _ in range(3):
        loss.update(val_logits, val_labels)
    loss.gammas.copy_(torch.tensor([0.0, 0.2, -1.3, -0.2, 20.0, -2.0], dtype=torch.float64))
    logits, labels = _batch(30, 4, seed=4, dtype=torch.float64)
    probs = torch.softmax(logits, dim=1)
    edges, gammas = loss.bin_edges.tolist(), loss.gammas.tolist()
    total = 0.0
    for n in range(30):
        p = float(probs[n, labels[n]])
        b = 0
        while b < len(gammas) - 1 and p > edges[b + 1]:
            b += 1
        total += _slow_term(p, gammas[b])
    torch.testing.assert_close(loss(logits, labels), torch.tensor(total / 30, dtype=torch.float64), rtol=1e-12, atol=0)


@pytest.mark.parametrize("gamma", [-2.0, -0.2, -1e-9, 0.0, 1e-9, 0.2, 1.0, 20.0])
@pytest.mark.parametrize("margin", [0.0, 30.0, 1e4, -1e4])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_adafocal_gradients_are_finite_wherever_gamma_can_be(gamma, margin, dtype):
    logits = torch.zeros(2, 3)
    logits[0, 0], logits[1, 1] = margin, margin
    logits = logits.to(dtype).requires_grad_()
    loss = build_loss("adafocal", n_bins=3)
    loss.gammas.fill_(gamma)
    value = loss(logits, torch.tensor([0, 0]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()


# --- CalFocal with a huge λ -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["bin", "sample"])
@pytest.mark.parametrize("lam", [1e39, 1e300])
def test_calfocal_with_a_lambda_beyond_float32_stays_finite(mode, lam):
    loss = build_loss("calfocal", lam=lam, n_bins=2, mode=mode)
    loss.update(torch.tensor([[1e4, 0.0], [1e4, 0.0]]), torch.tensor([0, 0]))  # C_val = A_val = 1: gap exactly 0
    logits = torch.tensor([[1e4, 0.0], [0.3, 0.0]], requires_grad=True)
    value = loss(logits, torch.tensor([0, 0]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()


def test_calfocal_bin_gamma_in_forward_is_the_recorded_gamma():
    loss = build_loss("calfocal", lam=3.0, n_bins=4)
    record = loss.update(*_batch(40, 3, seed=5, dtype=torch.float64))
    logits, labels = _batch(25, 3, seed=6, dtype=torch.float64)
    probs = torch.softmax(logits, dim=1)
    total = 0.0
    for n in range(25):
        p = float(probs[n, labels[n]])
        b = 0
        while b < 3 and p > record.edges[b + 1]:
            b += 1
        total += _slow_term(p, record.gammas[b])
    torch.testing.assert_close(loss(logits, labels), torch.tensor(total / 25, dtype=torch.float64), rtol=1e-12, atol=0)


# --- update inputs, device ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["adafocal", "calfocal"])
@pytest.mark.parametrize(
    "val_logits, match",
    [(None, "NoneType"), ("abc", "str"), (np.array([[1, "a"]], dtype=object), "dtype object")],
)
def test_update_with_unconvertible_validation_logits_is_an_input_error(name, val_logits, match):
    with pytest.raises(InputError, match=f"val_logits to be a tensor or an array of numbers, got .*{match}"):
        build_loss(name, n_bins=3).update(val_logits, [0])


@pytest.mark.parametrize("name", ["adafocal", "calfocal"])
def test_update_with_meta_tensors_is_an_input_error(name):
    logits, labels = _batch()
    with pytest.raises(InputError, match="val_logits to hold values"):
        build_loss(name, n_bins=3).update(logits.to("meta"), labels)
    with pytest.raises(InputError, match="val_labels to hold values"):
        build_loss(name, n_bins=3).update(logits, labels.to("meta"))


@pytest.mark.parametrize("name", ["adafocal", "calfocal"])
def test_forward_on_another_device_than_the_loss_state_is_an_input_error(name):
    logits, labels = _batch()
    with pytest.raises(InputError, match=r"logits on the device of the .* state \(cpu.*got meta"):
        build_loss(name, n_bins=3)(logits.to("meta"), labels.to("meta"))


def test_update_smaller_than_n_bins_tied_and_saturated():
    loss = build_loss("adafocal", n_bins=15)
    record = loss.update(torch.randn(3, 4), torch.tensor([0, 1, 2]))
    assert sum(record.counts) == 3 and record.counts[3:] == (0,) * 12 and record.gammas[3:] == (1.0,) * 12
    tied = build_loss("adafocal", n_bins=5).update(torch.zeros(10, 4), torch.zeros(10, dtype=torch.long))
    assert tied.counts == (10, 0, 0, 0, 0) and tied.val_confidence[0] == 0.25
    saturated_logits = torch.tensor([[1e4, -1e4]] * 6)
    saturated = build_loss("adafocal", n_bins=5).update(saturated_logits, torch.zeros(6, dtype=torch.long))
    assert saturated.gammas == (1.0,) * 5  # C_val = A_val = 1: no change


# --- adafocal_gamma_update ------------------------------------------------------------------------------------------


def test_gamma_update_at_the_switch_threshold_and_its_input_checks():
    new = adafocal_gamma_update([0.0, 0.2, -0.2, 1.0, -1.0], [0.0, 0.0, 0.0, 0.1, -0.1], [1, 1, 1, 1, 0])
    np.testing.assert_allclose(new, [-0.2, 0.2, -0.2, math.exp(0.1), -1.0], rtol=1e-15)
    with pytest.raises(InputError, match="one value per bin"):
        adafocal_gamma_update([1.0, 1.0], [0.1], [1, 1])
    with pytest.raises(InputError, match="finite"):
        adafocal_gamma_update([float("nan"), 1.0], [0.1, 0.1], [1, 1])


# --- state ---------------------------------------------------------------------------------------------------------


def test_adafocal_state_round_trip_is_exact_and_continues_identically():
    loss = _trained_adafocal()
    fresh = build_loss("adafocal", n_bins=5)
    fresh.load_state_dict(loss.state_dict())
    for key, value in loss.state_dict().items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(fresh.state_dict()[key], value)
    assert [r.to_dict() for r in fresh.history] == [r.to_dict() for r in loss.history]
    logits, labels = _batch(50, 3, seed=9)
    assert loss.update(logits, labels).to_dict() == fresh.update(logits, labels).to_dict()


def _tampered(loss, change):
    state = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in loss.state_dict().items()}
    state["_extra_state"] = json.loads(json.dumps(state["_extra_state"]))
    change(state)
    return state


def _set(key, index, value):
    def change(state):
        state[key][index] = value

    return change


def _history(key, value):
    def change(state):
        state["_extra_state"]["history"][0][key] = value

    return change


@pytest.mark.parametrize(
    "change, match",
    [
        (_set("gammas", 0, float("nan")), "gammas to be finite"),
        (_set("gammas", 1, float("inf")), "gammas to be finite"),
        (_set("gammas", 2, 25.0), "gammas between gamma_min=-2 and gamma_max=20"),
        (_set("gammas", 2, -3.0), "gammas between"),
        (_set("bin_edges", 1, float("nan")), "bin_edges to be finite"),
        (_set("bin_edges", 1, 0.99), "non-decreasing"),
        (_set("bin_edges", 0, 0.1), "rise from 0 to 1"),
        (_set("bin_edges", 5, 0.95), "rise from 0 to 1"),
        (_set("train_count", 0, -1), "train_count to be at least 0"),
        (_set("train_confidence_sum", 0, float("nan")), "train_confidence_sum to be finite"),
        (lambda s: s.update(gammas=s["gammas"][:3]), r"gammas of shape \(5,\).*got shape \(3,\)"),
        (lambda s: s.update(train_count=s["train_count"][:4]), r"train_count of shape \(5,\)"),
        (_history("gammas", [1.0] * 3), "history record to hold 5 gammas"),
        (_history("edges", "abc"), "history record to hold 6 edges"),
        (_history("val_accuracy", [float("nan")] * 5), "history val_accuracy to be finite"),
    ],
)
def test_a_tampered_adafocal_state_is_refused_and_leaves_the_loss_unchanged(change, match):
    loss = _trained_adafocal()
    target = build_loss("adafocal", n_bins=5)
    before = {k: v.clone() for k, v in target.state_dict().items() if isinstance(v, torch.Tensor)}
    with pytest.raises(CheckpointError, match=match):
        target.load_state_dict(_tampered(loss, change))
    for key, value in before.items():
        assert torch.equal(target.state_dict()[key], value)
    assert target.history == []


def test_gammas_inside_the_switch_band_are_valid_state():
    loss = build_loss("adafocal", n_bins=3, gamma_init=0.0)  # γ = 0 is a valid start
    fresh = build_loss("adafocal", n_bins=3)
    fresh.load_state_dict(loss.state_dict())
    assert fresh.gammas.tolist() == [0.0, 0.0, 0.0]


def test_state_across_a_change_of_n_bins_is_a_checkpoint_error():
    with pytest.raises(CheckpointError, match="n_bins=6, got one with 5 bins"):
        build_loss("adafocal", n_bins=6).load_state_dict(_trained_adafocal().state_dict())


@pytest.mark.parametrize(
    "key, index, value, match",
    [
        ("val_accuracy", 0, 1.5, r"val_accuracy in \[0, 1\]"),
        ("val_confidence", 0, float("nan"), "val_confidence to be finite"),
        ("val_count", 0, -2, "val_count to be at least 0"),
        ("bin_edges", 2, 0.0, "non-decreasing"),
    ],
)
def test_a_tampered_calfocal_state_is_refused(key, index, value, match):
    loss = build_loss("calfocal", n_bins=4)
    loss.update(*_batch(40, 3, seed=7))
    state = loss.state_dict()
    state[key] = state[key].clone()
    state[key][index] = value
    with pytest.raises(CheckpointError, match=match):
        build_loss("calfocal", n_bins=4).load_state_dict(state)


# --- records ---------------------------------------------------------------------------------------------------------


def test_records_hold_plain_json_ready_values_however_they_are_built():
    record = BinUpdate(
        edges=np.array([0.0, 0.5, 1.0]),
        gammas=[np.float32(1.5), np.nan],
        val_confidence=(np.float64(0.25), np.inf),
        val_accuracy=torch.tensor([0.1, 0.2], dtype=torch.float64),
        counts=[np.int64(3), np.int32(0)],
    )
    data = record.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data == {
        "edges": [0.0, 0.5, 1.0],
        "gammas": [1.5, None],
        "val_confidence": [0.25, None],
        "val_accuracy": [0.1, 0.2],
        "counts": [3, 0],
    }
    assert all(type(v) is float for v in data["edges"]) and all(type(c) is int for c in data["counts"])
    assert BinUpdate.from_dict(data).to_dict() == data


def test_train_statistics_are_json_ready_and_merge_with_nulls():
    stats = TrainBinStatistics.from_sums(np.array([1.0, np.nan, 0.0]), np.array([2.0, 1.0, 0.0]))
    assert json.loads(json.dumps(stats.to_dict(), allow_nan=False)) == {
        "train_confidence": [0.5, None, 0.0],
        "train_counts": [2, 1, 0],
    }
    merged = TrainBinStatistics.merge([stats, stats.to_dict()])
    assert merged.train_counts == (4, 2, 0) and merged.train_confidence[0] == 0.5
    json.dumps(merged.to_dict(), allow_nan=False)


@pytest.mark.parametrize("name", ["adafocal", "calfocal"])
def test_real_update_records_serialise_strictly(name):
    loss = build_loss(name, n_bins=15)
    loss.update(torch.randn(4, 3), torch.tensor([0, 1, 2, 0]))  # fewer samples than bins: empty bins
    for record in loss.history:
        data = record.to_dict()
        json.dumps(data, allow_nan=False)
        assert all(type(v) is float for v in data["edges"] + data["val_confidence"] + data["val_accuracy"])
        assert all(type(c) is int for c in data["counts"])
