"""What every post-hoc calibrator shares: option checks, fit / transform, the fitted check, and JSON (de)serialisation.

Every calibrator maps logits (N, K) to probabilities (N, K) whose rows sum to 1, following scikit-learn's
estimator conventions (without importing scikit-learn, which takes seconds):

- `__init__` only stores its keyword-only options, as given; `get_params()` / `set_params(**options)` read and
  change them, so `sklearn.base.clone` works. Options are checked (one-sentence InputError) by `check_options()`,
  which `fit`, `build_calibrator` and `from_dict` call, so a bad option fails before any data is read;
- `fit(logits, labels)` (logits (N, K), or a binary model's one score per sample, read as two columns) validates its
  inputs, learns attributes ending in `_` (`temperature_`, `weights_`, ...) and
  returns `self`;
- `transform(logits)` and `predict_proba(logits)` (the same) give calibrated probabilities, `predict(logits)` their
  argmax and `classes_` the column indices 0, ..., K − 1, so a calibrator can end a scikit-learn Pipeline and run
  under `cross_val_predict`; using any before `fit` raises adacal's NotFittedError, which is also an instance of
  scikit-learn's NotFittedError when it is installed;
- `to_dict()` / `Calibrator.from_dict(d)` round-trip a fitted calibrator through plain JSON types.

Every calibrator is a function of a row: `fit(scores, labels, *, scores_kind="auto")` decides once whether the
validation scores are logits or probabilities, by the one rule of the file readers and the metrics
(`adacal.scores_kind.decide_scores_kind`: an explicit `scores_kind` wins, else every row must agree), and records it
as `fitted_on_` ("logits" or "probs", kept by to_dict). `transform(scores)` then reads every row as that kind:
fitted on logits, a row is logits whatever its values (the logit row [0.3, 0.7] is not the probability row
[0.3, 0.7]); fitted on probabilities, every row must be a probability row, else it is refused, naming the row. So a
row's output never depends on the rows beside it. `transform(scores, scores_kind="logits" | "probs" | "auto")`
reads them as told instead. The one refusal that looks at the whole batch is a safety net, never a re-reading: a
calibrator fitted on logits refuses a batch of at least MIN_JUDGED_ROWS rows that are all probability rows, or
mostly near-probability or percentage rows (docs/inputs.md), which no logits look like by chance.
Probabilities are mapped through their log, which differs from the logits by a constant per row: that changes
nothing for a calibrator whose map sees the logits only through softmax (`shift_invariant`), which may therefore
be applied to either kind, given as `scores_kind`, whatever it was fitted on. Vector and matrix scaling multiply
each class by its own weights, so their map differs: they refuse the other kind.
A binary model's one score per sample becomes two columns: probabilities p as [1 − p, p], logits s as [0, s].
"""

from __future__ import annotations

from typing import Any, ClassVar

import functools
import inspect

import numpy as np

from adacal.arrays import as_logits, check_labels, softmax
from adacal.calibrators.reading import (
    FITTED_KINDS,
    KIND_WORDS,
    SAVED_KIND_SPELLINGS,
    checked_scores,  # noqa: F401  (re-exported: callers import it from base)
    lost_top_rows,
    read_scores,
    refuse_probability_batch,
)
from adacal.errors import AdacalError, InputError, NotFittedError, unknown_name
from adacal.metrics.prepared import row_top
from adacal.registry import Registry
from adacal.scores_kind import check_scores_kind

FORMAT_VERSION = 1

CALIBRATORS: Registry[Calibrator] = Registry("calibrator")

# A top-label calibrator never gives the predicted class less than 1/K + TOP_FLOOR_MARGIN, so it stays the argmax.
TOP_FLOOR_MARGIN = 1e-6

