"""Split conformal: the quantile against a hand count, coverage over many random splits of exchangeable data (a broken
quantile fails it), class-conditional coverage, row-wise sets, the saved form, and the one-line refusals."""

import json
import math

import numpy as np
import pytest

import adacal.conformal.predictor as predictor_module
from adacal.arrays import softmax
from adacal.conformal import ConformalPredictor, conformal_quantile, quantile_rank
from adacal.errors import InputError, NotFittedError

K = 5


def _data(n, rng):
    """Exchangeable rows: logits from a Gaussian, labels drawn from a tempered softmax (a miscalibrated model)."""
    logits = rng.normal(size=(n, K)) * 2.0
    probs = softmax(logits / 1.5)
    labels = (rng.random((n, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
    return logits, labels


def test_the_quantile_is_the_hand_counted_order_statistic():
    scores = np.random.default_rng(0).permutation(np.arange(1, 11) / 10)  # 0.1 .. 1.0, shuffled
    # n = 10, α = 0.2: ⌈11 × 0.8⌉ = ⌈8.8⌉ = 9 → the 9th smallest, 0.9
    assert quantile_rank(10, 0.2) == 9 and conformal_quantile(scores, 0.2) == 0.9
    # α = 0.1: ⌈11 × 0.9⌉ = ⌈9.9⌉ = 10 → 1.0; α = 0.5: ⌈5.5⌉ = 6 → 0.6
    assert conformal_quantile(scores, 0.1) == 1.0 and conformal_quantile(scores, 0.5) == 0.6
    # (n+1)(1−α) an integer in exact arithmetic, not in floats: n = 99, α = 0.1 → 90; n = 19, α = 0.05 → 19
    assert quantile_rank(99, 0.1) == 90 and quantile_rank(19, 0.05) == 19 and quantile_rank(39, 0.025) == 39
    # the count: at least ⌈(n+1)(1−α)⌉ of the n scores are at most q
    for alpha in (0.05, 0.1, 0.25, 0.5):
        many = np.random.default_rng(1).random(200)
        q = conformal_quantile(many, alpha)
        rank = math.ceil(201 * (1 - alpha))
        assert (many <= q).sum() == rank and (many < q).sum() == rank - 1


def test_a_validation_set_too_small_for_alpha_is_refused_naming_n_and_alpha():
    assert quantile_rank(9, 0.1) == 9  # n = 1/α − 1 is enough
    with pytest.raises(InputError, match=r"n=8.*alpha=0\.1|alpha=0\.1.*n=8"):
        quantile_rank(8, 0.1)
    logits, labels = _data(15, np.random.default_rng(0))
    with pytest.raises(InputError, match="n=15") as caught:
        ConformalPredictor("thr", alpha=0.05).fit(logits, labels)
    assert "\n" not in str(caught.value) and "alpha=0.05" in str(caught.value)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "0.1", True, None])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha):
    logits, labels = _data(50, np.random.default_rng(0))
    with pytest.raises(InputError, match="alpha"):
        ConformalPredictor("aps", alpha=alpha).fit(logits, labels)


def _broken_floor_rank(calibration_scores, alpha, *, what=""):
    values = np.sort(np.asarray(calibration_scores))
    return float(values[math.ceil(values.size * (1 - alpha)) - 1])  # ⌈n(1−α)⌉: one rank short


def _broken_plain_quantile(calibration_scores, alpha, *, what=""):
    return float(np.quantile(calibration_scores, 1 - alpha))  # numpy's linear interpolation, no (n+1)


N_VAL, N_TEST, SPLITS, ALPHA = 100, 400, 1000, 0.1


def _mean_coverage(score, quantile, **options):
    """Mean and standard error of the test coverage over SPLITS seeded splits of fresh exchangeable data."""
    rng = np.random.default_rng(2024)
    coverages = []
    for _ in range(SPLITS):
        logits, labels = _data(N_VAL + N_TEST, rng)
        predictor = ConformalPredictor(score, alpha=ALPHA, **options).fit(logits[:N_VAL], labels[:N_VAL])
        sets = predictor.predict_sets(logits[N_VAL:])
        coverages.append(sets[np.arange(N_TEST), labels[N_VAL:]].mean())
    coverages = np.array(coverages)
    return coverages.mean(), coverages.std(ddof=1) / math.sqrt(SPLITS)


def _band(stderr):
    return 4 * stderr  # the split-to-split spread (beta-binomial) of the mean, at 4 standard errors


@pytest.mark.parametrize(("score", "options"), [("thr", {}), ("aps", {}), ("aps", {"randomized": False}),
                                                 ("raps", {"k_reg": 1, "lam": 0.1})])
def test_coverage_over_random_splits_is_one_minus_alpha_exactly(score, options):
    mean, stderr = _mean_coverage(score, conformal_quantile, **options)
    # continuous scores: E[coverage] = ⌈(n+1)(1−α)⌉/(n+1) = 91/101, in [1−α, 1−α + 1/(n+1))
    assert 1 - ALPHA - _band(stderr) <= mean <= 1 - ALPHA + 1 / (N_VAL + 1) + _band(stderr)
    assert abs(mean - 91 / 101) <= _band(stderr)
    assert _band(stderr) < 0.5 / (N_VAL + 1)  # tight enough to tell one rank of the quantile


