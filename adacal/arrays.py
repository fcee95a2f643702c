"""Turning user arrays (numpy, torch, lists) into validated numpy arrays, once, before any math runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.errors import InputError

PROB_SUM_TOLERANCE = 1e-4
# Rows of non-negative scores whose sums are this close to 1, but not within the rounding tolerance, are almost surely
# probabilities that do not sum to 1 (truncated, or rounded to few digits) rather than logits: see check_not_near_probs.
NEAR_PROB_SUM_TOLERANCE = 0.1


# numpy dtype kinds of real numbers: what scores may be (booleans, complex numbers, timedelta64 / datetime64, void and
# structured records are not; numpy counts timedelta64 as an integer, so `np.issubdtype` alone would let it through).
REAL_KINDS = "iuf"
# ... and what labels may be: class indices, as integers, booleans or integral floats.
LABEL_KINDS = "biuf"
_TEXT_KINDS = "OSUT"  # Python objects and strings: "not numeric"


def to_numpy(values: Any, *, keep_float: bool = False, name: str | None = None) -> np.ndarray:
    """A numpy view or copy of `values`; torch floats become float64, or with `keep_float` keep float16/32/64
    (numpy has no bfloat16, which always becomes float64). A torch complex32 tensor becomes complex64 (numpy has
    no complex32), for the caller's dtype check to refuse by name; a torch dtype numpy cannot hold (quantized, sub-byte)
    is refused here, naming `name` when given."""
    if hasattr(values, "detach"):
        if getattr(getattr(values, "device", None), "type", None) == "meta":
            raise InputError(f"Expected a tensor holding values, got one on torch's meta device (shape "
                             f"{tuple(values.shape)}, no data).")
        values = values.detach().cpu()
        import torch

        what = name or "a tensor"
        if values.is_quantized:
            raise InputError(f"Expected {what} to be real numbers, got a quantized tensor (dtype "
                             f"{str(values.dtype).replace('torch.', '')}): dequantize it first (tensor.dequantize()).")
        if values.dtype.is_floating_point:
            if not keep_float or values.dtype not in (torch.float16, torch.float32, torch.float64):
                values = values.double()
        elif values.dtype == torch.complex32:  # numpy has complex64 and complex128 only
            values = values.to(torch.complex64)
        try:
            return values.numpy()
        except TypeError:  # "Got unsupported ScalarType ...": a dtype numpy has no counterpart for
            raise InputError(f"Expected {what} to be real numbers, got a tensor of dtype "
                             f"{str(values.dtype).replace('torch.', '')}, which numpy cannot hold.") from None
    try:
        return np.asarray(values)
    except ValueError:  # ragged nested lists: numpy refuses to build an object array from them
        raise InputError("Expected an array (rows of equal length), got nested sequences of different "
                         "lengths.") from None


def check_scores(scores: Any, *, name: str = "logits") -> np.ndarray:
    """Validate a (N, K) float array of logits or probabilities: non-empty, K >= 2, all finite."""
    return check_scores_and_row_sums(scores, name=name)[0]


def check_scores_and_row_sums(scores: Any, *, name: str = "logits") -> tuple[np.ndarray, np.ndarray]:
    """`check_scores`, also returning the row sums it computed (they tell probabilities from logits)."""
    array = check_score_shape(scores, name=name)
    with np.errstate(over="ignore", invalid="ignore"):
        row_sums = array.sum(axis=1)
    check_finite_rows(array, row_sums, name=name)
    return array, row_sums


def check_score_shape(scores: Any, *, name: str = "logits", keep_dtype: bool = False) -> np.ndarray:
    """The dtype and shape checks of `check_scores` (not finiteness): a float64 (N, K) array, N >= 1, K >= 2.

    With `keep_dtype`, float16/32/64 input is returned in its own dtype (no copy): block-wise consumers convert one
    cache-sized block at a time instead of the whole matrix. Integers always become float64.
    """
    array = to_numpy(scores, keep_float=keep_dtype, name=name)
    _check_real(array, name)
    if not keep_dtype or array.dtype not in (np.float16, np.float32, np.float64):
        array = array.astype(np.float64, copy=False)
    if array.ndim != 2:
        raise InputError(f"Expected {name} to be 2-D (samples, classes), got shape {array.shape}.")
    if array.shape[0] == 0:
        raise InputError(f"Expected {name} to hold at least one sample, got shape {array.shape}.")
    if array.shape[1] < 2:
        raise InputError(f"Expected {name} to have at least 2 classes, got shape {array.shape}.")
    return array


def _check_real(array: np.ndarray, name: str) -> None:
    """Refuse scores that are not real numbers: strings and objects ("numeric"), and booleans, complex numbers,
    timedelta64 / datetime64, void and structured records ("real numbers")."""
    kind = array.dtype.kind
    if kind in _TEXT_KINDS:
        raise InputError(f"Expected {name} to be numeric, got dtype {array.dtype}.")
    if kind not in REAL_KINDS:  # complex would lose its imaginary part to a cast, timedelta64 its unit: silently
        raise InputError(f"Expected {name} to be real numbers, got dtype {array.dtype}.")


def one_score_per_sample(scores: Any) -> bool:
    """Whether `scores` hold one number per sample, (N,) or (N, 1): a binary model's output (a sigmoid, a decision
    function), read as two columns by `binary_score_columns`."""
    shape = tuple(scores.shape) if hasattr(scores, "shape") else to_numpy(scores).shape
    return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)


def binary_score_columns(scores: Any, name: str = "scores", *, decision: bool = False) -> tuple[np.ndarray, bool]:
    """(N, 2) float64 scores from a binary model's one score per sample, and whether they were probabilities: every
    value in [0, 1] means positive-class probabilities p, read as [1 − p, p]; anything else decision scores (logits)
    s, read as [0, s] (softmax([0, s]) = sigmoid(s)). `decision`: decision scores whatever their range (another set
    of the same model's scores falls outside [0, 1]; see `mixed_binary_kinds`). NaN or Inf stay, for the finiteness
    check to report."""
    array = to_numpy(scores, name=name)
    if array.dtype.kind not in REAL_KINDS:  # complex would lose its imaginary part to the cast below, silently
        raise InputError(f"Expected {name} to be real numbers, got dtype {array.dtype}.")
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    probabilities = not decision and in_unit_interval(flat)
    if probabilities:
        return np.stack([1.0 - flat, flat], axis=1), True
    return np.stack([np.zeros_like(flat), flat], axis=1), False


def in_unit_interval(values: Any) -> bool:
    """Whether there is at least one value and every value lies in [0, 1] (NaN does not): what makes a binary model's
    one score per sample a probability."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        return bool(flat.size) and bool(((flat >= 0.0) & (flat <= 1.0)).all())


def mixed_binary_kinds(*score_sets: Any) -> bool:
    """Whether the sets of one model's scores that hold one score per sample disagree in kind: some all in [0, 1]
    (alone, read as probabilities), some not (decision scores). One model gives one kind of score, and a set outside
    [0, 1] cannot be probabilities, so such sets are all to be read as decision scores
    (`binary_score_columns(..., decision=True)`). Sets of other shapes or dtypes are left to their own checks."""
    kinds = set()
    for scores in score_sets:
        if scores is None or not one_score_per_sample(scores):
            continue
        array = to_numpy(scores)
        if array.dtype.kind in "iuf":
            kinds.add(in_unit_interval(array))
    return kinds == {True, False}


def as_score_matrix(scores: Any) -> Any:
    """A binary model's one score per sample, (N,) or (N, 1), as two columns (`binary_score_columns`); any other
    scores as given. What the metrics, the calibrators and the file readers take."""
    return binary_score_columns(scores)[0] if one_score_per_sample(scores) else scores


def as_logits(scores: np.ndarray, probabilities: bool | None = None) -> np.ndarray:
    """Logits from validated scores: probabilities (rows in [0, 1] summing to 1; `probabilities` when the caller has
    decided already) become their log, which differs from the logits by a constant per row; logits stay."""
    if probabilities is None:
        probabilities = looks_like_probs(scores)
    return np.log(np.maximum(scores, np.finfo(np.float64).tiny)) if probabilities else scores


def check_finite_rows(array: np.ndarray, row_sums: np.ndarray | float, *, name: str = "logits") -> None:
    """Raise unless every entry of `array` is finite, given its row sums (or any one number computed from them, such
    as the largest |row sum − 1|, that is finite only when they all are).

    NaN and Inf propagate into a row's sum, so finite sums prove finite entries; only a sum that overflowed from
    finite values needs the element-wise look.
    """
    if not np.isfinite(row_sums).all() and not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).any(axis=1).sum())
        raise InputError(f"Expected {name} to be finite, found NaN or Inf in {bad} row(s).")