def check_choice(option: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise unknown_name(option, str(value), choices)
    return value


def check_int(option: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InputError(f"Expected {option} to be {kind}, got {value!r}.")
    return int(value)


def check_nonnegative(option: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"Expected {option} to be a non-negative number, got {value!r}.")
    if not np.isfinite(value) or value < 0:
        raise InputError(f"Expected {option} to be a non-negative number, got {value!r}.")
    return float(value)


@functools.lru_cache(maxsize=1)
def _not_fitted_error_class() -> type[NotFittedError]:
    """adacal's NotFittedError, made an instance of scikit-learn's too when scikit-learn is installed (imported only
    on this error path: it takes seconds), so `check_is_fitted`-style handling catches it."""
    try:
        from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return NotFittedError

    class CalibratorNotFittedError(NotFittedError, SklearnNotFittedError):
        """Raised when a calibrator is used before `fit` (an AdacalError and scikit-learn's NotFittedError)."""

    CalibratorNotFittedError.__module__ = NotFittedError.__module__
    return CalibratorNotFittedError


def _all_numbers(value: Any) -> bool:
    """Whether a JSON value is a number or (nested) lists of numbers: no strings, booleans or nulls, which numpy
    would otherwise turn into numbers ("2" → 2.0, true → 1.0)."""
    if isinstance(value, list):
        return all(_all_numbers(item) for item in value)
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def float_array(params: dict[str, Any], key: str, *, ndim: int = 1) -> np.ndarray:
    """A finite float array stored under `key` in saved params (KeyError/ValueError when missing or malformed)."""
    value = params[key]
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not _all_numbers(value):
        raise ValueError(f"'{key}' must be an array of numbers")
    try:
        array = np.asarray(value, dtype=np.float64)
    except ValueError:  # ragged nested lists
        raise ValueError(f"'{key}' must be a non-empty finite {ndim}-D array") from None
    if array.ndim != ndim or array.size == 0 or not np.isfinite(array).all():
        raise ValueError(f"'{key}' must be a non-empty finite {ndim}-D array")
    return array


def positive_float(params: dict[str, Any], key: str) -> float:
    value = params[key]
    if not _all_numbers(value) or isinstance(value, list):
        raise ValueError(f"'{key}' must be a positive finite number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"'{key}' must be a positive finite number")
    return value


class Calibrator:
    """Base class of the post-hoc calibrators: `fit` on validation logits, `transform` logits (N, K) into calibrated
    probabilities (N, K), `to_dict` / `from_dict` through plain JSON types (scikit-learn's conventions, see the
    module doc). Subclasses implement `_fit`, `_transform`, `_get_params` and `_set_params`.

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import Calibrator, TemperatureScaling
        >>> saved = TemperatureScaling().fit(logits, labels).to_dict()
        >>> Calibrator.from_dict(saved).transform(logits)[0].round(4).tolist()  # any registered method
        [0.75, 0.25]
    """

    name: ClassVar[str] = ""
    # Whether the predicted class of every row is always kept (true of monotone maps of the whole row and of the
    # top-label methods; not of vector / matrix scaling and Dirichlet calibration, whose class-wise maps can reorder).
    keeps_argmax: ClassVar[bool] = True
    # Whether the map depends on the logits only through softmax, so that logits and log-probabilities (which differ
    # by a constant per row) give the same output. False for vector and matrix scaling.
    shift_invariant: ClassVar[bool] = True

    # ----- what subclasses provide -------------------------------------------------------------------------------
    def check_options(self) -> None:
        """Raise InputError for an option that is out of range (subclasses with options override)."""

    def get_options(self) -> dict[str, Any]:
        """The checked constructor options as JSON types (what `CALIBRATORS.build(name, **options)` takes back)."""
        self.check_options()
        return {key: _json_scalar(value) for key, value in self.get_params().items()}

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        raise NotImplementedError

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _get_params(self) -> dict[str, Any]:
        raise NotImplementedError

    def _set_params(self, params: dict[str, Any]) -> None:
        raise NotImplementedError

    def _params_num_classes(self) -> int | None:
        """The number of classes the learned parameters are shaped for; None for maps that work for any K."""
        return None

    def summary(self) -> dict[str, Any]:
        """A few learned values for reports and tables (the full state is in `to_dict()`)."""
        self._check_fitted()
        return self._get_params()

    # ----- scikit-learn's estimator protocol ---------------------------------------------------------------------
    @classmethod
    def _option_names(cls) -> list[str]:
        params = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor options, as stored (scikit-learn's protocol; no nested estimators, so `deep` is moot)."""
        return {name: getattr(self, name) for name in self._option_names()}

    def set_params(self, **params: Any) -> Calibrator:
        """Change constructor options (checked at the next `fit`, as scikit-learn does); returns self."""
        accepted = self._option_names()
        for key, value in params.items():
            if key not in accepted:
                listed = ", ".join(accepted) if accepted else "none"
                raise InputError(
                    f"Calibrator '{self.name}' does not take option {key!r}; it takes: {listed}."
                )
            setattr(self, key, value)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return self.is_fitted

    def __sklearn_tags__(self) -> Any:
        """Tags for scikit-learn's checks: a fitted transformer of (N, K) scores that needs the labels to fit."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=True),
            transformer_tags=TransformerTags(preserves_dtype=["float64"]),
            input_tags=InputTags(two_d_array=True),
        )

    @property
    def n_features_in_(self) -> int:
        """The number of classes seen in `fit` (scikit-learn's name for the input width)."""
        if not self.is_fitted:
            raise AttributeError(f"{type(self).__name__} is not fitted yet, so it has no n_features_in_.")
        return self.num_classes_

    # ----- the shared interface ----------------------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return getattr(self, "num_classes_", None) is not None

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise _not_fitted_error_class()(
                f"{type(self).__name__} is not fitted yet; call fit(logits, labels) first."
            )

    def fit(self, logits: Any, labels: Any, *, scores_kind: str = "auto") -> Calibrator:
        """Learn the calibration map from validation data.

        Args:
            logits: validation scores (N, K), logits or probabilities, numpy or torch; a binary model's one score per
                sample is read as two columns.
            labels: validation class indices (N,).
            scores_kind: "auto" (the shared per-row rule, `adacal.scores_kind.decide_scores_kind`: probabilities when
                every row is a probability row, logits when almost none is, else refused), "logits" or "probs".

        Returns:
            self, fitted: the learned attributes end in `_`; `fitted_on_` ("logits" or "probs") is the kind that
            `transform` reads rows as.
        """
        self.check_options()
        scores, kind = read_scores(logits, scores_kind=scores_kind, name="scores")
        labels = check_labels(labels, n=scores.shape[0], num_classes=scores.shape[1])
        self._fit(as_logits(scores, kind == "probs"), labels)
        self.num_classes_ = int(scores.shape[1])
        self.fitted_on_ = kind
        return self

    def transform(self, logits: Any, *, scores_kind: str | None = None) -> np.ndarray:
        """Calibrated probabilities, row by row: a row's output never depends on the rows beside it.

        Args:
            logits: scores (N, K) with the K of `fit`, or a binary model's one score per sample.
            scores_kind: None (default) reads every row as the kind fitted on (`fitted_on_`): logits whatever their
                values, or probabilities (a row that is not one is refused, naming it); "logits" / "probs" read them
                as that kind (vector and matrix scaling take only the kind they were fitted on); "auto" decides for
                this batch by the shared rule.

        Returns:
            float64 probabilities (N, K), rows summing to 1. Using it before `fit` raises NotFittedError.

        Example:
            >>> import numpy as np
            >>> from adacal.calibrators import TemperatureScaling
            >>> calibrator = TemperatureScaling().fit(np.array([[2.0, 0.0]] * 4), [0, 0, 0, 1])
            >>> alone = calibrator.transform([[0.3, 0.7]])  # a logit row that looks like probabilities: logits
            >>> batch = calibrator.transform([[0.3, 0.7], [5.0, -1.0]])
            >>> bool((alone[0] == batch[0]).all()), calibrator.fitted_on_
            (True, 'logits')
        """
        self._check_fitted()
        fitted_on = self._fitted_kind()
        asked = fitted_on if scores_kind is None else check_scores_kind(scores_kind)
        try:
            scores, kind = read_scores(logits, scores_kind=asked, name="scores")
        except InputError as exc:
            if scores_kind is not None or fitted_on != "probs":
                raise
            raise InputError(
                f"This {self.name} calibrator was fitted on probabilities and reads every row as probabilities "
                f"(transform(..., scores_kind='logits') reads logits): {exc}"
            ) from None
        if scores.shape[1] != self.num_classes_:
            raise InputError(
                f"Expected logits with {self.num_classes_} classes (as in fit), got shape {scores.shape}."
            )
        if not self.shift_invariant and kind != fitted_on:
            raise InputError(
                f"Expected {KIND_WORDS[fitted_on]} for this {self.name} calibrator, which was fitted on "
                f"{KIND_WORDS[fitted_on]}, got {KIND_WORDS[kind]}: its per-class weights map log-probabilities "
                "and logits differently."
            )
        if scores_kind is None and fitted_on == "logits":
            refuse_probability_batch(logits, scores, self.name, any_kind=self.shift_invariant)
        inputs = as_logits(scores, kind == "probs")
        probs = self._transform(inputs)
        bad = int((~np.isfinite(probs)).any(axis=1).sum())
        if bad:
            # The map overflowed on extreme (finite) logits: the calibrator failed, not the input.
            raise AdacalError(
                f"{self.name} gave NaN or Inf probabilities for {bad} of {len(probs)} samples (its fitted map "
                f"overflowed; the largest |logit| is {float(np.abs(scores).max()):.3g})."
            )
        if self.keeps_argmax:
            lost = lost_top_rows(inputs, probs)
            if lost.size:
                raise InputError(
                    f"Expected this {self.name} calibrator to keep each row's predicted class, but it ties the top "
                    f"class with another in {lost.size} of {len(probs)} rows, row {int(lost[0])} first"
                    f"{self._ties_why()}."
                )
        return probs

    def _fitted_kind(self) -> str:
        """`fitted_on_` as "logits" or "probs" (a calibrator pickled by adacal 0.1.0 may spell it "probabilities", or
        lack it: then it was fitted on logits, see `from_dict`)."""
        fitted_on = getattr(self, "fitted_on_", None) or "logits"
        return SAVED_KIND_SPELLINGS.get(fitted_on, fitted_on)

    def _ties_why(self) -> str:
        """Why the map can tie a row's top class (subclasses with a temperature say it), for the message above."""
        return ""

    def predict_proba(self, logits: Any, *, scores_kind: str | None = None) -> np.ndarray:
        """The same as `transform` (scikit-learn's name for probabilities)."""
        return self.transform(logits, scores_kind=scores_kind)

    def predict(self, logits: Any, *, scores_kind: str | None = None) -> np.ndarray:
        """Each row's class after calibration, the argmax of `transform` (scikit-learn's `predict`; ties go to the
        lower class, as np.argmax).

        Args:
            logits: scores as `transform` takes them.
            scores_kind: as `transform`.

        Returns:
            int64 class indices (N,), entries of `classes_`.

        Example:
            >>> import numpy as np
            >>> from adacal.calibrators import TemperatureScaling
            >>> calibrator = TemperatureScaling().fit(np.array([[2.0, 0.0]] * 4), [0, 0, 0, 1])
            >>> calibrator.predict([[0.0, 1.0], [3.0, 0.0]]).tolist(), calibrator.classes_.tolist()
            ([1, 0], [0, 1])
        """
        return self.transform(logits, scores_kind=scores_kind).argmax(axis=1)

    @property
    def classes_(self) -> np.ndarray:
        """The class indices 0, ..., K − 1 of the columns of `transform` (scikit-learn's name), once fitted."""
        if not self.is_fitted:
            raise AttributeError(f"{type(self).__name__} is not fitted yet, so it has no classes_.")
        return np.arange(self.num_classes_)

    def fit_transform(self, logits: Any, labels: Any, *, scores_kind: str = "auto") -> np.ndarray:
        return self.fit(logits, labels, scores_kind=scores_kind).transform(logits)

    def to_dict(self) -> dict[str, Any]:
        """The fitted calibrator as plain JSON types: method, format_version, options, params, num_classes and
        fitted_on ("logits" or "probs": how `transform` reads rows)."""
        self._check_fitted()
        return {
            "method": self.name,
            "format_version": FORMAT_VERSION,
            "options": self.get_options(),
            "params": self._get_params(),
            "num_classes": self.num_classes_,
            "fitted_on": self._fitted_kind(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Calibrator:
        """Rebuild a fitted calibrator from `to_dict()` output (on the base class, any registered method)."""
        if not isinstance(data, dict):
            raise InputError(f"Expected a calibrator dict (as written by to_dict()), got {type(data).__name__}.")
        method = data.get("method")
        if cls is not Calibrator and method != cls.name:
            raise InputError(f"Expected a '{cls.name}' calibrator, got method {method!r}.")
        if not isinstance(method, str):
            raise InputError(f"Expected the calibrator dict to name its method, got {method!r}.")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise InputError(f"Expected calibrator format_version {FORMAT_VERSION}, got {version!r}.")
        options, params, num_classes = data.get("options", {}), data.get("params"), data.get("num_classes")
        if not isinstance(options, dict) or not isinstance(params, dict):
            raise InputError(f"Expected the '{method}' calibrator dict to hold 'options' and 'params' objects.")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise InputError(
                f"Expected the '{method}' calibrator's num_classes to be an integer >= 2, got {num_classes!r}."
            )
        calibrator = CALIBRATORS.build(method, **options)
        calibrator.check_options()
        try:
            calibrator._set_params(params)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"Expected valid params for the '{method}' calibrator, but {exc}.") from None
        shaped_for = calibrator._params_num_classes()
        if shaped_for is not None and shaped_for != num_classes:
            raise InputError(f"Expected the '{method}' calibrator's params to be shaped for its num_classes "
                             f"({num_classes}), but they are for {shaped_for} classes.")
        # Absent from calibrators saved before it was recorded (before adacal 0.1.0): they were fitted on logits, the
        # only kind the CLI then applied them to. adacal 0.1.0 spelled probabilities "probabilities".
        fitted_on = data.get("fitted_on", "logits")
        fitted_on = SAVED_KIND_SPELLINGS.get(fitted_on, fitted_on) if isinstance(fitted_on, str) else fitted_on
        if fitted_on not in FITTED_KINDS:
            raise InputError(f"Expected the '{method}' calibrator's fitted_on to be logits or probs, got "
                             f"{data.get('fitted_on')!r}.")
        calibrator.num_classes_ = num_classes
        calibrator.fitted_on_ = fitted_on
        return calibrator

    def __repr__(self) -> str:
        options = ", ".join(f"{key}={value!r}" for key, value in self.get_params().items())
        fitted = "" if self.is_fitted else " (not fitted)"
        return f"{type(self).__name__}({options}){fitted}"


def _json_scalar(value: Any) -> Any:
    """numpy scalars as the Python numbers JSON takes."""
    return value.item() if isinstance(value, np.generic) else value


class TopLabelCalibrator(Calibrator):
    """Base class of the calibrators of the top-class confidence only (spline, histogram binning, isotonic).

    It learns a map confidence → calibrated confidence from (top-class probability, top class correct) pairs, and
    `complete_top_label` rebuilds each row, so rows sum to 1 and keep their predicted class.

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import HistogramBinning
        >>> HistogramBinning(n_bins=1).fit(logits, labels).calibrate_confidences([0.9]).tolist()
        [0.75]
    """

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        predicted, confidences = row_top(softmax(logits))
        self._fit_confidences(confidences, (predicted == labels).astype(np.float64))

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        probs = softmax(logits)
        predicted, confidences = row_top(probs)
        return complete_top_label(probs, self._map_confidences(confidences), top_index=predicted)

    def _fit_confidences(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        raise NotImplementedError

    def _map_confidences(self, confidences: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def calibrate_confidences(self, confidences: Any) -> np.ndarray:
        """The learned map applied to top-class confidences.

        Args:
            confidences: top-class confidences (N,).

        Returns:
            The calibrated confidences (N,), clipped to [0, 1] (before `complete_top_label`'s 1/K floor).
        """
        self._check_fitted()
        values = np.asarray(confidences, dtype=np.float64).reshape(-1)
        return np.clip(self._map_confidences(values), 0.0, 1.0)


def complete_top_label(probs: np.ndarray, new_top: np.ndarray, *, top_index: np.ndarray | None = None) -> np.ndarray:
    """Rows with the top probability replaced by `new_top`; the argmax is kept and rows sum to 1.

    Args:
        probs: probabilities (N, K).
        new_top: the new top-class probabilities t (N,), clamped to [1/K + 1e-6, 1].
        top_index: each row's argmax (`row_top`), when the caller has it.

    Returns:
        float64 probabilities (N, K): the other classes share 1 − t in proportion to their original probabilities
        (mixed with a uniform share where one would reach t), keeping their order.

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators import complete_top_label
        >>> complete_top_label(np.array([[0.6, 0.3, 0.1]]), np.array([0.5])).round(4).tolist()  # 0.5 shared 3 : 1
        [[0.5, 0.375, 0.125]]
    """
    # The mix: the uniform share (1 − t)/(K − 1) by the smallest λ in [0, 1] that keeps every other class below t
    # (λ = 0 whenever the proportional share already does).
    n, k = probs.shape
    rows = np.arange(n)
    if top_index is None:
        top_index = row_top(probs)[0]
    top = np.clip(np.asarray(new_top, dtype=np.float64), 1.0 / k + TOP_FLOOR_MARGIN, 1.0)
    others = probs.copy()
    others[rows, top_index] = 0.0
    rest = others.sum(axis=1, keepdims=True)
    uniform = np.full((n, k), 1.0 / (k - 1))
    uniform[rows, top_index] = 0.0
    # Rows whose top class had all the mass share the remainder uniformly.
    share = np.where(rest > 0, others / np.where(rest > 0, rest, 1.0), uniform)
    mass = 1.0 - top
    largest = mass * share.max(axis=1)
    floor = mass / (k - 1)
    cap = top - np.minimum(1e-9, (top - floor) / 2.0)
    excess = largest - cap
    span = largest - floor
    lam = np.where(excess > 0, np.clip(excess / np.where(span > 0, span, 1.0), 0.0, 1.0), 0.0)
    out = mass[:, None] * ((1.0 - lam)[:, None] * share + lam[:, None] * uniform)
    out[rows, top_index] = top
    return out