def test_topk_coverage_is_at_least_one_minus_alpha():
    mean, stderr = _mean_coverage("topk", conformal_quantile)
    assert mean >= 1 - ALPHA - _band(stderr)


@pytest.mark.parametrize("broken", [_broken_floor_rank, _broken_plain_quantile])
def test_a_broken_quantile_fails_the_coverage_test(broken, monkeypatch):
    monkeypatch.setattr(predictor_module, "conformal_quantile", broken)
    mean, stderr = _mean_coverage("aps", broken)
    assert mean < 1 - ALPHA - _band(stderr)


def test_class_conditional_coverage_holds_for_every_class():
    rng = np.random.default_rng(7)
    per_class = [[] for _ in range(K)]
    for _ in range(300):
        logits, labels = _data(600, rng)
        predictor = ConformalPredictor("aps", alpha=ALPHA, class_conditional=True).fit(logits[:300], labels[:300])
        assert len(predictor.quantile_) == K and sum(predictor.n_calibration_) == 300
        sets, truth = predictor.predict_sets(logits[300:]), labels[300:]
        covered = sets[np.arange(300), truth]
        for label in range(K):
            per_class[label].append(covered[truth == label].mean())
    for values in per_class:
        values = np.array(values)
        # each class's n_c ≈ 60: E[coverage] = ⌈(n_c+1)(1−α)⌉/(n_c+1) ≥ 1 − α
        assert values.mean() >= 1 - ALPHA - 4 * values.std(ddof=1) / math.sqrt(values.size)


def test_class_conditional_refuses_an_absent_or_too_small_class_naming_it():
    logits, labels = _data(400, np.random.default_rng(3))
    labels = np.where(labels == 3, 0, labels)
    with pytest.raises(InputError, match="class 3 is absent"):
        ConformalPredictor("thr", alpha=0.1, class_conditional=True).fit(logits, labels)
    labels[:5] = 3
    labels[5:] = np.where(labels[5:] == 3, 1, labels[5:])
    with pytest.raises(InputError, match="class 3 of the validation set.*n=5"):
        ConformalPredictor("thr", alpha=0.1, class_conditional=True).fit(logits, labels)
    with pytest.raises(InputError, match="class_conditional"):
        ConformalPredictor("thr", class_conditional="yes").fit(logits, labels)


@pytest.mark.parametrize(("score", "options"), [("thr", {}), ("aps", {}), ("raps", {"lam": 0.2}), ("topk", {}),
                                                 ("aps", {"class_conditional": True})])
@pytest.mark.parametrize("as_probs", [False, True])
def test_predict_sets_is_row_wise(score, options, as_probs):
    logits, labels = _data(300, np.random.default_rng(4))
    scores = softmax(logits) if as_probs else logits
    predictor = ConformalPredictor(score, alpha=0.2, **options).fit(scores[:200], labels[:200])
    assert predictor.fitted_on_ == ("probs" if as_probs else "logits")
    batch = predictor.predict_sets(scores[200:])
    assert batch.dtype == np.bool_ and batch.shape == (100, K)
    alone = np.vstack([predictor.predict_sets(scores[i:i + 1]) for i in range(200, 300)])
    assert (alone == batch).all()
    assert (predictor.predict_sets(scores[200:][::-1]) == batch[::-1]).all()


def test_logits_and_their_probabilities_give_the_same_sets():
    logits, labels = _data(300, np.random.default_rng(5))
    from_logits = ConformalPredictor("thr", alpha=0.1).fit(logits[:200], labels[:200])
    from_probs = ConformalPredictor("thr", alpha=0.1).fit(softmax(logits[:200]), labels[:200])
    assert from_logits.quantile_ == pytest.approx(from_probs.quantile_, abs=1e-12)
    assert (from_logits.predict_sets(logits[200:]) == from_probs.predict_sets(softmax(logits[200:]))).all()


def test_the_seed_changes_the_randomised_sets_only():
    logits, labels = _data(500, np.random.default_rng(6))
    a = ConformalPredictor("aps", alpha=0.1, seed=0).fit(logits[:300], labels[:300]).predict_sets(logits[300:])
    b = ConformalPredictor("aps", alpha=0.1, seed=1).fit(logits[:300], labels[:300]).predict_sets(logits[300:])
    assert (a != b).any()
    c = ConformalPredictor("aps", alpha=0.1, randomized=False, seed=0).fit(logits[:300], labels[:300])
    d = ConformalPredictor("aps", alpha=0.1, randomized=False, seed=1).fit(logits[:300], labels[:300])
    assert (c.predict_sets(logits[300:]) == d.predict_sets(logits[300:])).all()


