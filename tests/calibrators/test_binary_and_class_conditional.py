"""#42 item 4: platt, beta, top-label-histogram / top-label-isotonic and scaling-binning, each against its peer on the
same inputs: scikit-learn's CalibratedClassifierCV(method="sigmoid"), a transcription of the authors' betacal,
MAPIE 1.6.0's TopLabelCalibrator, and a transcription of uncertainty-calibration 0.1.4's PlattBinnerTopCalibrator
(installed as `calibration`: the package itself where its import works)."""

import bisect
import json

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, softmax

from adacal.calibrators import (
    BetaCalibration,
    Calibrator,
    PlattScaling,
    ScalingBinning,
    TopLabelHistogramBinning,
    TopLabelIsotonicCalibration,
    build_calibrator,
)
from adacal.errors import InputError

from calibration_problems import make_problem


@pytest.fixture(scope="module")
def binary():
    """A binary model's decision scores (one per sample), too confident by 2.5x, with a shift."""
    rng = np.random.default_rng(3)
    scores = rng.normal(0.5, 3.0, size=600)
    labels = (rng.random(600) < expit(scores / 2.5 - 0.3)).astype(int)
    return scores, labels


@pytest.fixture(scope="module")
def multiclass():
    logits, labels = make_problem(n=900, k=4, sigma=3.0, true_temperature=2.0, seed=21)
    return logits, labels


class _Frozen:
    """A fitted 'classifier' whose decision_function returns the given columns (X is a row-index column)."""

    _estimator_type = "classifier"

    def __init__(self, decision, classes):
        self.decision, self.classes_ = decision, classes

    def fit(self, X, y):
        return self

    def decision_function(self, X):
        return self.decision[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return self.classes_[np.argmax(np.atleast_2d(self.decision_function(X).T).T, axis=1)]

    def get_params(self, deep=True):
        return {}

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags())


def _sklearn_sigmoid(decision, labels):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    classes = np.unique(labels)
    index = np.arange(len(labels))[:, None]
    calibrated = CalibratedClassifierCV(FrozenEstimator(_Frozen(decision, classes)), method="sigmoid")
    calibrated.fit(index, labels)
    return calibrated, index


def test_platt_equals_scikit_learn_sigmoid_on_a_binary_model(binary):
    from sklearn.calibration import _sigmoid_calibration

    scores, labels = binary
    calibrator = PlattScaling().fit(scores, labels)
    a, b = _sigmoid_calibration(scores, labels)
    summary = calibrator.summary()
    assert summary["slope"] == pytest.approx(-a, abs=1e-6) and summary["intercept"] == pytest.approx(-b, abs=1e-6)
    calibrated, index = _sklearn_sigmoid(scores, labels)
    np.testing.assert_allclose(calibrator.transform(scores), calibrated.predict_proba(index), atol=1e-6)
    # the same model given as probabilities (the log-odds of p is the score) or two-column logits: the same map
    probs = expit(scores)
    np.testing.assert_allclose(PlattScaling().fit(probs, labels).transform(probs), calibrator.transform(scores),
                               atol=1e-6)
    two_columns = np.stack([np.full_like(scores, 1.5), scores + 1.5], axis=1)
    np.testing.assert_allclose(PlattScaling().fit(two_columns, labels).transform(two_columns),
                               calibrator.transform(scores), atol=1e-9)


def test_platt_rescales_large_scores_as_scikit_learn_does(binary):
    from sklearn.calibration import _sigmoid_calibration

    scores, labels = binary
    large = scores * 40.0  # max |s| ≥ 30: scikit-learn divides by it before fitting
    a, b = _sigmoid_calibration(large, labels)
    summary = PlattScaling().fit(large, labels).summary()
    assert summary["slope"] == pytest.approx(-a, rel=1e-6) and summary["intercept"] == pytest.approx(-b, abs=1e-6)


def test_platt_one_vs_rest_equals_scikit_learn_on_the_class_log_odds(multiclass):
    logits, labels = multiclass
    probs = softmax(logits, axis=1)
    log_odds = np.log(probs) - np.log1p(-probs)  # what platt reads for K > 2
    calibrated, index = _sklearn_sigmoid(log_odds, labels)
    calibrator = PlattScaling().fit(logits, labels)
    np.testing.assert_allclose(calibrator.transform(logits), calibrated.predict_proba(index), atol=1e-6)
    assert calibrator.params_.shape == (4, 2)


