"""adacal.arrays: every validation message, numeric helpers, probability detection."""

import numpy as np
import pytest
import torch

from adacal.arrays import (
    PROB_SUM_TOLERANCE,
    check_not_near_probs,
    check_scores_and_row_sums,
    check_labels,
    check_predictions,
    check_scores,
    log_softmax,
    looks_like_probs,
    probability_tolerance,
    softmax,
    to_numpy,
    to_probs,
)
from adacal.errors import InputError


def test_to_numpy_handles_torch_lists_and_bfloat16():
    assert to_numpy([1, 2]).tolist() == [1, 2]
    tensor = torch.tensor([[1.5, 2.0]], requires_grad=True)
    assert to_numpy(tensor).tolist() == [[1.5, 2.0]]
    bf16 = to_numpy(torch.tensor([1.0, 2.0], dtype=torch.bfloat16))
    assert bf16.dtype == np.float64 and bf16.tolist() == [1.0, 2.0]
    assert to_numpy(torch.tensor([1, 2])).dtype == np.int64


@pytest.mark.parametrize(
    "scores, message",
    [
        (np.array([["a", "b"]]), r"Expected logits to be numeric, got dtype <U1\."),
        (np.array([[object(), 1]], dtype=object), r"Expected logits to be numeric, got dtype object\."),
        (np.ones(3), r"Expected logits to be 2-D \(samples, classes\), got shape \(3,\)\."),
        (np.ones((2, 2, 2)), r"Expected logits to be 2-D \(samples, classes\), got shape \(2, 2, 2\)\."),
        (np.ones((0, 3)), r"Expected logits to hold at least one sample, got shape \(0, 3\)\."),
        (np.ones((4, 1)), r"Expected logits to have at least 2 classes, got shape \(4, 1\)\."),
        (np.array([[np.nan, 0.0], [np.inf, 1.0], [0.0, 1.0]]),
         r"Expected logits to be finite, found NaN or Inf in 2 row\(s\)\."),
    ],
)
def test_check_scores_messages(scores, message):
    with pytest.raises(InputError, match=message):
        check_scores(scores)


def test_check_scores_names_the_input_and_converts():
    with pytest.raises(InputError, match="Expected preds.npz:logits to be 2-D"):
        check_scores(np.ones(2), name="preds.npz:logits")
    checked = check_scores(np.array([[1, 2]], dtype=np.int32))
    assert checked.dtype == np.float64
    assert check_scores(torch.ones(2, 3, dtype=torch.float16)).dtype == np.float64


@pytest.mark.parametrize(
    "labels, kwargs, message",
    [
        (np.zeros((2, 2), dtype=int), {}, r"Expected labels to be 1-D class indices or one-hot rows .* got shape "
                                           r"\(2, 2\) with other values"),
        (np.zeros((2, 1, 1), dtype=int), {}, r"Expected labels to be 1-D, got shape \(2, 1, 1\)\."),
        (np.zeros(3, dtype=int), {"n": 4}, r"Expected labels to have 4 entries \(one per sample\), got 3\."),
        (np.array(["a", "b"]), {}, r"Expected labels to be integers, got dtype <U1\."),
        (np.array([0.0, 1.5]), {}, r"Expected labels to be integers, got non-integer values\."),
        (np.array([0.0, np.nan]), {}, r"Expected labels to be integers, got non-integer values\."),
        (np.array([-1, 0]), {"num_classes": 3}, r"Expected labels in \[0, 2\], got values from -1 to 0: -1 marks "
                                                r"samples without a label .* drop those samples first\."),
        (np.array([-100, 2]), {"num_classes": 3}, r"from -100 to 2: -100 marks samples without a label in some "
                                                  r"frameworks \(Hugging Face uses -100\)"),
        (np.array([1, 3, 2]), {"num_classes": 3}, r"Expected labels in \[0, 2\], got values from 1 to 3: 1-based, it "
                                                  r"seems \(R, MATLAB\); subtract 1 to get classes 0 to 2\."),
        (np.array([-5, -100, 1]), {"num_classes": 3}, r"got values from -100 to 1\.$"),
        (np.array([0, 3]), {"num_classes": 3}, r"Expected labels in \[0, 2\], got values from 0 to 3\."),
        (np.array([-2, 0]), {}, r"Expected labels in \[0, \.\.\.\], got values from -2 to 0\."),
    ],
)
def test_check_labels_messages(labels, kwargs, message):
    with pytest.raises(InputError, match=message):
        check_labels(labels, **kwargs)


def test_check_labels_accepts_integer_valued_floats_torch_and_empty():
    assert check_labels(np.array([0.0, 2.0]), num_classes=3).tolist() == [0, 2]
    assert check_labels(torch.tensor([1, 0])).dtype == np.int64
    assert check_labels(np.array([], dtype=float)).shape == (0,)
    with pytest.raises(InputError, match="Expected targets to be 1-D"):
        check_labels(np.zeros((2, 1, 1)), name="targets")