@pytest.mark.parametrize(("score", "options"), [("thr", {}), ("aps", {"seed": 3}), ("raps", {"k_reg": 2, "lam": 0.5}),
                                                 ("topk", {"class_conditional": True})])
def test_the_saved_form_round_trips_through_json(score, options):
    logits, labels = _data(400, np.random.default_rng(8))
    predictor = ConformalPredictor(score, alpha=0.1, **options).fit(logits[:300], labels[:300])
    saved = json.loads(json.dumps(predictor.to_dict()))
    loaded = ConformalPredictor.from_dict(saved)
    assert loaded.to_dict() == predictor.to_dict()
    assert (loaded.predict_sets(logits[300:]) == predictor.predict_sets(logits[300:])).all()


def test_another_k_and_malformed_saved_forms_are_refused_in_one_line():
    logits, labels = _data(200, np.random.default_rng(9))
    predictor = ConformalPredictor("aps", alpha=0.1).fit(logits, labels)
    with pytest.raises(InputError, match="5 classes.*got 4") as caught:
        ConformalPredictor.from_dict(predictor.to_dict()).predict_sets(logits[:, :4])
    assert "\n" not in str(caught.value)
    saved = predictor.to_dict()
    for broken in ({**saved, "alpha": 2}, {k: v for k, v in saved.items() if k != "quantile"},
                   {**saved, "fitted_on": "percent"}, {**saved, "quantile": [0.1]}, {**saved, "method": "x"},
                   {**saved, "score": "nope"}, [1, 2]):
        with pytest.raises(InputError):
            ConformalPredictor.from_dict(broken)


def test_use_before_fit_and_bad_inputs_are_clear_errors():
    with pytest.raises(NotFittedError, match="fit"):
        ConformalPredictor().predict_sets(np.eye(3))
    with pytest.raises(NotFittedError):
        ConformalPredictor().to_dict()
    logits, labels = _data(50, np.random.default_rng(0))
    with pytest.raises(InputError, match="val_labels"):
        ConformalPredictor("thr").fit(logits, labels[:40])
    with pytest.raises(InputError, match="val_labels"):
        ConformalPredictor("thr").fit(logits, labels + K)
    with pytest.raises(InputError, match="seed"):
        ConformalPredictor("aps", seed=-1).fit(logits, labels)
    with pytest.raises(InputError, match="scores_kind"):
        ConformalPredictor("thr").fit(logits, labels, scores_kind="soft")


def test_a_logits_predictor_refuses_a_batch_of_probabilities_but_reads_one_row_as_fitted():
    logits, labels = _data(300, np.random.default_rng(10))
    predictor = ConformalPredictor("aps", alpha=0.1).fit(logits[:200], labels[:200])
    probs = softmax(logits[200:])
    with pytest.raises(InputError, match="scores_kind='probs'") as caught:
        predictor.predict_sets(probs)
    assert "\n" not in str(caught.value)
    as_probs = predictor.predict_sets(probs, scores_kind="probs")
    assert (as_probs == predictor.predict_sets(logits[200:])).all()  # softmax of the logits: the same sets
    alone = predictor.predict_sets(probs[:1])  # one row: read as logits, as fitted
    assert (alone == predictor.predict_sets(probs[:1], scores_kind="logits")).all()


def test_many_classes_keep_predict_sets_row_wise():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(120, 1000)) * 3
    labels = logits.argmax(axis=1)
    predictor = ConformalPredictor("raps", alpha=0.2, k_reg=3, lam=0.01).fit(logits[:100], labels[:100])
    batch = predictor.predict_sets(logits[100:])
    assert (np.vstack([predictor.predict_sets(logits[i:i + 1]) for i in range(100, 120)]) == batch).all()


def test_a_binary_model_s_one_score_per_sample_is_two_classes():
    rng = np.random.default_rng(12)
    p = rng.random(300)
    labels = (rng.random(300) < p).astype(int)
    predictor = ConformalPredictor("thr", alpha=0.2).fit(p[:200], labels[:200])
    two_columns = ConformalPredictor("thr", alpha=0.2).fit(np.column_stack([1 - p[:200], p[:200]]), labels[:200])
    assert predictor.num_classes_ == 2 and predictor.quantile_ == pytest.approx(two_columns.quantile_)
    assert (predictor.predict_sets(p[200:]) == two_columns.predict_sets(np.column_stack([1 - p[200:], p[200:]]))).all()


def test_a_saved_form_with_wrong_types_is_refused():
    logits, labels = _data(200, np.random.default_rng(13))
    saved = ConformalPredictor("aps", alpha=0.1, class_conditional=True).fit(logits, labels).to_dict()
    for broken in ({**saved, "class_conditional": "false"}, {**saved, "quantile": [0.5] * 4 + ["x"]},
                   {**saved, "quantile": [0.5] * 4 + [float("nan")]}, {**saved, "score_options": [1]},
                   {**saved, "num_classes": 0}):
        with pytest.raises(InputError):
            ConformalPredictor.from_dict(broken)
