"""Split conformal prediction: the finite-sample quantile of validation scores, and the sets it gives, row-wise.

Fitted on n validation rows, the threshold is the ⌈(n+1)(1−α)⌉-th smallest calibration score (`conformal_quantile`);
a test row's set holds every class whose score is at most it, so for exchangeable data the true class is in the set
with probability at least 1 − α (docs/conformal.md). Class-conditional (Mondrian) calibration takes one threshold
per class from that class's validation rows, and the guarantee holds for each class.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adacal.arrays import check_labels, probability_tolerance, softmax
from adacal.checks import check_integer
from adacal.conformal.quantile import check_alpha, conformal_quantile, quantile_rank
from adacal.conformal.scores import (
    RAPS_LAMBDAS, RAPS_TUNE_FRACTION, SCORES, ScoreFunction, build_score, raps_tuning_split, select_raps_parameters,
)
from adacal.errors import InputError, NotFittedError
from adacal.registry import option_names
from adacal.scores_kind import check_scores_kind, count_rows, score_matrix

__all__ = ["PREDICTORS_KIND", "ConformalPredictor", "check_alpha", "conformal_quantile", "load_predictors",
           "quantile_rank", "save_predictors"]

FORMAT_VERSION = 1
# A predictor fitted on logits refuses a batch of at least this many rows that are all probability rows (as the
# calibrators do: no logits look like that by chance); fewer rows, one request's, are read as logits, as fitted.
MIN_JUDGED_ROWS = 20


def _saved_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"Expected each saved quantile to be a finite number, got {value!r}.")
    return float(value)


class ConformalPredictor:
    """Split conformal prediction sets over a score function: `fit` on validation, `predict_sets` on any rows.

    Args:
        score: a score name ("thr"/"lac", "aps", "raps", "topk") or a built `ScoreFunction` (which keeps its own
            options and seed).
        alpha: the miscoverage level in (0, 1): sets hold the true class with probability at least 1 − α.
        class_conditional: one threshold per class from that class's validation rows (Mondrian), so the coverage
            holds for each class.
        seed: the seed of the randomised scores' U (used when `score` is a name).
        **score_options: the score's options (APS: randomized; RAPS: k_reg, lam, randomized). RAPS's
            `k_reg="auto"` and/or `lam="auto"` select them on validation as Angelopoulos et al. (2021) do: a seeded
            30 % of the rows tunes them (`select_raps_parameters`), the other 70 % calibrates the threshold.

    Fitted attributes: `quantile_` (a float, or K floats class-conditionally), `n_calibration_` (n, or n per class),
    `num_classes_`, `fitted_on_` ("logits" or "probs": the kind `predict_sets` reads rows as), `tuning_` (RAPS
    with "auto": {k_reg, lam, n_tune, ...}; else None).

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import ConformalPredictor
        >>> rng = np.random.default_rng(0)
        >>> logits = rng.normal(size=(200, 3)) * 2
        >>> labels = logits.argmax(axis=1)
        >>> predictor = ConformalPredictor("thr", alpha=0.1).fit(logits, labels)
        >>> predictor.predict_sets(logits[:2]).shape
        (2, 3)
    """

    def __init__(self, score: Any = "aps", alpha: float = 0.1, class_conditional: bool = False, seed: int = 0,
                 **score_options: Any) -> None:
        self.score = score
        self.alpha = alpha
        self.class_conditional = class_conditional
        self.seed = seed
        self.score_options = score_options

    def _score_function(self, **chosen: Any) -> ScoreFunction:
        if isinstance(self.score, ScoreFunction):
            return self.score
        name = SCORES.key(self.score)
        options = {**{key: value for key, value in self.score_options.items() if value != "auto"}, **chosen}
        if "seed" in option_names(SCORES.get(name)):
            options.setdefault("seed", self.seed)
        return build_score(name, **options)

    def _auto_options(self) -> list[str]:
        """The RAPS options given as "auto" (selected on validation); "auto" for another score is refused."""
        auto = [key for key, value in self.score_options.items() if isinstance(value, str) and value == "auto"]
        if auto and (isinstance(self.score, ScoreFunction) or SCORES.key(self.score) != "raps"
                     or not set(auto) <= {"k_reg", "lam"}):
            raise InputError(f"Expected 'auto' only for RAPS's k_reg and lam, got {auto[0]}='auto' for score "
                             f"{self.score!r}: give a value, or use score='raps'.")
        return auto

    def _tune(self, probs: np.ndarray, labels: np.ndarray, alpha: float,
              auto: list[str]) -> tuple[ScoreFunction, np.ndarray, np.ndarray]:
        """RAPS's k_reg and λ selected on a seeded 30 % of the validation rows; the rows left calibrate."""
        tune, rest = raps_tuning_split(len(labels), self.seed)
        given = self._score_function(**({"k_reg": 1} if "k_reg" in auto else {}),
                                     **({"lam": 0.0} if "lam" in auto else {}))
        k_reg, lam = select_raps_parameters(
            probs[tune], labels[tune], alpha, randomized=given.randomized, seed=given.seed,
            k_reg=None if "k_reg" in auto else given.k_reg, lambdas=RAPS_LAMBDAS if "lam" in auto else (given.lam,))
        self.tuning_ = {"k_reg": k_reg, "lam": lam, "selected": sorted(auto), "n_tune": int(tune.size),
                        "tune_fraction": RAPS_TUNE_FRACTION, "lambdas": list(RAPS_LAMBDAS), "seed": int(self.seed)}
        return self._score_function(k_reg=k_reg, lam=lam), probs[rest], labels[rest]

    def fit(self, val_scores: Any, val_labels: Any, *, scores_kind: str = "auto") -> ConformalPredictor:
        """Compute the threshold(s) from validation scores and labels.

        Args:
            val_scores: validation logits or probabilities (N, K).
            val_labels: validation labels (N,).
            scores_kind: "auto" (the rule of docs/inputs.md §2), "logits" or "probs".

        Returns:
            self, fitted. n < 1/α − 1 (per class, class-conditionally), α outside (0, 1) or a class absent from
            validation is an InputError.
        """
        alpha = check_alpha(self.alpha)
        if not isinstance(self.class_conditional, (bool, np.bool_)):
            raise InputError(f"Expected class_conditional to be True or False, got {self.class_conditional!r}.")
        check_integer(self.seed, "seed", minimum=0)
        auto = self._auto_options()
        function = self._score_function()
        probs, kind = self._read(val_scores, check_scores_kind(scores_kind), name="val_scores")
        labels = check_labels(val_labels, n=probs.shape[0], num_classes=probs.shape[1], name="val_labels")
        self.tuning_: dict[str, Any] | None = None
        where = "the validation set"
        if auto:
            function, probs, labels = self._tune(probs, labels, alpha, auto)
            where = "the calibration part of the validation set (70 %; 30 % tunes RAPS)"
        calibration = function.score(probs, labels)
        if self.class_conditional:
            quantiles, counts = [], []
            for label in range(probs.shape[1]):
                mine = calibration[labels == label]
                if not mine.size:
                    raise InputError(f"Expected every class in the validation labels for class-conditional "
                                     f"calibration (class_conditional=True, --class-conditional), class {label} is "
                                     "absent: calibrate marginally (class_conditional=False) or give validation data "
                                     "of every class.")
                quantiles.append(conformal_quantile(mine, alpha, what=f"class {label} of {where}"))
                counts.append(int(mine.size))
            self.quantile_: float | list[float] = quantiles
            self.n_calibration_: int | list[int] = counts
        else:
            self.quantile_ = conformal_quantile(calibration, alpha, what=where)
            self.n_calibration_ = int(calibration.size)
        self.score_function_ = function
        self.num_classes_ = int(probs.shape[1])
        self.fitted_on_ = kind
        return self

    @staticmethod
    def _read(scores: Any, scores_kind: str, *, name: str) -> tuple[np.ndarray, str]:
        matrix, kind = score_matrix(scores, scores_kind=scores_kind, name=name)
        return (softmax(matrix) if kind == "logits" else matrix), kind

    def predict_sets(self, scores: Any, *, scores_kind: str | None = None,
                     uniforms: Any = None) -> np.ndarray:
        """The prediction sets, row by row: a row's set depends only on that row and the fitted threshold(s).

        Args:
            scores: logits or probabilities (N, K), K as fitted.
            scores_kind: None (default) reads rows as the kind fitted on (`fitted_on_`; fitted on logits, a batch of
                at least 20 rows that are all probability rows is refused, naming `scores_kind=`); "auto",
                "logits", "probs" as told.
            uniforms: the randomised scores' U, one per row; None draws each row's own (`row_uniforms`).

        Returns:
            bool (N, K): True where the class is in the row's set. Another K than fitted is an InputError.
        """
        if not hasattr(self, "quantile_"):
            raise NotFittedError("This ConformalPredictor is not fitted yet: call fit(val_scores, val_labels) first.")
        kind = self.fitted_on_ if scores_kind is None else check_scores_kind(scores_kind)
        matrix, kind = score_matrix(scores, scores_kind=kind, name="scores")
        if scores_kind is None and kind == "logits" and len(matrix) >= MIN_JUDGED_ROWS and matrix.shape[1] > 1:
            counts = count_rows(matrix, probability_tolerance(scores))
            if counts.probability == counts.rows:
                raise InputError(f"Expected logits for this conformal predictor, which was fitted on logits, but all "
                                 f"{counts.rows} rows are probability rows (non-negative, summing to 1): pass "
                                 "scores_kind='probs' to read them as probabilities, or scores_kind='logits' if they "
                                 "are logits.")
        probs = softmax(matrix) if kind == "logits" else matrix
        if probs.shape[1] != self.num_classes_:
            raise InputError(f"Expected scores with {self.num_classes_} classes (as the predictor was fitted on), "
                             f"got {probs.shape[1]}: fit a predictor on this model's validation scores.")
        return self.score_function_.sets(probs, self.quantile_, uniforms=uniforms)

    def to_dict(self) -> dict[str, Any]:
        """The fitted predictor as plain JSON types (Returns: a dict that `from_dict` reads back).

        Example:
            >>> import numpy as np
            >>> from adacal.conformal import ConformalPredictor
            >>> probs = np.tile([[0.6, 0.3, 0.1]], (20, 1))
            >>> saved = ConformalPredictor("thr", alpha=0.1).fit(probs, np.zeros(20, int)).to_dict()
            >>> saved["quantile"], saved["fitted_on"]
            (0.4, 'probs')
        """
        if not hasattr(self, "quantile_"):
            raise NotFittedError("This ConformalPredictor is not fitted yet: call fit(val_scores, val_labels) first.")
        return {
            "method": "split-conformal",
            "format_version": FORMAT_VERSION,
            "score": self.score_function_.name,
            "score_options": self.score_function_.get_params(),
            "alpha": float(self.alpha),
            "class_conditional": bool(self.class_conditional),
            "quantile": self.quantile_,
            "n_calibration": self.n_calibration_,
            "num_classes": self.num_classes_,
            "fitted_on": self.fitted_on_,
            **({"tuning": self.tuning_} if getattr(self, "tuning_", None) else {}),
        }

    @classmethod
    def from_dict(cls, data: Any) -> ConformalPredictor:
        """Rebuild a fitted predictor from `to_dict()` output (Returns: the predictor; a malformed dict is an
        InputError naming the key).

        Example:
            >>> import numpy as np
            >>> from adacal.conformal import ConformalPredictor
            >>> probs = np.tile([[0.6, 0.3, 0.1]], (20, 1))
            >>> fitted = ConformalPredictor("aps", alpha=0.1).fit(probs, np.zeros(20, int))
            >>> ConformalPredictor.from_dict(fitted.to_dict()).quantile_ == fitted.quantile_
            True
        """
        if not isinstance(data, dict) or data.get("method") != "split-conformal":
            raise InputError("Expected a conformal predictor dict (as written by ConformalPredictor.to_dict()), got "
                             f"{type(data).__name__ if not isinstance(data, dict) else data.get('method')!r}.")
        try:
            options = data.get("score_options") or {}
            if not isinstance(options, dict):
                raise InputError(f"Expected score_options to be a dict, got {type(options).__name__}.")
            function = build_score(data["score"], **options)
            class_conditional = data["class_conditional"]
            if not isinstance(class_conditional, bool):
                raise InputError(f"Expected class_conditional to be true or false, got {class_conditional!r}.")
            predictor = cls(function, alpha=check_alpha(data["alpha"]), class_conditional=class_conditional)
            num_classes = check_integer(data["num_classes"], "num_classes", minimum=1)
            quantile = data["quantile"]
            fitted_on = data["fitted_on"]
        except KeyError as missing:
            raise InputError(f"Expected the conformal predictor dict to have the key {missing}, it has not.") from None
        if fitted_on not in ("logits", "probs"):
            raise InputError(f"Expected fitted_on to be 'logits' or 'probs', got {fitted_on!r}.")
        if predictor.class_conditional:
            if not isinstance(quantile, list) or len(quantile) != num_classes:
                raise InputError(f"Expected quantile to be a list of {num_classes} numbers (class-conditional), "
                                 f"got {quantile!r}.")
            predictor.quantile_ = [_saved_number(value) for value in quantile]
        else:
            predictor.quantile_ = _saved_number(quantile)
        predictor.n_calibration_ = data.get("n_calibration")
        predictor.score_function_ = function
        predictor.num_classes_ = num_classes
        predictor.fitted_on_ = fitted_on
        predictor.tuning_ = data.get("tuning") if isinstance(data.get("tuning"), dict) else None
        return predictor

    def __repr__(self) -> str:
        fitted = "" if hasattr(self, "quantile_") else " (not fitted)"
        return (f"ConformalPredictor(score={self.score!r}, alpha={self.alpha!r}, "
                f"class_conditional={self.class_conditional!r}){fitted}")