def test_check_labels_reads_a_column_of_class_indices():
    """Keras' sparse targets (its CIFAR-10 y_train is uint8 (50000, 1)) and scikit-learn column vectors."""
    labels = np.array([3, 0, 9, 9])
    for column in (labels[:, None].astype(np.uint8), labels[:, None].astype(float), torch.tensor(labels)[:, None]):
        np.testing.assert_array_equal(check_labels(column, n=4, num_classes=10), labels)
    np.testing.assert_array_equal(check_labels(np.array([[True], [False]])), [1, 0])
    assert check_labels(np.zeros((1, 1))).tolist() == [0]
    with pytest.raises(InputError, match=r"Expected labels in \[0, 8\], got values from 0 to 9\."):
        check_labels(labels[:, None], num_classes=9)
    with pytest.raises(InputError, match="to have 3 entries"):
        check_labels(labels[:, None], n=3)
    with pytest.raises(InputError, match="non-integer"):
        check_labels(np.array([[0.5], [1.0]]))


def test_check_labels_reads_one_hot_rows_and_booleans_as_class_indices():
    labels = np.array([2, 0, 1, 1])
    one_hot = np.eye(3)[labels]
    for spelled in (one_hot, one_hot.astype(bool), one_hot.astype(np.float32), torch.from_numpy(one_hot).int()):
        np.testing.assert_array_equal(check_labels(spelled, n=4, num_classes=3), labels)
    # the class of a one-hot row is where its 1 is, not the first or last column
    assert check_labels(np.array([[0, 0, 0, 1], [0, 1, 0, 0]])).tolist() == [3, 1]
    assert check_labels(np.array([True, False, True])).tolist() == [1, 0, 1]
    with pytest.raises(InputError, match=r"Expected labels in \[0, 0\], got values from 0 to 1\."):
        check_labels(np.array([True, False]), num_classes=1)


@pytest.mark.parametrize(
    "rows, message",
    [
        ([[0.9, 0.05, 0.05], [0.0, 1.0, 0.0]], "soft or multi-hot labels have no class index"),  # label smoothing
        ([[1, 1, 0], [0, 1, 0]], "soft or multi-hot"),  # multi-hot
        ([[0, 0, 0], [0, 1, 0]], "soft or multi-hot"),  # a row with no class
        ([[np.nan, 1, 0], [0, 1, 0]], "soft or multi-hot"),
        ([[2, 0, 0], [0, 1, 0]], "soft or multi-hot"),
    ],
)
def test_check_labels_refuses_label_matrices_that_are_not_one_hot(rows, message):
    with pytest.raises(InputError, match=message):
        check_labels(np.array(rows), num_classes=3)


def test_check_labels_refuses_one_hot_rows_of_another_width_than_the_scores():
    with pytest.raises(InputError, match=r"one column per class \(4\), got shape \(2, 3\)"):
        check_labels(np.eye(3)[[0, 1]], n=2, num_classes=4)


def test_softmax_and_log_softmax_are_stable():
    logits = np.array([[1000.0, 1000.0], [-1000.0, 0.0], [0.0, 0.0]])
    probs = softmax(logits)
    assert np.isfinite(probs).all()
    assert probs[0].tolist() == [0.5, 0.5] and probs[1].tolist() == [0.0, 1.0]
    log_probs = log_softmax(logits)
    assert log_probs[1].tolist() == [-1000.0, 0.0]
    assert np.allclose(np.exp(log_softmax(np.array([[1.0, 2.0, 3.0]]))), softmax(np.array([[1.0, 2.0, 3.0]])))


def test_looks_like_probs_and_to_probs():
    probs = np.array([[0.2, 0.8], [0.5, 0.5]])
    assert looks_like_probs(probs)
    assert looks_like_probs(np.array([[0.2, 0.80005]]))  # float32 rounding is tolerated
    assert not looks_like_probs(np.array([[0.2, 0.81]]))
    assert not looks_like_probs(np.array([[-0.2, 1.2]]))  # sums to 1 but outside [0, 1]
    out, assumed = to_probs(np.array([[0.2, 0.80005]]))
    assert assumed == "probs" and out.sum() == pytest.approx(1.0, abs=1e-15)
    out, assumed = to_probs(np.array([[0.0, np.log(3.0)]]))
    assert assumed == "logits" and out[0].tolist() == pytest.approx([0.25, 0.75])


def test_check_predictions():
    probs, labels, assumed = check_predictions(np.array([[2.0, 0.0]]), [0])
    assert assumed == "logits" and labels.tolist() == [0] and probs.sum() == pytest.approx(1.0)
    with pytest.raises(InputError, match="Expected labels to have 1 entries"):
        check_predictions(np.array([[2.0, 0.0]]), [0, 1])
    with pytest.raises(InputError, match=r"Expected labels in \[0, 1\]"):
        check_predictions(np.array([[2.0, 0.0]]), [2])