def _betacal(p, y):
    """The authors' betacal `_beta_calibration` and its predict (parameters "abm"), transcribed; its
    LogisticRegression(C=99999999999) is given a tight tolerance (its default 1e-4 stops early)."""
    from sklearn.linear_model import LogisticRegression

    def lr():
        return LogisticRegression(C=99999999999, tol=1e-12, max_iter=10000)

    eps = np.finfo(np.float64).eps
    p = np.clip(p, eps, 1 - eps)
    x = np.log(np.stack([p, 1.0 - p], axis=1))
    x[:, 1] *= -1
    model = lr().fit(x, y)
    coefs, columns = model.coef_[0], [0, 1]
    if coefs[0] < 0:
        columns = [1]
        model = lr().fit(x[:, columns], y)
        a, b = 0.0, model.coef_[0][0]
    elif coefs[1] < 0:
        columns = [0]
        model = lr().fit(x[:, columns], y)
        a, b = model.coef_[0][0], 0.0
    else:
        a, b = coefs
    inter = model.intercept_[0]
    minimize_scalar(lambda mh: np.abs(b * np.log(1.0 - mh) - a * np.log(mh) - inter), bounds=[0, 1],
                    method="Bounded")  # the authors' m; adacal keeps c

    def predict(q):
        q = np.clip(q, eps, 1 - eps)
        z = np.log(np.stack([q, 1.0 - q], axis=1))
        z[:, 1] *= -1
        return model.predict_proba(z[:, columns])[:, 1]

    return (a, b, inter), predict


@pytest.mark.parametrize("shape", ["both", "b = 0"])
def test_beta_equals_the_authors_betacal(binary, shape):
    scores, labels = binary
    probs = expit(scores)
    if shape == "b = 0":  # outcomes less likely again near p = 1 (a negative b): betacal refits on ln p, b = 0
        rng = np.random.default_rng(4)
        probs = rng.uniform(0.01, 0.99, size=600)
        labels = (rng.random(600) < expit(2.0 * np.log(probs) + 1.5 * np.log1p(-probs) + 1.0)).astype(int)
    (a, b, c), predict = _betacal(probs, labels)
    calibrator = BetaCalibration().fit(probs, labels)
    assert (b == 0) == (shape == "b = 0")
    np.testing.assert_allclose(calibrator.params_[0], [a, b, c], atol=1e-5)
    grid = np.concatenate([probs[:50], [0.0, 1e-20, 0.5, 1.0 - 1e-12, 1.0]])
    np.testing.assert_allclose(calibrator.transform(grid)[:, 1], predict(grid), atol=1e-6)


def test_beta_contains_platt_on_log_odds_and_the_identity():
    """a = b: sigmoid(a · logit p + c), Platt's family on the log-odds; data drawn calibrated gives a ≈ b ≈ 1, c ≈ 0."""
    rng = np.random.default_rng(8)
    probs = rng.uniform(0.02, 0.98, size=20000)
    labels = (rng.random(20000) < probs).astype(int)
    a, b, c = BetaCalibration().fit(probs, labels).params_[0]
    assert abs(a - 1) < 0.08 and abs(b - 1) < 0.08 and abs(c) < 0.08


