"""THR (LAC) and top-k sets against MAPIE's SplitConformalClassifier on the same probabilities (a peer's
implementation, pinned in the test extra; skipped with its reason where it is absent)."""

import warnings

import numpy as np
import pytest

from adacal.conformal import ConformalPredictor

mapie_classification = pytest.importorskip("mapie.classification", reason="MAPIE (a peer reference) is not installed")
sklearn_base = pytest.importorskip("sklearn.base")


class _Passthrough(sklearn_base.ClassifierMixin, sklearn_base.BaseEstimator):
    """A prefit 'classifier' whose predict_proba is its input: MAPIE then conformalizes the given probabilities."""

    def __init__(self, k=5):
        self.k = k

    def fit(self, X, y):  # noqa: N803 (scikit-learn's names)
        self.classes_ = np.arange(self.k)
        return self

    def predict_proba(self, X):  # noqa: N803
        return np.asarray(X)

    def predict(self, X):  # noqa: N803
        return np.asarray(X).argmax(axis=1)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("ours", "theirs"), [("thr", "lac"), ("topk", "top_k")])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_sets_equal_mapie(seed, ours, theirs, alpha):
    rng = np.random.default_rng(seed)
    k, n = 5, int(rng.integers(60, 600))
    logits = 2.0 * rng.normal(size=(n + 300, k))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n + 300)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    estimator = _Passthrough(k).fit(probs[:n], labels[:n])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapie = mapie_classification.SplitConformalClassifier(
            estimator=estimator, confidence_level=1 - alpha, conformity_score=theirs, prefit=True,
        ).conformalize(probs[:n], labels[:n])
        expected = mapie.predict_set(probs[n:])[1][:, :, 0]
    predictor = ConformalPredictor(score=ours, alpha=alpha).fit(probs[:n], labels[:n], scores_kind="probs")
    np.testing.assert_array_equal(predictor.predict_sets(probs[n:], scores_kind="probs"), expected)