def test_finiteness_check_survives_row_sums_that_overflow():
    huge = np.array([[1e308, 1e308, -5.0], [0.0, 1.0, 2.0]])
    scores, row_sums = check_scores_and_row_sums(huge)
    assert np.isinf(row_sums[0]) and scores is not None  # finite entries whose sum overflows are accepted
    for bad in (np.nan, np.inf, -np.inf):
        values = huge.copy()
        values[1, 2] = bad
        with pytest.raises(InputError, match=r"found NaN or Inf in 1 row\(s\)"):
            check_scores(values)


def test_looks_like_probs_with_given_row_sums_matches_computing_them():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(5), size=20)
    for scores in (probs, probs * (1 + 5e-5), rng.normal(size=(20, 5)), probs * 1.01):
        assert looks_like_probs(scores, scores.sum(axis=1)) == looks_like_probs(scores)


def test_float32_rounding_above_one_still_counts_as_probabilities():
    probs = np.array([[np.nextafter(np.float32(1), np.float32(2)), 0.0], [0.25, 0.75]], dtype=np.float32)
    assert probs[0, 0] > 1.0 and looks_like_probs(check_scores(probs))
    assert not looks_like_probs(np.array([[1.5, -0.5], [0.25, 0.75]]))


def test_probability_tolerance_follows_the_input_dtype():
    assert probability_tolerance(np.zeros((1, 2))) == PROB_SUM_TOLERANCE
    assert probability_tolerance(np.zeros((1, 2), dtype=np.float32)) == PROB_SUM_TOLERANCE
    assert probability_tolerance([[0.5, 0.5]]) == PROB_SUM_TOLERANCE
    assert probability_tolerance(np.zeros((1, 2), dtype=np.int64)) == PROB_SUM_TOLERANCE
    assert probability_tolerance(np.zeros((1, 2), dtype=np.float16)) == pytest.approx(4 * 2.0**-10)
    assert probability_tolerance(torch.zeros(1, 2, dtype=torch.bfloat16)) == pytest.approx(4 * 2.0**-7)
    assert probability_tolerance(torch.zeros(1, 2)) == PROB_SUM_TOLERANCE
    # float16 probabilities of 10 classes sum to 1 only within ~1e-3: they pass with their own tolerance only
    probs = softmax(np.random.default_rng(0).normal(size=(500, 10)) * 2).astype(np.float16)
    wide = probs.astype(np.float64)
    assert not looks_like_probs(wide)
    assert looks_like_probs(wide, tolerance=probability_tolerance(probs))


def test_check_not_near_probs():
    for name, scores in {
        "truncated": np.array([[0.6, 0.3, 0.05], [0.2, 0.2, 0.6]]),
        "rounded": np.array([[0.33, 0.33, 0.33], [0.5, 0.25, 0.25]]),
    }.items():
        with pytest.raises(InputError, match=r"Expected x to be logits or probabilities whose rows sum to 1, got"):
            check_not_near_probs(scores, name="x")
    # logits: negative entries, entries above 1, rows far from summing to 1 (all-zero logits: a uniform model)
    for scores in (np.array([[-0.1, 0.6, 0.5]]), np.array([[1.2, 0.0]]), np.zeros((3, 4)), np.full((2, 3), 0.9)):
        check_not_near_probs(scores)


@pytest.mark.parametrize("k", [2, 3, 7, 100, 8192, 8193])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_row_sums_are_the_same_bits_for_blocks_and_float64_copies(k, dtype):
    from adacal.arrays import row_sums

    rng = np.random.default_rng(k)
    scores = (rng.random((9, k)) ** 6).astype(dtype)
    whole = row_sums(scores)
    assert whole.dtype == np.float64
    np.testing.assert_array_equal(whole, row_sums(scores.astype(np.float64)))
    np.testing.assert_array_equal(whole, np.concatenate([row_sums(scores[i : i + 1]) for i in range(9)]))
    np.testing.assert_array_equal(whole, np.concatenate([row_sums(scores[:4]), row_sums(scores[4:])]))
    np.testing.assert_allclose(whole, scores.astype(np.float64).sum(axis=1), rtol=1e-14)


def test_softmax_of_logits_further_apart_than_the_float_range_gives_the_limit_quietly():
    import warnings

    logits = np.array([[1e308, -1e308, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert softmax(logits).tolist() == [[1.0, 0.0, 0.0]]
        assert log_softmax(logits)[0, 0] == 0.0 and log_softmax(logits)[0, 1] == -np.inf


def test_complex_one_score_per_sample_is_refused_not_cast():
    """The binary expansion casts to float64: complex scores would lose their imaginary part, silently."""
    import warnings

    from adacal.metrics import ece_em
    from adacal.interpretation.kind import read_binary_kind

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"Expected scores to be real numbers, got dtype complex128\."):
            ece_em(np.array([0.5 + 1j, 0.2]), [0, 1])
        with pytest.raises(InputError, match=r"Expected p\.npz:probs to be real numbers, got dtype complex128\."):
            read_binary_kind(np.array([[0.5 + 1j], [0.2]]), name="p.npz:probs")