def _mapie_top_label(probs, labels, method):
    from mapie.calibration import TopLabelCalibrator
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Prefit(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.arange(probs.shape[1])
            return self

        def predict_proba(self, X):
            return probs[np.asarray(X)[:, 0].astype(int)]

        def predict(self, X):
            return self.predict_proba(X).argmax(axis=1)

    index = np.arange(len(labels))[:, None]
    estimator = Prefit().fit(index, labels)
    mapie = TopLabelCalibrator(estimator=estimator, calibrator=method, cv="prefit").fit(index, labels)
    return mapie, index


def test_top_label_isotonic_equals_mapie_top_label_calibrator(multiclass):
    logits, labels = multiclass
    probs = softmax(logits, axis=1)
    val, test = slice(0, 600), slice(600, None)
    mapie, _ = _mapie_top_label(probs[val], labels[val], "isotonic")
    calibrator = TopLabelIsotonicCalibration(min_rows=1).fit(logits[val], labels[val])
    assert all(inner is not None for inner in calibrator.class_maps_)  # every class predicted: a map each
    # MAPIE's maps on the test rows: its fitted per-class calibrators applied to each row's top confidence
    test_probs = probs[test]
    predicted, top = test_probs.argmax(axis=1), test_probs.max(axis=1)
    expected = np.array([mapie.calibrators[c].predict(np.array([t]))[0] for c, t in zip(predicted, top)])
    ours = calibrator.transform(logits[test])
    np.testing.assert_allclose(ours[np.arange(len(top)), predicted], np.maximum(expected, 0.25 + 1e-6), atol=1e-9)
    np.testing.assert_array_equal(ours.argmax(axis=1), predicted)  # the predicted class is kept
    # and MAPIE's own predict_proba on the validation rows (NaN off the top entry)
    mapie_val = mapie.predict_proba(np.arange(600)[:, None])
    val_predicted = probs[val].argmax(axis=1)
    mapie_top = mapie_val[np.arange(600), val_predicted]
    ours_val = calibrator.transform(logits[val])[np.arange(600), val_predicted]
    np.testing.assert_allclose(ours_val, np.maximum(mapie_top, 0.25 + 1e-6), atol=1e-9)


class _EqualMassHistogram:
    """A scikit-learn-style regressor for MAPIE: histogram binning with n equal-mass bins, transcribed from
    uncertainty-calibration's HistogramCalibrator (get_equal_bins: np.array_split, midpoint cuts, bisect_left)."""

    def __init__(self, n_bins=5):
        self.n_bins = n_bins

    def get_params(self, deep=True):
        return {"n_bins": self.n_bins}

    def set_params(self, **params):
        self.n_bins = params.get("n_bins", self.n_bins)
        return self

    def fit(self, X, y, sample_weight=None):
        values = np.sort(np.asarray(X, dtype=float).ravel())
        groups = np.array_split(values, min(self.n_bins, len(values)))
        self.bins_ = [(g[-1] + h[0]) / 2 for g, h in zip(groups[:-1], groups[1:])] + [1.0]
        members = [[] for _ in self.bins_]
        for x, target in zip(np.asarray(X, dtype=float).ravel(), np.asarray(y, dtype=float)):
            members[bisect.bisect_left(self.bins_, x)].append(target)
        self.means_ = [np.mean(m) for m in members]
        return self

    def predict(self, X):
        return np.array([self.means_[bisect.bisect_left(self.bins_, x)] for x in np.asarray(X, dtype=float).ravel()])


def test_top_label_histogram_equals_mapie_with_an_equal_mass_histogram(multiclass):
    logits, labels = multiclass
    probs = softmax(logits, axis=1)
    mapie, index = _mapie_top_label(probs, labels, _EqualMassHistogram(n_bins=5))
    calibrator = TopLabelHistogramBinning(n_bins=5, min_rows=1).fit(logits, labels)
    predicted = probs.argmax(axis=1)
    expected = mapie.predict_proba(index)[np.arange(len(labels)), predicted]
    got = calibrator.transform(logits)[np.arange(len(labels)), predicted]
    np.testing.assert_allclose(got, np.maximum(expected, 0.25 + 1e-6), atol=1e-12)
    # class-conditional, not pooled: some class's map differs from the pooled histogram's
    pooled = build_calibrator("histogram", n_bins=5).fit(logits, labels).transform(logits)
    assert not np.allclose(pooled[np.arange(len(labels)), predicted], got, atol=1e-3)


def test_a_class_with_few_rows_uses_the_pooled_map(multiclass):
    logits, labels = multiclass
    logits = logits.copy()
    logits[:, 3] -= 5.5  # class 3 rarely predicted
    predicted = logits.argmax(axis=1)
    few = int((predicted == 3).sum())
    assert 0 < few < 20
    calibrator = TopLabelIsotonicCalibration().fit(logits, labels)  # min_rows 20
    assert calibrator.class_maps_[3] is None and all(calibrator.class_maps_[c] is not None for c in range(3))
    pooled = build_calibrator("isotonic").fit(logits, labels)
    rows = predicted == 3
    np.testing.assert_allclose(calibrator.transform(logits[rows]), pooled.transform(logits[rows]), atol=1e-12)
    assert calibrator.summary() == {"class_maps": 3, "pooled_classes": 1, "min_rows": 20}


def _platt_binner_top(probs, labels, n_bins):
    """uncertainty-calibration 0.1.4's PlattBinnerTopCalibrator (get_platt_scaler, get_equal_bins,
    get_discrete_calibrator), transcribed; its LogisticRegression(C=1e10) given a tight tolerance."""
    from sklearn.linear_model import LogisticRegression

    def logit(q):
        q = np.clip(q, 1e-12, 1 - 1e-12)
        return np.log(q / (1 - q))

    top, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    clf = LogisticRegression(C=1e10, solver="lbfgs", tol=1e-12, max_iter=10000).fit(logit(top)[:, None], correct)

    def platt(q):
        return 1 / (1 + np.exp(-(logit(q) * clf.coef_[0] + clf.intercept_)))

    scaled = platt(top)
    ordered = sorted(scaled)
    groups = np.array_split(ordered, min(n_bins, len(ordered)))
    bins = sorted(set([(g[-1] + h[0]) / 2.0 for g, h in zip(groups[:-1], groups[1:])] + [1.0]))
    members = [[] for _ in bins]
    for value in scaled:
        members[bisect.bisect_left(bins, value)].append(value)
    means = np.array([np.mean(m) for m in members])

    def calibrate(new_probs):
        return means[np.searchsorted(bins, platt(new_probs.max(axis=1)))]

    return (float(clf.coef_[0][0]), float(clf.intercept_[0])), calibrate


def test_scaling_binning_equals_the_uncertainty_calibration_package(multiclass):
    logits, labels = multiclass
    probs = softmax(logits, axis=1)
    (slope, intercept), calibrate = _platt_binner_top(probs[:600], labels[:600], n_bins=10)
    calibrator = ScalingBinning(n_bins=10).fit(logits[:600], labels[:600])
    assert calibrator.slope_ == pytest.approx(slope, abs=1e-6) and calibrator.intercept_ == pytest.approx(intercept,
                                                                                                          abs=1e-6)
    test = logits[600:]
    got = calibrator.transform(test)
    np.testing.assert_allclose(got.max(axis=1), np.maximum(calibrate(probs[600:]), 0.25 + 1e-6), atol=1e-9)
    assert np.unique(got.max(axis=1)).size <= 10  # finitely many outputs: the bins' means
    try:  # the package itself, where it imports
        from calibration import PlattBinnerTopCalibrator
    except ImportError:  # pragma: no cover - its module imports fine with numpy 2 in this environment
        return
    package = PlattBinnerTopCalibrator(num_calibration=600, num_bins=10)
    package.train_calibration(probs[:600], labels[:600])
    np.testing.assert_allclose(got.max(axis=1), np.maximum(package.calibrate(probs[600:]), 0.25 + 1e-6), atol=2e-4)


def test_scaling_binning_with_temperature_maps_to_bin_means_of_tempered_confidences(multiclass):
    logits, labels = multiclass
    calibrator = ScalingBinning(n_bins=5, scaler="temperature").fit(logits, labels)
    tempered = build_calibrator("temperature").fit(logits, labels)
    assert calibrator.temperature_ == pytest.approx(tempered.temperature_, rel=1e-12)
    scaled = tempered.transform(logits).max(axis=1)
    order = np.argsort(scaled, kind="stable")
    groups = np.array_split(scaled[order], 5)  # distinct values: equal-mass bins are these groups
    expected = np.empty_like(scaled)
    for group_index, chunk in zip(np.array_split(order, 5), groups):
        expected[group_index] = chunk.mean()
    np.testing.assert_allclose(calibrator.transform(logits).max(axis=1), expected, atol=1e-12)
    with pytest.raises(InputError, match="Expected scaler='platt' to map confidences alone"):
        calibrator.calibrate_confidences([0.5])


@pytest.mark.parametrize("name, options", [
    ("platt", {}), ("beta", {}), ("top-label-histogram", {"n_bins": 4, "min_rows": 50}),
    ("top-label-isotonic", {"min_rows": 5}), ("scaling-binning", {"n_bins": 6}),
    ("scaling-binning", {"n_bins": 6, "scaler": "temperature"}),
])
@pytest.mark.parametrize("problem", ["binary", "multiclass"])
def test_round_trip_through_json(request, name, options, problem):
    scores, labels = request.getfixturevalue(problem)
    calibrator = build_calibrator(name, **options).fit(scores, labels)
    loaded = Calibrator.from_dict(json.loads(json.dumps(calibrator.to_dict())))
    np.testing.assert_array_equal(loaded.transform(scores), calibrator.transform(scores))
    assert loaded.get_params() == calibrator.get_params()


@pytest.mark.parametrize("name, options, message", [
    ("top-label-histogram", {"min_rows": 0}, "Expected min_rows to be a positive integer, got 0."),
    ("top-label-isotonic", {"min_rows": 1.5}, "Expected min_rows to be a positive integer, got 1.5."),
    ("scaling-binning", {"scaler": "beta"}, "scaling-binning scaler"),
    ("scaling-binning", {"n_bins": 0}, "Expected n_bins to be a positive integer, got 0."),
])
def test_bad_options_are_one_line_input_errors(name, options, message):
    with pytest.raises(InputError, match=message) as error:
        build_calibrator(name, **options)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name, params, message", [
    ("platt", {"slope": [1.0, 2.0], "intercept": [0.0, 0.0]}, "1 value \\(binary\\) or one per class"),
    ("platt", {"slope": [1.0], "intercept": ["x"]}, "'intercept' must be an array of numbers"),
    ("beta", {"a": [-1.0], "b": [1.0], "c": [0.0]}, "'a' and 'b' must be non-negative"),
    ("top-label-isotonic", {"pooled": {"thresholds": [0.5], "values": [0.5]}, "classes": [None], "class_counts": [1]},
     "one entry"),
])
def test_malformed_saved_params_are_refused(name, params, message):
    data = {"method": name, "format_version": 1, "options": {}, "params": params, "num_classes": 2,
            "fitted_on": "logits"}
    with pytest.raises(InputError, match=message):
        Calibrator.from_dict(data)


