"""Temperature scaling: recovers a known temperature, minimises what it claims to, never changes the argmax."""

import numpy as np
import pytest
from calibration import get_ece, get_ece_em
from scipy.special import log_softmax, softmax

from adacal.calibrators import TemperatureScaling, build_calibrator
from adacal.errors import InputError, UnknownNameError


@pytest.mark.parametrize("true_temperature", [0.6, 2.5])
def test_recovers_known_temperature(problem, true_temperature):
    """Within 0.05 at N = 20,000 for every objective (T0 is on the paper's 0.1 grid, so the grid ones hit it)."""
    logits, labels = problem(n=20_000, k=10, sigma=4.0, true_temperature=true_temperature, seed=0)
    for objective in ("nll", "ece-em", "ece-ew"):
        fitted = TemperatureScaling(objective=objective).fit(logits, labels).temperature_
        assert abs(fitted - true_temperature) <= 0.05, objective


def _reference_nll(logits, labels, temperature):
    return -np.mean(log_softmax(logits / temperature, axis=1)[np.arange(labels.size), labels])


def test_nll_objective_minimises_nll(problem):
    logits, labels = problem(n=1000, k=5, sigma=3.0, true_temperature=1.7, seed=1)
    fitted = TemperatureScaling(objective="nll").fit(logits, labels).temperature_
    coarse = np.geomspace(0.05, 20.0, 400)  # ratio 1.015 between neighbours
    coarse_best = coarse[np.argmin([_reference_nll(logits, labels, t) for t in coarse])]
    assert abs(np.log(coarse_best / fitted)) <= 0.016  # the same basin: nothing better elsewhere in [0.05, 20]
    fine = np.arange(fitted - 0.01, fitted + 0.01, 1e-4)
    fine_best = fine[np.argmin([_reference_nll(logits, labels, t) for t in fine])]
    assert abs(fine_best - fitted) < 1e-3
    assert _reference_nll(logits, labels, fitted) <= min(_reference_nll(logits, labels, t) for t in fine) + 1e-12


@pytest.mark.parametrize(("objective", "reference_ece"), [("ece-em", get_ece_em), ("ece-ew", get_ece)])
def test_grid_objective_matches_published_ece(problem, objective, reference_ece):
    """The grid T is the argmin of ECE as computed by the `uncertainty-calibration` package."""
    logits, labels = problem(n=1000, k=4, sigma=3.0, true_temperature=1.8, seed=2)
    fitted = TemperatureScaling(objective=objective).fit(logits, labels).temperature_
    grid = np.arange(1, 101) / 10.0
    eces = np.array([reference_ece(softmax(logits / t, axis=1), labels, num_bins=15) for t in grid])
    assert fitted in grid
    assert reference_ece(softmax(logits / fitted, axis=1), labels, num_bins=15) <= eces.min() + 1e-9


def test_grid_ties_go_to_temperature_closest_to_one():
    logits = np.zeros((50, 3))  # every temperature gives the same probabilities, so every ECE ties
    labels = np.arange(50) % 3
    assert TemperatureScaling(objective="ece-em").fit(logits, labels).temperature_ == 1.0


@pytest.mark.parametrize("objective", ["nll", "ece-em", "ece-ew"])
def test_scaling_never_changes_the_argmax(problem, objective):
    logits, labels = problem(n=3000, k=7, sigma=2.0, true_temperature=0.4, seed=3)
    calibrator = TemperatureScaling(objective=objective).fit(logits, labels)
    probs = calibrator.transform(logits)
    np.testing.assert_array_equal(probs.argmax(axis=1), logits.argmax(axis=1))
    np.testing.assert_allclose(probs, softmax(logits / calibrator.temperature_, axis=1), rtol=1e-12, atol=1e-15)


def test_probabilities_as_input_are_taken_as_log_probabilities(problem):
    logits, labels = problem(n=2000, k=5, sigma=3.0, true_temperature=1.5, seed=4)
    from_logits = TemperatureScaling().fit(logits, labels)
    from_probs = TemperatureScaling().fit(softmax(logits, axis=1), labels)
    assert from_probs.temperature_ == pytest.approx(from_logits.temperature_, abs=1e-6)
    np.testing.assert_allclose(
        from_probs.transform(softmax(logits, axis=1)), from_logits.transform(logits), atol=1e-6
    )


def test_shuffling_changes_nothing(problem):
    logits, labels = problem(n=1500, k=4, sigma=3.0, true_temperature=1.3, seed=5)
    order = np.random.default_rng(0).permutation(labels.size)
    for objective in ("nll", "ece-em"):
        a = TemperatureScaling(objective=objective).fit(logits, labels).temperature_
        b = TemperatureScaling(objective=objective).fit(logits[order], labels[order]).temperature_
        assert a == pytest.approx(b, abs=1e-7)