# Labels above this do not fit int64 (float labels may also hold values numpy cannot cast).
_INT64_MAX = np.iinfo(np.int64).max


def check_labels(
    labels: Any, *, n: int | None = None, num_classes: int | None = None, name: str = "labels", copy: bool = True
) -> np.ndarray:
    """Validate integer class labels: 1-D, length n, values in [0, num_classes). The result is int64: a new array,
    or with copy=False the input itself when it is an int64 numpy array already (for callers that only read it).

    Other spellings of the same labels are read too: a column (N, 1) of indices (Keras' sparse targets, e.g. its
    CIFAR-10 `y_train`; scikit-learn column vectors), booleans (False/True as classes 0/1, a binary model's targets)
    and one-hot rows (N, K) with K >= 2 (Keras' categorical targets), whose single 1 gives the class. Soft rows
    (label smoothing, mixup) are refused: they hold no class index.
    """
    array = to_numpy(labels, name=name)
    if array.dtype.kind not in LABEL_KINDS and (array.size or array.dtype.kind not in _TEXT_KINDS):
        # Before one-hot rows are read: numpy counts timedelta64 (and complex) as numbers, and argmax would take them.
        raise InputError(f"Expected {name} to be integers, got dtype {array.dtype}.")
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    elif array.ndim == 2 and array.shape[1] >= 2:
        array = one_hot_to_indices(array, num_classes=num_classes, name=name)
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
    if array.dtype == np.bool_:
        array = array.view(np.uint8)
    if n is not None and array.shape[0] != n:
        raise InputError(f"Expected {name} to have {n} entries (one per sample), got {array.shape[0]}.")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        if array.dtype.kind not in "fb":  # objects, strings, complex numbers
            raise InputError(f"Expected {name} to be integers, got dtype {array.dtype}.")
        if not np.isfinite(array).all() or not np.equal(np.mod(array, 1), 0).all():
            raise InputError(f"Expected {name} to be integers, got non-integer values.")
    if array.size and array.dtype.kind in "uf" and (array.max() > _INT64_MAX or (  # would wrap around when cast
            array.dtype.kind == "f" and array.min() < -_INT64_MAX)):
        upper = f"{num_classes - 1}" if num_classes is not None else "..."
        raise InputError(f"Expected {name} in [0, {upper}], got values from {array.min():.6g} to {array.max():.6g}.")
    array = array.astype(np.int64, copy=copy)
    if array.size and (array.min() < 0 or (num_classes is not None and array.max() >= num_classes)):
        upper = f"{num_classes - 1}" if num_classes is not None else "..."
        hint = ""
        if num_classes is not None and array.min() >= 1 and array.max() == num_classes:
            hint = f": 1-based, it seems (R, MATLAB); subtract 1 to get classes 0 to {num_classes - 1}"
        elif array.min() in (-1, -100) and np.all(array[array < 0] == array.min()) and array.max() >= 0:
            hint = (f": {array.min()} marks samples without a label in some frameworks (Hugging Face uses -100); "
                    "drop those samples first")
        raise InputError(
            f"Expected {name} in [0, {upper}], got values from {array.min()} to {array.max()}{hint}."
        )
    return array


