"""Every calibrator follows scikit-learn's estimator conventions: its own estimator checks, clone, params, fitted state.

The checks that do not apply are listed with the reason. Most come from the data scikit-learn's checks make up: X
with any number of columns and y with any labels, where a calibrator's input is one logit per class (so labels must
lie in [0, K)); the others from adacal's error convention (InputError, an AdacalError with one sentence naming the
input, which the CLI prints, rather than ValueError with scikit-learn's wording) and its argument names.
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.estimator_checks import check_estimator
from sklearn.utils.validation import check_is_fitted

from adacal.calibrators import CALIBRATORS, build_calibrator
from adacal.errors import AdacalError, InputError, NotFittedError

_DATA = "scikit-learn's made-up data has labels beyond the K columns; a calibrator needs one logit per class " \
        "(this convention is tested on valid data below)"
_ERRORS = "bad input raises adacal's InputError (one sentence naming the input, printed by the CLI), not " \
          "scikit-learn's ValueError wording"
NOT_APPLICABLE = {
    "check_fit_score_takes_y": "the house style names fit's arguments (logits, labels), not (X, y)",
    "check_transformer_general": "calls fit_transform(X, y=y); a calibrator's is fit_transform(logits, labels)",
    "check_transformer_data_not_an_array": "calls fit_transform(X, y=y); a calibrator's is "
                                           "fit_transform(logits, labels)",
    "check_estimators_fit_returns_self": _DATA,
    "check_estimators_overwrite_params": _DATA,
    "check_readonly_memmap_input": _DATA,
    "check_requires_y_none": "labels are required; fit(logits, None) raises InputError",
    "check_fit2d_1feature": "one column is one class, and a calibrator needs at least 2 classes",
    "check_fit2d_predict1d": "1-D scores are refused: " + _ERRORS,
    "check_complex_data": _ERRORS,
    "check_estimators_empty_data_messages": _ERRORS,
    "check_n_features_in_after_fitting": "a different number of classes than in fit is refused: " + _ERRORS,
    "check_dtype_object": "logits must be numeric; object arrays are refused: " + _ERRORS,
    "check_estimator_sparse_tag": "logits are dense (N, K) arrays; sparse input is refused: " + _ERRORS,
    "check_estimator_sparse_array": "logits are dense (N, K) arrays; sparse input is refused: " + _ERRORS,
    "check_estimator_sparse_matrix": "logits are dense (N, K) arrays; sparse input is refused: " + _ERRORS,
    "check_estimators_dtypes": "its integer data (20 rows) holds a probability row ([0, 1, 0, ...]) among rows that "
                               "are not: the one kind rule (adacal.scores_kind, docs/inputs.md) refuses such a "
                               "matrix rather than guess; " + _ERRORS,
}
ONLY_FOR = {"spline": {"check_fit2d_1sample": "a k-knot spline needs at least k samples (InputError)"}}


def _not_applicable(estimator):
    return {**NOT_APPLICABLE, **ONLY_FOR.get(estimator.name, {})}


@pytest.mark.parametrize("name", CALIBRATORS.names())
def test_scikit_learn_estimator_checks(name):
    """Every check passes except those listed as not applicable, and each of those does fail (the list is exact).

    One test per calibrator running all its checks (scikit-learn's check_estimator), not one per check: the same
    checks in a fraction of the time."""
    estimator = build_calibrator(name)
    expected = _not_applicable(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "does not inherit from BaseEstimator": by design, see adacal.calibrators.base
        results = check_estimator(estimator, expected_failed_checks=expected, on_fail=None, on_skip=None)
    statuses = {}
    for result in results:
        statuses.setdefault(result["check_name"], set()).add(result["status"])
    failed = {check: str(r["exception"]) for r in results if r["status"] == "failed" for check in [r["check_name"]]}
    assert not failed, failed
    assert {check for check, seen in statuses.items() if "xfail" in seen} == set(expected)
    passed = {check for check, seen in statuses.items() if seen == {"passed"}}
    assert {"check_estimator_cloneable", "check_get_params_invariance", "check_set_params", "check_estimators_unfitted",
            "check_no_attributes_set_in_init", "check_fit_check_is_fitted", "check_fit_idempotent",
            "check_n_features_in", "check_estimators_pickle", "check_dont_overwrite_parameters",
            # these also call predict (#42): it must be as deterministic, row-wise and side-effect free as transform
            "check_methods_subset_invariance", "check_methods_sample_order_invariance", "check_dict_unchanged"
            } <= passed


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 3.0, size=(200, 3))
    labels = np.where(rng.random(200) < 0.7, logits.argmax(axis=1), rng.integers(0, 3, size=200))
    return logits, labels


@pytest.mark.parametrize("name", CALIBRATORS.names())
def test_clone_params_and_fitted_state_on_valid_data(data, name):
    logits, labels = data
    calibrator = build_calibrator(name)
    params = calibrator.get_params()
    assert set(params) == set(type(calibrator)().get_params())
    assert all(not key.endswith("_") for key in vars(calibrator))  # __init__ stores options only
    with pytest.raises(NotFittedError) as error:
        calibrator.predict_proba(logits)
    assert isinstance(error.value, SklearnNotFittedError) and isinstance(error.value, AdacalError)
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(calibrator)
    with pytest.raises(NotFittedError):
        calibrator.predict(logits)
    assert not hasattr(calibrator, "classes_")  # scikit-learn's convention: no fitted attribute before fit
    readonly = logits.copy()
    readonly.flags.writeable = False
    assert calibrator.fit(readonly, labels) is calibrator  # fit returns self, and does not write to its input
    check_is_fitted(calibrator)
    assert calibrator.get_params() == params  # fitting does not change the options
    assert calibrator.n_features_in_ == 3
    assert any(key.endswith("_") and not key.startswith("_") for key in vars(calibrator))
    np.testing.assert_array_equal(calibrator.predict_proba(logits), calibrator.transform(logits))
    np.testing.assert_array_equal(calibrator.classes_, [0, 1, 2])  # the columns of predict_proba
    np.testing.assert_array_equal(calibrator.predict(logits), calibrator.transform(logits).argmax(axis=1))
    assert calibrator.predict(logits).dtype.kind == "i"
    twin = clone(calibrator)
    assert twin.get_params() == params and not twin.is_fitted
    np.testing.assert_array_equal(twin.fit(logits, labels).transform(logits), calibrator.transform(logits))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(calibrator)).transform(logits),
                                  calibrator.transform(logits))


def test_set_params_changes_options_checked_at_fit(data):
    logits, labels = data
    calibrator = build_calibrator("temperature")
    assert calibrator.set_params(objective="ece-em", n_bins=10) is calibrator
    assert calibrator.get_params() == {"objective": "ece-em", "n_bins": 10}
    assert calibrator.fit(logits, labels).temperature_ in np.arange(1, 101) / 10.0
    calibrator.set_params(n_bins=0)  # as in scikit-learn, set_params stores; fit checks
    with pytest.raises(InputError, match="Expected n_bins to be a positive integer, got 0."):
        calibrator.fit(logits, labels)
    with pytest.raises(InputError, match="does not take option 'bins'; it takes: objective, n_bins"):
        calibrator.set_params(bins=3)
    with pytest.raises(InputError, match="Expected reg_lambda to be a non-negative number"):
        clone(build_calibrator("dirichlet")).set_params(reg_lambda=-1.0).fit(logits, labels)


def _scored_digits():
    """A logistic regression's decision scores on digits (10 classes) and on a binary split of it (even / odd)."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    features, labels = load_digits(return_X_y=True)
    features = features / 16.0
    train, rest = slice(0, 900), slice(900, None)
    model = LogisticRegression(C=0.5, max_iter=300).fit(features[train], labels[train])
    return model, features[rest], labels[rest]


@pytest.mark.parametrize("name", ["platt", "temperature", "top-label-isotonic", "scaling-binning"])
def test_a_calibrator_ends_a_pipeline_and_runs_under_cross_val_predict(name):
    """Pipeline(FunctionTransformer(model.decision_function), calibrator): fit, predict_proba, predict; and
    cross_val_predict refits the calibrator on each fold's training part and predicts its held-out part, exactly
    as fitting the calibrator by hand on the same folds does."""
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    model, features, labels = _scored_digits()
    pipeline = make_pipeline(FunctionTransformer(model.decision_function), build_calibrator(name))
    pipeline.fit(features, labels)
    probs = pipeline.predict_proba(features)
    assert probs.shape == (len(labels), 10) and np.allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_array_equal(pipeline.classes_, np.arange(10))
    np.testing.assert_array_equal(pipeline.predict(features), probs.argmax(axis=1))
    folds = KFold(n_splits=3, shuffle=True, random_state=0)
    out_of_fold = cross_val_predict(pipeline, features, labels, cv=folds, method="predict_proba")
    by_hand = np.empty_like(out_of_fold)
    scores = model.decision_function(features)
    for fit_rows, held_out in folds.split(features):
        fitted = build_calibrator(name).fit(scores[fit_rows], labels[fit_rows])
        by_hand[held_out] = fitted.predict_proba(scores[held_out])
    np.testing.assert_allclose(out_of_fold, by_hand, rtol=0, atol=1e-12)
    predicted = cross_val_predict(pipeline, features, labels, cv=folds)  # method="predict"
    np.testing.assert_array_equal(predicted, by_hand.argmax(axis=1))


def test_platt_in_a_pipeline_on_a_binary_model_equals_calibrated_classifier_cv():
    """The binary case end to end: the same folds, scikit-learn's CalibratedClassifierCV(method="sigmoid") on a frozen
    model, and a Pipeline ending in adacal's platt under cross_val_predict, give the same probabilities."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import load_digits
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    features, digits = load_digits(return_X_y=True)
    labels = (digits % 2 == 1).astype(int)
    model = LogisticRegression(C=0.05, max_iter=300).fit(features[:900] / 16.0, labels[:900])
    features, labels = features[900:] / 16.0, labels[900:]
    folds = KFold(n_splits=4, shuffle=True, random_state=1)
    ours = cross_val_predict(make_pipeline(FunctionTransformer(model.decision_function), build_calibrator("platt")),
                             features, labels, cv=folds, method="predict_proba")
    theirs = cross_val_predict(CalibratedClassifierCV(FrozenEstimator(model), method="sigmoid"), features, labels,
                               cv=folds, method="predict_proba")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