def test_library_default_objective_is_nll_and_options_are_checked():
    assert TemperatureScaling().objective == "nll"
    with pytest.raises(UnknownNameError, match="Did you mean 'ece-em'"):
        build_calibrator("temperature", objective="ece_em")
    with pytest.raises(InputError, match="Expected n_bins to be a positive integer, got 0"):
        build_calibrator("temperature", n_bins=0)
    with pytest.raises(TypeError):
        TemperatureScaling("nll")  # options are keyword-only


@pytest.mark.parametrize("seed", range(6))
def test_nll_fit_never_worsens_validation_nll_and_matches_a_fine_scan(problem, seed):
    """Over- and under-confident, small and large: NLL(T_fit) ≤ NLL(1) and ≤ every T of a fine log-spaced scan."""
    rng = np.random.default_rng(seed)
    logits, labels = problem(n=int(rng.integers(20, 400)), k=int(rng.integers(2, 8)), sigma=float(rng.uniform(0.3, 5)),
                             true_temperature=float(rng.uniform(0.3, 4)), seed=seed)
    calibrator = TemperatureScaling().fit(logits, labels)
    fitted = _reference_nll(logits, labels, calibrator.temperature_)
    assert fitted <= _reference_nll(logits, labels, 1.0) + 1e-12
    scan = np.exp(np.linspace(np.log(0.05), np.log(20.0), 3000))
    assert fitted <= min(_reference_nll(logits, labels, t) for t in scan) + 1e-9
    assert calibrator.at_bound_ is False


def test_fit_at_the_edge_of_its_range_is_flagged():
    rng = np.random.default_rng(0)
    noise_logits = rng.normal(0.0, 30.0, size=(400, 3))  # confident but unrelated to the labels: T → ∞
    labels = rng.integers(0, 3, size=400)
    for objective, edge in (("nll", 20.0), ("ece-em", 10.0), ("ece-ew", 10.0)):
        calibrator = TemperatureScaling(objective=objective).fit(noise_logits, labels)
        assert calibrator.temperature_ == pytest.approx(edge, rel=1e-3) and calibrator.at_bound_ is True
        assert calibrator.summary()["at_bound"] is True
        assert TemperatureScaling.from_dict(calibrator.to_dict()).at_bound_ is True
    sharp_logits = np.eye(3)[labels] * 0.01  # right every time but timid: T → 0
    calibrator = TemperatureScaling().fit(sharp_logits, labels)
    assert calibrator.temperature_ == pytest.approx(0.05, rel=1e-3) and calibrator.at_bound_ is True


def test_calibrators_saved_before_at_bound_existed_still_load():
    """A temperature calibrator dict as written by earlier versions (no at_bound anywhere) loads and transforms."""
    from adacal.calibrators import Calibrator

    saved = {"method": "temperature", "format_version": 1, "options": {"objective": "ece-em", "n_bins": 15},
             "params": {"temperature": 2.5}, "num_classes": 4}
    calibrator = Calibrator.from_dict(saved)
    logits = np.random.default_rng(0).normal(0.0, 3.0, size=(20, 4))
    np.testing.assert_allclose(calibrator.transform(logits), softmax(logits / 2.5, axis=1), rtol=1e-12)
    assert calibrator.at_bound_ is False and calibrator.summary() == {"temperature": 2.5, "at_bound": False}
    assert calibrator.to_dict() == {**saved, "fitted_on": "logits"}  # what an old dict means, now said