def is_one_hot(array: np.ndarray) -> bool:
    """True for a 2-D array of 0/1 (numbers or booleans) with exactly one 1 in every row."""
    if array.ndim != 2 or array.dtype == object or not (array.dtype == np.bool_ or np.issubdtype(array.dtype,
                                                                                                   np.number)):
        return False
    with np.errstate(invalid="ignore"):
        binary = array.dtype == np.bool_ or bool(((array == 0) | (array == 1)).all())
    return binary and bool((np.count_nonzero(array, axis=1) == 1).all())


def one_hot_to_indices(array: np.ndarray, *, num_classes: int | None = None, name: str = "labels") -> np.ndarray:
    """The class index of each one-hot row of a (N, K) label matrix; an error naming the problem for anything else
    (K other than the scores' num_classes, soft or multi-hot rows)."""
    if num_classes is not None and array.shape[1] != num_classes:
        raise InputError(
            f"Expected {name} to be 1-D class indices, or one-hot rows with one column per class ({num_classes}), "
            f"got shape {array.shape}."
        )
    if not is_one_hot(array):
        raise InputError(
            f"Expected {name} to be 1-D class indices or one-hot rows (a single 1 per row, 0 elsewhere), got shape "
            f"{array.shape} with other values (soft or multi-hot labels have no class index)."
        )
    return np.argmax(array, axis=1)


