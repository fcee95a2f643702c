"""adacal.checks: one message template naming the argument, the expected kind and the value found."""

import math

import numpy as np
import pytest

from adacal.checks import (
    check_finite,
    check_in_range,
    check_integer,
    check_non_negative_int,
    check_positive_int,
)
from adacal.errors import CheckpointError, InputError


@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.int32(1)])
def test_positive_int_accepts_python_and_numpy_integers(value):
    result = check_positive_int(value, "--n-bins")
    assert result == int(value) and type(result) is int


@pytest.mark.parametrize(
    ("value", "found"),
    [(0, "0"), (-3, "-3"), (np.int64(0), "0"), (True, "True"), (2.0, "2.0"), ("3", "'3'"), (None, "None")],
)
def test_positive_int_refuses_with_one_sentence(value, found):
    with pytest.raises(InputError) as caught:
        check_positive_int(value, "--n-bins")
    assert str(caught.value) == f"Expected --n-bins to be a positive integer, got {found}."


def test_integer_kinds_and_bounds():
    assert check_non_negative_int(0, "--seed") == 0
    with pytest.raises(InputError, match=r"^Expected --bootstrap to be a non-negative integer \(0 = no intervals\), "
                                         r"got -1\.$"):
        check_non_negative_int(-1, "--bootstrap", note=" (0 = no intervals)")
    with pytest.raises(InputError, match=r"^Expected --folds to be an integer >= 2, got 1\.$"):
        check_integer(1, "--folds", minimum=2)
    assert check_integer(2400, "dpi (--dpi)", minimum=10, maximum=2400) == 2400
    with pytest.raises(InputError, match=r"^Expected dpi \(--dpi\) to be an integer between 10 and 2400, got 2401\.$"):
        check_integer(2401, "dpi (--dpi)", minimum=10, maximum=2400)
    with pytest.raises(CheckpointError):
        check_integer(0, "the training option epochs", minimum=1, error=CheckpointError)


def test_finite_and_range():
    assert check_finite(np.float32(0.5), "--lr") == 0.5
    for bad in (math.inf, math.nan, "x", False):
        with pytest.raises(InputError, match="^Expected --lr to be a finite number, got "):
            check_finite(bad, "--lr")
    assert check_in_range(1.0, "level", 0.0, 1.0) == 1.0
    for bad in (0.0, 1.0, math.nan, 2):
        with pytest.raises(InputError, match=r"^Expected level to be a number strictly between 0 and 1 such as 0\.9, "
                                             r"got "):
            check_in_range(bad, "level", 0.0, 1.0, inclusive=False, example=" such as 0.9")


def test_name_items_splits_strings_and_checks_sequences():
    from adacal.checks import name_items

    assert name_items(" ece-em, nll ,", "metric names") == ["ece-em", "nll", ""]
    assert name_items(("a", " b"), "metric names") == ["a", "b"]
    with pytest.raises(InputError, match=r"Expected metric names as a comma-separated string or a list of strings, "
                                         r"got 5\."):
        name_items(5, "metric names")
    with pytest.raises(InputError, match=r"Expected metric names to be strings, got 3\."):
        name_items(["a", 3], "metric names")