def test_nll_fit_on_logits_near_the_float64_limit_converges_quietly():
    """At small T such logits overflow (an infinite NLL): out of reach, not a failed fit, and no warnings."""
    import warnings

    from adacal.calibrators import TemperatureScaling

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(300, 4)) * 1e307
    labels = np.where(rng.random(300) < 0.8, logits.argmax(axis=1), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calibrator = TemperatureScaling().fit(logits, labels)
    assert calibrator.temperature_ == pytest.approx(20.0)  # the largest T: the flattest the search allows
    assert np.isfinite(calibrator.transform(logits)).all()


# ----- a temperature keeps the argmax or is refused (#39) -------------------------------------------------------------
def _saved(temperature, method="temperature", weights=None):
    params = {"temperature": temperature} if weights is None else {"temperature": temperature, "weights": weights}
    return {"method": method, "format_version": 1, "options": {}, "params": params, "num_classes": 10,
            "fitted_on": "logits"}


@pytest.fixture(scope="module")
def ten_class():
    """float32 logits of a 10-class model (error ~ 55 %), as a network writes them."""
    from calibration_problems import make_problem

    logits, labels = make_problem(n=2000, k=10, sigma=3.0, true_temperature=2.0, seed=1)
    return logits.astype(np.float32).astype(np.float64), labels


@pytest.mark.parametrize("method", ["temperature", "ets"])
@pytest.mark.parametrize("temperature", [1e308, 1e300, 1e7, 1e-7, 1e-300])
def test_a_saved_temperature_far_outside_any_fit_is_refused_at_load(method, temperature):
    """softmax(z / 1e300) gives 0.1 to every class of every row: read as given, error went from 55 % to 90 %."""
    from adacal.calibrators import Calibrator
    from adacal.errors import InputError

    weights = [1.0, 0.0, 0.0] if method == "ets" else None
    import re

    with pytest.raises(InputError, match=r"'temperature' must lie in \[1e-06, 1e\+06\].*got "
                                         + re.escape(f"{temperature:.6g}")):
        Calibrator.from_dict(_saved(temperature, method, weights))
    for edge in (1e-6, 1e6):  # the limits themselves load
        assert Calibrator.from_dict(_saved(edge, method, weights)).temperature_ == edge


@pytest.mark.parametrize("temperature", [1e308, 1e300, 1e30])
def test_a_temperature_that_ties_rows_is_refused_in_transform(ten_class, temperature):
    """Set by hand past the load check, a huge T ties every row's top class (exp of gaps below float64's
    resolution): refused, where it used to answer class 0 for every row."""
    from adacal.errors import InputError

    logits, _ = ten_class
    calibrator = TemperatureScaling().fit(logits, ten_class[1])
    calibrator.temperature_ = temperature
    with pytest.raises(InputError, match=r"keep each row's predicted class, but it ties the top class with another "
                                         r"in 2000 of 2000 rows, row 0 first \(T = 1e\+"):
        calibrator.transform(logits)


@pytest.mark.parametrize("temperature", [1e-300, 1e-6, 0.05, 1.0, 20.0, 1e6])
def test_any_accepted_temperature_keeps_the_argmax_and_gives_finite_probabilities(ten_class, temperature):
    logits, labels = ten_class
    calibrator = TemperatureScaling().fit(logits, labels)
    calibrator.temperature_ = temperature
    probs = calibrator.transform(logits)
    assert np.isfinite(probs).all()
    np.testing.assert_array_equal(probs.argmax(axis=1), logits.argmax(axis=1))
    top = probs.max(axis=1, keepdims=True)
    assert ((probs == top).sum(axis=1) == 1).all()  # no tie at the top
    if temperature == 1e-300:  # z / T would overflow to inf − inf = NaN; (z − max z) / T gives the one-hot limit
        np.testing.assert_array_equal(probs, np.eye(10)[logits.argmax(axis=1)])
    else:
        np.testing.assert_allclose(probs, softmax(logits / temperature, axis=1), rtol=1e-9, atol=1e-300)


def test_ets_whose_temperature_ties_rows_is_refused(ten_class):
    from adacal.calibrators import EnsembleTemperatureScaling
    from adacal.errors import InputError

    logits, labels = ten_class
    calibrator = EnsembleTemperatureScaling().fit(logits, labels)
    calibrator.temperature_, calibrator.weights_ = 1e300, np.array([1.0, 0.0, 0.0])
    with pytest.raises(InputError, match="ets calibrator to keep each row's predicted class.*T = 1e\\+300"):
        calibrator.transform(logits)
    calibrator.weights_ = np.array([0.5, 0.5, 0.0])  # softmax(z) keeps them apart: the mixture's argmax is kept
    np.testing.assert_array_equal(calibrator.transform(logits).argmax(axis=1), logits.argmax(axis=1))


def test_rows_the_model_itself_ties_are_not_blamed_on_the_temperature():
    """A row whose top two logits are equal ties at every T: the model's tie, kept, not refused."""
    calibrator = TemperatureScaling().fit(np.array([[2.0, 0.0, 0.0]] * 4), [0, 0, 0, 1])
    probs = calibrator.transform(np.array([[1.0, 1.0, 0.0], [3.0, 1.0, 1.0]]))
    assert probs[0, 0] == probs[0, 1] and probs[1].argmax() == 0


@pytest.mark.parametrize("temperature", [1e308, 1e300, 1e-300])
def test_shift_and_ood_refuse_such_a_temperature_given_or_read_from_calibrate_json(tmp_path, temperature):
    """`shift` and `ood` divide logits by T themselves (--temperature, or the run's calibrate.json): the same limits."""
    from adacal.errors import InputError
    from adacal.ood.scores import check_temperature, resolve_temperature
    from adacal.reports import make_report, write_json

    with pytest.raises(InputError, match=r"Expected --temperature to lie in \[1e-06, 1e\+06\]"):
        check_temperature(temperature)
    path = tmp_path / "calibrate.json"
    results = {"calibrators": {"temperature": {"params": {"temperature": temperature}}}, "best": "temperature"}
    write_json(path, make_report("calibrate", config={}, results=results))
    with pytest.raises(InputError, match="the temperature of 'temperature' in .*calibrate.json to lie in"):
        resolve_temperature(calibration=path)
    assert check_temperature(2.5) == 2.5
