"""The CORP decomposition (adacal.metrics.decomposition): the identity S = MCB − DSC + UNC, MCB = 0 for an
isotonic-calibrated forecast, PAV against a slow loop, S equal to adacal's metrics, and equality with
model-diagnostics' `decompose` (the peer) on the same inputs."""

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.metrics import brier, prepare_predictions, top_label_metrics
from adacal.metrics.decomposition import (
    classwise_brier_decomposition,
    corp_curve,
    corp_decomposition,
    decompositions_of,
    pav_recalibrate,
    top_label_decomposition,
)


def _binary(seed=0, n=400, truth=lambda x: x**2, decimals=2):
    """Forecasts rounded to `decimals` (so there are ties) and outcomes drawn from truth(forecast)."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0.02, 0.98, n), decimals)
    return x, (rng.random(n) < truth(x)).astype(float)


def _slow_pav(x, y):
    """Pool-adjacent-violators by a loop over the distinct forecasts (tied forecasts pooled first)."""
    values = sorted(set(x.tolist()))
    blocks = [[float(y[x == v].sum()), float((x == v).sum()), [v]] for v in values]
    merged = []
    for block in blocks:
        merged.append(block)
        while len(merged) > 1 and merged[-2][0] / merged[-2][1] > merged[-1][0] / merged[-1][1]:
            top = merged.pop()
            merged[-1] = [merged[-1][0] + top[0], merged[-1][1] + top[1], merged[-1][2] + top[2]]
    fit = {v: s / c for s, c, members in merged for v in members}
    return np.array([fit[v] for v in x.tolist()])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pav_equals_slow_loop(seed):
    x, y = _binary(seed, n=150, decimals=1)
    assert np.allclose(pav_recalibrate(x, y), _slow_pav(x, y), atol=1e-12)


@pytest.mark.parametrize("score", ["brier", "log-loss"])
@pytest.mark.parametrize("truth", [lambda x: x, lambda x: x**2, lambda x: np.sqrt(x)])
def test_identity_and_signs(score, truth):
    x, y = _binary(3, truth=truth)
    d = corp_decomposition(x, y, score=score)
    assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=1e-12)
    assert d.miscalibration >= -1e-12 and d.discrimination >= -1e-12
    base = y.mean()
    expected_unc = base * (1 - base) if score == "brier" else -(base * np.log(base) + (1 - base) * np.log(1 - base))
    assert d.uncertainty == pytest.approx(expected_unc, abs=1e-12)


@pytest.mark.parametrize("score", ["brier", "log-loss"])
def test_isotonic_calibrated_forecast_has_no_miscalibration(score):
    x, y = _binary(4)
    recalibrated = pav_recalibrate(x, y)
    before, after = corp_decomposition(x, y, score=score), corp_decomposition(recalibrated, y, score=score)
    assert after.miscalibration == pytest.approx(0.0, abs=1e-12)
    # Recalibrating keeps the ranking (up to pooling), so discrimination and uncertainty stay.
    assert after.discrimination == pytest.approx(before.discrimination, abs=1e-12)
    assert after.uncertainty == pytest.approx(before.uncertainty, abs=1e-12)
    # The climatology discriminates nothing.
    flat = corp_decomposition(np.full_like(x, y.mean()), y, score=score)
    assert flat.discrimination == pytest.approx(0.0, abs=1e-12) and flat.miscalibration == pytest.approx(0, abs=1e-12)


def test_scores_equal_adacal_metrics():
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(300, 4)) * 2
    labels = rng.integers(0, 4, 300)
    pred = prepare_predictions(logits, labels)
    metrics = top_label_metrics(pred.confidences, pred.correct, names=["brier-top", "nll-correct"])
    assert top_label_decomposition(pred, "brier").score == pytest.approx(metrics["brier_top"], abs=1e-12)
    assert top_label_decomposition(pred, "log-loss").score == pytest.approx(metrics["nll_correct"], abs=1e-12)
    whole = classwise_brier_decomposition(pred)
    assert whole.score == pytest.approx(brier(logits, labels), abs=1e-12)
    assert whole.score == pytest.approx(whole.miscalibration - whole.discrimination + whole.uncertainty, abs=1e-12)
    # UNC of the per-class Brier: Σ_k π_k (1 − π_k), π_k the class frequencies.
    freq = np.bincount(labels, minlength=4) / 300
    assert whole.uncertainty == pytest.approx(np.sum(freq * (1 - freq)), abs=1e-12)


def _peer(y, x, score):
    scoring = pytest.importorskip("model_diagnostics.scoring", reason="model-diagnostics is the CORP peer")
    function = scoring.SquaredError() if score == "brier" else scoring.LogLoss()
    frame = scoring.decompose(y, x, scoring_function=function)
    return {column: float(frame[column][0]) for column in ("score", "miscalibration", "discrimination",
                                                            "uncertainty")}


@pytest.mark.parametrize("score", ["brier", "log-loss"])
@pytest.mark.parametrize("seed", [0, 7])
def test_equals_model_diagnostics(score, seed):
    x, y = _binary(seed, n=500)
    ours = corp_decomposition(x, y, score=score)._asdict()
    peer = _peer(y, x, score)
    for key, value in peer.items():
        assert ours[key] == pytest.approx(value, abs=1e-10), key


def test_top_label_and_per_class_equal_model_diagnostics():
    rng = np.random.default_rng(8)
    logits = np.round(rng.normal(size=(400, 3)) * 1.5, 1)  # rounded: tied confidences
    labels = rng.integers(0, 3, 400)
    pred = prepare_predictions(logits, labels)
    for score in ("brier", "log-loss"):
        ours = top_label_decomposition(pred, score)._asdict()
        peer = _peer(pred.correct, pred.confidences, score)
        assert all(ours[key] == pytest.approx(value, abs=1e-10) for key, value in peer.items())
    parts = [_peer((labels == k).astype(float), pred.probs[:, k], "brier") for k in range(3)]
    ours = classwise_brier_decomposition(pred)._asdict()
    for key in parts[0]:
        assert ours[key] == pytest.approx(sum(part[key] for part in parts), abs=1e-10), key


def test_report_block_and_notes(monkeypatch):
    pred = prepare_predictions(np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1, [0, 1, 1, 0])
    block, notes = decompositions_of(pred)
    assert set(block) == {"brier_top", "nll_correct", "brier"} and notes == []
    monkeypatch.setattr("adacal.metrics.decomposition.MAX_CLASSWISE_CELLS", 5)
    block, notes = decompositions_of(pred)
    assert "brier" not in block and "per-class" in notes[0]


def test_corp_curve_band():
    x, y = _binary(9, n=600, truth=lambda x: x)
    curve = corp_curve(x, y, n_resamples=100, seed=2)
    assert np.all(np.diff(curve.forecasts) > 0) and curve.counts.sum() == 600
    assert np.all(np.diff(curve.recalibrated) >= -1e-12)
    assert np.all(curve.band_low <= curve.band_high)
    # Drawn calibrated: the curve lies mostly inside its 90 % pointwise band; drawn as x², mostly outside.
    inside = (curve.recalibrated >= curve.band_low - 1e-12) & (curve.recalibrated <= curve.band_high + 1e-12)
    assert np.average(inside, weights=curve.counts) > 0.75
    x2, y2 = _binary(9, n=600, truth=lambda x: x**2)
    off = corp_curve(x2, y2, n_resamples=100, seed=2)
    inside = (off.recalibrated >= off.band_low) & (off.recalibrated <= off.band_high)
    assert np.average(inside, weights=off.counts) < 0.5
    again = corp_curve(x, y, n_resamples=100, seed=2)
    assert np.array_equal(again.band_low, curve.band_low)
    assert corp_curve(x, y, n_resamples=0).band_low is None


def test_bad_inputs():
    with pytest.raises(InputError, match="outcome per forecast"):
        corp_decomposition([0.5, 0.6], [1])
    with pytest.raises(InputError, match="in \\[0, 1\\]"):
        corp_decomposition([1.5], [1])
    with pytest.raises(InputError, match="0 or 1"):
        corp_decomposition([0.5], [0.5])
    with pytest.raises(InputError, match="score to be one of"):
        corp_decomposition([0.5], [1], score="crps")
    with pytest.raises(InputError, match="level"):
        corp_curve([0.5], [1], level=1.0)
