"""adacal.ood: OOD scores and metrics against sklearn on independently computed scores, temperature, loaders."""

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from adacal import ood
from adacal.errors import InputError, UnknownNameError
from adacal.predictions import Predictions
from adacal.reports import make_report, write_json

RNG = np.random.default_rng(0)
IN_LOGITS = RNG.normal(0.0, 1.0, size=(300, 5)) + 4.0 * np.eye(5)[RNG.integers(0, 5, 300)]
OUT_LOGITS = RNG.normal(0.0, 1.5, size=(200, 5))


def _softmax(logits):
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _entropy(logits):
    p = _softmax(logits)
    return -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=1)


def _reference_scores(name, logits):
    if name == "entropy":
        return _entropy(logits)
    if name == "max-prob":
        return 1.0 - _softmax(logits).max(axis=1)
    m = logits.max(axis=1)
    return -(m + np.log(np.exp(logits - m[:, None]).sum(axis=1)))  # energy: -logsumexp


def _truth(n_in, n_out):
    return np.r_[np.zeros(n_in), np.ones(n_out)]


@pytest.mark.parametrize("score", ood.OOD_SCORES)
def test_auroc_and_aupr_match_sklearn_on_independent_scores(score):
    results = ood.detect_ood(IN_LOGITS, OUT_LOGITS, scores=[score])
    pre = results["scores"][score]["pre"]
    s = np.r_[_reference_scores(score, IN_LOGITS), _reference_scores(score, OUT_LOGITS)]
    y = _truth(len(IN_LOGITS), len(OUT_LOGITS))
    assert pre["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert pre["aupr_out"] == pytest.approx(average_precision_score(y, s), abs=1e-9)
    assert pre["aupr_in"] == pytest.approx(average_precision_score(1 - y, -s), abs=1e-9)
    assert 0.5 < pre["auroc"] <= 1.0
    assert results["scores"][score]["post"] is None


def test_fpr_at_95_tpr_matches_a_slow_count():
    pre = ood.detect_ood(IN_LOGITS, OUT_LOGITS)["scores"]["entropy"]["pre"]
    s_in, s_out = _entropy(IN_LOGITS), _entropy(OUT_LOGITS)
    # The smallest FPR over thresholds that flag at least 95% of the OOD samples.
    best = min(np.mean(s_in >= t) for t in np.r_[s_in, s_out] if np.mean(s_out >= t) >= 0.95)
    assert pre["fpr_at_95_tpr"] == pytest.approx(best, abs=1e-12)


def test_identical_sets_give_auroc_one_half():
    pre = ood.detect_ood(IN_LOGITS, IN_LOGITS.copy(), scores=ood.OOD_SCORES)["scores"]
    for name in ood.OOD_SCORES:
        assert pre[name]["pre"]["auroc"] == pytest.approx(0.5, abs=1e-12)


def test_separable_sets_give_auroc_one():
    confident = 20.0 * np.eye(4)[RNG.integers(0, 4, 100)]
    uniform = RNG.normal(0, 0.01, size=(80, 4))
    entry = ood.detect_ood(confident, uniform, scores="entropy,max-prob")["scores"]
    for name in ("entropy", "max-prob"):
        assert entry[name]["pre"]["auroc"] == pytest.approx(1.0)
        assert entry[name]["pre"]["fpr_at_95_tpr"] == pytest.approx(0.0)
        roc = entry[name]["pre"]["roc"]
        assert len(roc["fpr"]) == len(roc["tpr"]) >= 2
        assert roc["fpr"][0] == 0.0 and roc["tpr"][-1] == 1.0


def test_temperature_post_uses_logits_over_t():
    t = 2.5
    results = ood.detect_ood(IN_LOGITS, OUT_LOGITS, scores=ood.OOD_SCORES, temperature=t)
    assert results["temperature"] == t and results["temperature_source"] == "option"
    y = _truth(len(IN_LOGITS), len(OUT_LOGITS))
    for name in ("entropy", "max-prob"):
        pre, post = results["scores"][name]["pre"], results["scores"][name]["post"]
        assert post["auroc"] != pytest.approx(pre["auroc"], abs=1e-6)
        s = np.r_[_reference_scores(name, IN_LOGITS / t), _reference_scores(name, OUT_LOGITS / t)]
        assert post["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    scaled = ood.detect_ood(IN_LOGITS / t, OUT_LOGITS / t, scores=ood.OOD_SCORES)
    for name in ood.OOD_SCORES:
        assert results["scores"][name]["post"] == scaled["scores"][name]["pre"]


def test_results_follow_the_ood_json_schema(tmp_path):
    results = ood.detect_ood(IN_LOGITS, OUT_LOGITS, scores=["energy"], temperature=1.5, temperature_source="fitted",
                             in_name="cifar10", out_name="svhn")
    assert results["in"] == {"name": "cifar10", "n": 300}
    assert results["out"] == {"name": "svhn", "n": 200}
    assert results["temperature_source"] == "fitted"
    assert set(results["scores"]) == {"energy"}
    for part in ("pre", "post"):
        assert set(results["scores"]["energy"][part]) == {"auroc", "aupr_in", "aupr_out", "fpr_at_95_tpr", "roc"}
    report = ood.ood_report(results, config={"in": "cifar10"})
    write_json(tmp_path / "ood.json", report)
    loaded = json.loads((tmp_path / "ood.json").read_text())
    assert loaded["kind"] == "ood" and loaded["schema_version"] == 1
    assert loaded["results"]["scores"]["energy"]["post"]["auroc"] == pytest.approx(
        results["scores"]["energy"]["post"]["auroc"]
    )


def test_ood_scores_matches_reference_and_accepts_torch():
    for name in ood.OOD_SCORES:
        np.testing.assert_allclose(ood.ood_scores(torch.tensor(IN_LOGITS), name), _reference_scores(name, IN_LOGITS),
                                   rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ood.ood_scores(IN_LOGITS, "entropy", temperature=3.0), _entropy(IN_LOGITS / 3.0))


def test_a_temperature_applies_to_probabilities_for_the_softmax_scores_only():
    """softmax(log p / T) = softmax(logits / T): entropy and max-prob of probabilities after a temperature equal those
    of the logits; energy (−T logsumexp(x / T)) is not invariant to the per-row constant, so it is refused."""
    from adacal.arrays import softmax

    t = 2.5
    probs_in, probs_out = softmax(IN_LOGITS.astype(np.float64)), softmax(OUT_LOGITS.astype(np.float64))
    from_logits = ood.detect_ood(IN_LOGITS, OUT_LOGITS, scores=["entropy", "max-prob"], temperature=t)
    from_probs = ood.detect_ood(probs_in, probs_out, scores=["entropy", "max-prob"], temperature=t)
    for name in ("entropy", "max-prob"):
        for key in ("auroc", "aupr_in", "aupr_out", "fpr_at_95_tpr"):
            assert from_probs["scores"][name]["post"][key] == pytest.approx(
                from_logits["scores"][name]["post"][key], abs=1e-9)
    with pytest.raises(InputError, match="energy score with a temperature, but they look like probabilities"):
        ood.detect_ood(probs_in, probs_out, scores=["entropy", "energy"], temperature=t)
    # the per-sample scores too (they divided p itself by T), in both modules
    from adacal.metrics.ood import ood_scores as metric_scores

    for name in ("entropy", "max-prob"):
        for scores_of in (ood.ood_scores, metric_scores):
            np.testing.assert_allclose(scores_of(probs_in, name, temperature=t),
                                       scores_of(IN_LOGITS, name, temperature=t),
                                       rtol=1e-9, atol=1e-12)
    with pytest.raises(InputError, match="energy score with a temperature"):
        metric_scores(probs_in, "energy", temperature=t)


def test_a_binary_models_one_score_per_sample_is_read_as_the_metrics_read_it():
    """Sigmoid outputs p (N,) or (N, 1) are the columns [1 − p, p], decision scores s the columns [0, s]; the CLI's
    file readers expand them the same way."""
    rng = np.random.default_rng(3)
    s_in, s_out = 3.0 * rng.standard_normal(40) + 2.0, 0.5 * rng.standard_normal(30)
    as_columns = ood.detect_ood(np.stack([np.zeros(40), s_in], 1), np.stack([np.zeros(30), s_out], 1),
                                scores=["entropy", "max-prob"], temperature=2.0)
    assert ood.detect_ood(s_in, s_out[:, None], scores=["entropy", "max-prob"], temperature=2.0) == as_columns
    p_in, p_out = 1 / (1 + np.exp(-s_in)), 1 / (1 + np.exp(-s_out))
    from_probs = ood.detect_ood(p_in, p_out, scores=["entropy", "max-prob"])
    for name in ("entropy", "max-prob"):
        assert from_probs["scores"][name]["pre"]["auroc"] == pytest.approx(
            as_columns["scores"][name]["pre"]["auroc"], abs=1e-12)
    np.testing.assert_allclose(ood.ood_scores(p_in, "max-prob"), 1 - np.maximum(p_in, 1 - p_in), atol=1e-12)


@pytest.mark.parametrize(
    ("in_logits", "out_logits", "kwargs", "match"),
    [
        (IN_LOGITS, OUT_LOGITS[:, :4], {}, "same number of classes, got 5 and 4"),
        (np.full((3, 5), np.nan), OUT_LOGITS, {}, "finite"),
        (IN_LOGITS, np.zeros((0, 5)), {}, "at least one sample"),
        (IN_LOGITS, OUT_LOGITS, {"scores": ["entropy", "maxprob"]},
         "Unknown OOD score 'maxprob'. Did you mean 'max-prob'"),
        (IN_LOGITS, OUT_LOGITS, {"scores": ""}, "--scores"),
        (IN_LOGITS, OUT_LOGITS, {"temperature": 0.0}, "positive number"),
        (IN_LOGITS, OUT_LOGITS, {"temperature": float("nan")}, "positive number"),
    ],
)
def test_detect_ood_rejects_bad_input(in_logits, out_logits, kwargs, match):
    with pytest.raises(InputError, match=match):
        ood.detect_ood(in_logits, out_logits, **kwargs)


def test_load_ood_logits_without_labels_and_from_split_files(tmp_path):
    np.savez(tmp_path / "only.npz", logits=IN_LOGITS.astype(np.float32))
    np.testing.assert_allclose(ood.load_ood_logits(tmp_path / "only.npz"), IN_LOGITS.astype(np.float32))
    np.savez(tmp_path / "preds.npz", val_logits=OUT_LOGITS, val_labels=np.zeros(200, dtype=np.int64),
             test_logits=IN_LOGITS, test_labels=np.zeros(300, dtype=np.int64))
    np.testing.assert_allclose(ood.load_ood_logits(tmp_path / "preds.npz"), IN_LOGITS)
    val = ood.load_validation_predictions(tmp_path / "preds.npz")
    assert val is not None and val.logits.shape == (200, 5)
    assert ood.load_validation_predictions(tmp_path / "only.npz") is None
    torch.save({"logits": torch.tensor(OUT_LOGITS)}, tmp_path / "out.pt")
    np.testing.assert_allclose(ood.load_ood_logits(tmp_path / "out.pt"), OUT_LOGITS)
    np.savez(tmp_path / "bad.npz", activations=IN_LOGITS)
    with pytest.raises(InputError, match="contain logits or test_logits .*; it has: activations"):
        ood.load_ood_logits(tmp_path / "bad.npz")
    with pytest.raises(InputError, match="does not exist"):
        ood.load_ood_logits(tmp_path / "missing.npz")


def _calibrate_report(path, calibrators, best):
    write_json(path, make_report("calibrate", config={}, results={"calibrators": calibrators, "best": best}))


def test_temperature_from_calibrate_json(tmp_path):
    path = tmp_path / "calibrate.json"
    _calibrate_report(path, {"temperature": {"params": {"temperature": 1.7}}, "ets": {"params": {"temperature": 1.2}}},
                      "ets")
    assert ood.temperature_from_calibration(path) == 1.7
    _calibrate_report(path, {"spline": {"params": {}}, "ets": {"params": {"temperature": 1.2}}}, "ets")
    assert ood.temperature_from_calibration(path) == 1.2
    _calibrate_report(path, {"spline": {"params": {}}}, "spline")
    assert ood.temperature_from_calibration(path) is None
    assert ood.resolve_temperature(calibration=path) == (None, "none")
    write_json(path, make_report("evaluate", config={}, results={}))
    with pytest.raises(InputError, match="report of kind 'calibrate'"):
        ood.temperature_from_calibration(path)


def test_resolve_temperature_precedence(tmp_path):
    path = tmp_path / "calibrate.json"
    _calibrate_report(path, {"temperature": {"params": {"temperature": 1.7}}}, "temperature")
    assert ood.resolve_temperature(temperature=2.0, calibration=path) == (2.0, "option")
    assert ood.resolve_temperature(calibration=path) == (1.7, "calibrate.json")
    assert ood.resolve_temperature(calibration=tmp_path / "absent.json") == (None, "none")
    assert ood.resolve_temperature() == (None, "none")
    with pytest.raises(InputError, match="not both"):
        ood.resolve_temperature(temperature=2.0, fit=True)
    with pytest.raises(InputError, match="validation logits"):
        ood.resolve_temperature(fit=True)


def test_fit_temperature_cools_overconfident_logits():
    pytest.importorskip("adacal.calibrators")
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, 600)
    # Logits whose softmax is far too confident for ~60% accuracy: the fitted T must be > 1.
    predicted = np.where(rng.random(600) < 0.6, labels, rng.integers(0, 4, 600))
    logits = 8.0 * np.eye(4)[predicted] + rng.normal(0, 0.5, (600, 4))
    value, source = ood.resolve_temperature(fit=True, val=Predictions(logits=logits, labels=labels))
    assert source == "fitted" and value > 1.5


def test_check_ood_options():
    pytest.importorskip("adacal.data")
    assert (ood.check_ood_options(in_name="CIFAR10", out_name="cifar10-c")
            == ("cifar10", "cifar10-c", "gaussian_noise", 5))
    assert ood.check_ood_options(in_name="cifar10", out_name="svhn") == ("cifar10", "svhn", None, None)
    with pytest.raises(UnknownNameError, match="Unknown dataset 'cifar1O'.*Choices:.*cifar10"):
        ood.check_ood_options(in_name="cifar1O", out_name="svhn")
    with pytest.raises(UnknownNameError, match="Unknown OOD dataset 'svhm'. Did you mean 'svhn'"):
        ood.check_ood_options(in_name="cifar10", out_name="svhm")
    with pytest.raises(InputError, match="--severity to be an integer from 1 to 5, got 6"):
        ood.check_ood_options(in_name="cifar10", out_name="cifar10-c", severity=6)
    assert (ood.check_ood_options(in_name="cifar10", out_name="svhn", severity=3)
            == ("cifar10", "svhn", "gaussian_noise", 3))
    with pytest.raises(UnknownNameError, match="Unknown corruption 'gausian_noise'. Did you mean 'gaussian_noise'"):
        ood.check_ood_options(in_name="cifar10", out_name="cifar10-c", corruption="gausian_noise")
    with pytest.raises(InputError, match="does not exist"):
        ood.check_ood_options(in_name="cifar10", out_name="nowhere/ood.npz")