@pytest.mark.parametrize("method", ["platt", "beta", "scaling-binning", "top-label-isotonic"])
def test_calibrate_saves_and_evaluate_applies_the_new_calibrators(tmp_path, binary, method):
    """`adacal calibrate --method M --save` on a binary model's one decision score per sample writes the fitted map;
    loaded, it gives the Python fit's probabilities, and `evaluate --calibrator` scores the file with it."""
    from adacal.calibrators import load_calibrator
    from adacal.cli import app
    from typer.testing import CliRunner

    scores, labels = binary
    path = tmp_path / "p.npz"
    np.savez(path, val_logits=scores[:300], val_labels=labels[:300], test_logits=scores[300:],
             test_labels=labels[300:])
    saved = tmp_path / "cal.json"
    runner = CliRunner()
    result = runner.invoke(app, ["calibrate", str(path), "--method", method, "--save", str(saved), "-q"])
    assert result.exit_code == 0, result.output
    loaded = load_calibrator(saved)
    fitted = build_calibrator(method).fit(scores[:300], labels[:300])
    np.testing.assert_allclose(loaded.transform(scores[300:]), fitted.transform(scores[300:]), rtol=0, atol=1e-12)
    test = tmp_path / "test.npz"
    np.savez(test, logits=scores[300:], labels=labels[300:])
    done = runner.invoke(app, ["evaluate", str(test), "--calibrator", str(saved), "--json", str(tmp_path / "e.json")])
    assert done.exit_code == 0, done.output
    metrics = json.loads((tmp_path / "e.json").read_text())["results"]["metrics"]
    probs = fitted.transform(scores[300:])
    expected_nll = float(-np.mean(np.log(probs[np.arange(300), labels[300:]])))
    assert metrics["nll"] == pytest.approx(expected_nll, rel=1e-9)


def test_beta_falls_back_to_the_base_rate_where_even_the_one_term_refit_would_decrease():
    # Two rows where the one-feature refit on -ln(1 - p) comes out negative: the map is the constant base rate,
    # which saves and loads (a negative term is refused on load).
    from adacal.calibrators import Calibrator, build_calibrator

    logits = np.array([[2.0, 0.0], [0.0, 0.0]])
    calibrator = build_calibrator("beta").fit(logits, np.array([1, 0]))
    params = calibrator.to_dict()["params"]
    assert params["a"] == [0.0] and params["b"] == [0.0] and params["c"] == [pytest.approx(0.0)]
    np.testing.assert_allclose(calibrator.transform(logits), 0.5)
    np.testing.assert_allclose(Calibrator.from_dict(calibrator.to_dict()).transform(logits), 0.5)