def softmax(logits: np.ndarray) -> np.ndarray:
    # Finite logits more than the dtype's range apart shift to -inf, whose exp is the right limit, 0: no warning.
    with np.errstate(over="ignore"):
        shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # see softmax
        shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def probability_tolerance(scores: Any) -> float:
    """How far from 1 the rows of probabilities stored in the dtype of `scores` (numpy or torch) may sum.

    PROB_SUM_TOLERANCE (float32 rounding) for float32 and wider or non-float input; 4 machine epsilons for narrower
    floats, whose rounding alone moves a row sum by up to one epsilon (float16 probabilities sum to 1 only within
    ~1e-3, bfloat16 within ~1e-2).
    """
    dtype = getattr(scores, "dtype", None)
    if hasattr(scores, "detach"):
        import torch

        eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    elif isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.floating):
        eps = float(np.finfo(dtype).eps)
    else:
        eps = 0.0
    return max(PROB_SUM_TOLERANCE, 4.0 * eps)


def looks_like_probs(
    scores: np.ndarray,
    row_sums: np.ndarray | None = None,
    minimum: float | None = None,
    *,
    tolerance: float = PROB_SUM_TOLERANCE,
    sum_deviation: float | None = None,
) -> bool:
    """True when every entry is non-negative and every row sums to 1 within `tolerance` (default: float32 rounding;
    see `probability_tolerance` for narrower input dtypes).

    No entry then exceeds 1 + tolerance, so a float32 softmax output of 1.0000001 still counts as a
    probability. `row_sums` or `sum_deviation` (the largest |row sum − 1|), and `minimum` (the smallest entry), when a
    caller has them, save passes over `scores`; the sums are checked first since logits fail there.
    """
    if sum_deviation is None:
        if row_sums is None:
            row_sums = scores.sum(axis=1)
        sum_deviation = float(np.abs(row_sums - 1.0).max())
    if not sum_deviation <= tolerance:
        return False
    return bool((scores.min() if minimum is None else minimum) >= 0.0)


def value_range(values: np.ndarray) -> str:
    """"a to b" (6 significant digits), or "a" when both read the same."""
    low, high = f"{values.min():.6g}", f"{values.max():.6g}"
    return low if low == high else f"{low} to {high}"


def check_not_near_probs(scores: np.ndarray, *, name: str = "logits",
                         fix: str = "renormalise them (p / p.sum(axis=1)) or pass logits") -> None:
    """Raise when scores that will be taken as logits look like probabilities whose rows do not sum to 1, or like
    percentages.

    That is: every entry in [0, 1] and every row sum within NEAR_PROB_SUM_TOLERANCE of 1 (but not all within the
    rounding tolerance, or they would have been taken as probabilities); or every entry in [0, 100], some above 1,
    and every row sum within 100 × NEAR_PROB_SUM_TOLERANCE of 100. Softmax of the first is nearly uniform, of the
    second nearly one-hot, so every metric would silently describe a different model. `fix` ends the message.
    Two columns whose first is 0 in every row are a binary model's decision scores [0, s] (`binary_score_columns`),
    logits by construction, whatever s.
    """
    if scores.size == 0 or scores.min() < 0.0 or scores.max() > 100.0:
        return
    if scores.shape[1] == 2 and not scores[:, 0].any():
        return
    row_sums = scores.sum(axis=1)
    sums = f"whose rows sum to {value_range(row_sums)}"
    if scores.max() <= 1.0:
        if float(np.abs(row_sums - 1.0).max()) <= NEAR_PROB_SUM_TOLERANCE:
            raise InputError(
                f"Expected {name} to be logits or probabilities whose rows sum to 1, got values in [0, 1] {sums}: "
                f"{fix}."
            )
    elif float(np.abs(row_sums - 100.0).max()) <= 100.0 * NEAR_PROB_SUM_TOLERANCE:
        raise InputError(
            f"Expected {name} to be logits or probabilities, got values in [0, 100] {sums}, percentages it seems: "
            f"{fix}."
        )