PREDICTORS_KIND = "conformal-predictors"


def save_predictors(predictors: Any, path: Any) -> Any:
    """Write fitted predictors (one per α) to a JSON report, atomically: results = {"predictors": [to_dict(), ...]}.

    Args:
        predictors: a fitted `ConformalPredictor` or a list of them.
        path: the file to write.

    Returns:
        The path written.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from adacal.conformal import ConformalPredictor, load_predictors, save_predictors
        >>> probs = np.tile([[0.6, 0.3, 0.1]], (20, 1))
        >>> fitted = ConformalPredictor("thr", alpha=0.1).fit(probs, np.zeros(20, int))
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     loaded = load_predictors(save_predictors(fitted, os.path.join(folder, "sets.json")))
        >>> [predictor.quantile_ for predictor in loaded]
        [0.4]
    """
    from adacal.reports import make_report, write_json

    chosen = [predictors] if isinstance(predictors, ConformalPredictor) else list(predictors)
    saved = [predictor.to_dict() for predictor in chosen]
    config = {"score": saved[0]["score"] if saved else None, "alphas": [entry["alpha"] for entry in saved]}
    return write_json(path, make_report(PREDICTORS_KIND, config=config, results={"predictors": saved}))


def load_predictors(path: Any) -> list[ConformalPredictor]:
    """The fitted predictors of a file `save_predictors` (or `adacal conformal --save`) wrote, in its order.

    Args:
        path: the JSON report to read.

    Returns:
        A list of fitted `ConformalPredictor`s; a file of another kind, or a malformed entry, is an InputError naming
        the file.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from adacal.conformal import ConformalPredictor, load_predictors, save_predictors
        >>> probs = np.tile([[0.6, 0.3, 0.1]], (20, 1))
        >>> fitted = [ConformalPredictor("thr", alpha=a).fit(probs, np.zeros(20, int)) for a in (0.1, 0.2)]
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     loaded = load_predictors(save_predictors(fitted, os.path.join(folder, "sets.json")))
        >>> [predictor.alpha for predictor in loaded]
        [0.1, 0.2]
    """
    from adacal.sources.documents import read_report

    try:
        report = read_report(path, kind=PREDICTORS_KIND)
    except InputError as exc:
        raise InputError(f"{str(exc).rstrip('.')}: give a file that adacal conformal --save (or save_predictors) "
                         "wrote.") from None
    entries = report["results"].get("predictors")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"Expected {path} to hold a non-empty list results.predictors, got "
                         f"{type(entries).__name__}: save it with adacal conformal --save.")
    loaded = []
    for entry in entries:
        try:
            loaded.append(ConformalPredictor.from_dict(entry))
        except InputError as exc:
            raise InputError(f"{str(exc).rstrip('.')} ({path}).") from None
    return loaded