# Up to this row length einsum's float64 row sums are the same bits for any block of rows and for a narrower array as
# for its float64 copy (numpy casts in buffers of 8192 entries).
_CAST_BUFFER = 8192


def row_sums(array: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float64 sums of the rows of a 2-D float array: the same bits for an array, any block of its rows, and its
    float64 copy, so block-wise and whole-array probability computations agree exactly. (einsum's row sum is also
    ~2-3x faster than ndarray.sum(axis=1) on short rows.)"""
    if array.shape[1] > _CAST_BUFFER:
        # Long rows: einsum's float64 result can depend on the number of rows and on casting; a float64 copy summed
        # row by row by ndarray.sum does not.
        return np.asarray(array, dtype=np.float64).sum(axis=1, out=out)
    return np.einsum("ij->i", array, dtype=np.float64, out=out)


def rounding_tolerance(num_classes: int) -> float:
    """How far from 1 the float64 sum of a row of `num_classes` probabilities may fall by rounding alone: K float32
    epsilons (probabilities computed and stored in float32, the precision models produce them in), at most
    PROB_SUM_TOLERANCE. The same for every dtype, so float32 probabilities and their float64 copy are read alike; and
    far above the rounding of the float64 sum itself (K float64 epsilons), so rows holding the same values in another
    order (sums differing in the last bits) fall on one side of it unless their sum lies within a few float64
    epsilons of the tolerance."""
    return min(num_classes * float(np.finfo(np.float32).eps), PROB_SUM_TOLERANCE)


def within_rounding(row_sums: np.ndarray, num_classes: int) -> np.ndarray:
    """Rows whose float64 sum is 1 up to rounding (`rounding_tolerance`).

    Such rows are probabilities already and are used as given: dividing them by their sums would only add rounding,
    change float32 probabilities below float32's own precision, and make rows that hold the same values in another
    order stop being tied.
    """
    return np.abs(row_sums - 1.0) <= rounding_tolerance(num_classes)


def normalise_probs(scores: np.ndarray, sums: np.ndarray | None = None) -> np.ndarray:
    """float64 probabilities from rows that sum to 1 within tolerance: rows within rounding of 1 as given
    (`within_rounding`), the others divided by their sums (float16 rows, rounded or truncated probabilities).
    `sums` are the `row_sums` of `scores` when the caller has them."""
    if sums is None:
        sums = row_sums(scores)
    scores = np.asarray(scores, dtype=np.float64)
    divisor = np.where(within_rounding(sums, scores.shape[1]), 1.0, sums)
    return scores / divisor[:, None]


def to_probs(scores: np.ndarray) -> tuple[np.ndarray, str]:
    """Probabilities from validated scores, and which kind of input was assumed ("probs" or "logits")."""
    sums = row_sums(scores)
    if looks_like_probs(scores, sums):
        return normalise_probs(scores, sums), "probs"
    return softmax(scores), "logits"


def check_predictions(scores: Any, labels: Any, *, name: str = "logits") -> tuple[np.ndarray, np.ndarray, str]:
    """Validate (scores, labels) together; return (probs, labels, assumed input kind)."""
    scores = check_scores(scores, name=name)
    labels = check_labels(labels, n=scores.shape[0], num_classes=scores.shape[1])
    probs, assumed = to_probs(scores)
    return probs, labels, assumed
