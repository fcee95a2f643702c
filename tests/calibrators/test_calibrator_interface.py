"""The shared calibrator interface: registry sweep, JSON round trips, save/load, and clear errors."""

import json

import numpy as np
import pytest

from adacal.calibrators import (
    CALIBRATORS,
    Calibrator,
    TemperatureScaling,
    build_calibrator,
    load_calibrator,
    save_calibrator,
)
from adacal.errors import InputError, NotFittedError, UnknownNameError
from adacal.reports import make_report, write_json
from adacal.sources.documents import read_json

NAMES = CALIBRATORS.names()


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    logits = rng.normal(0.0, 3.0, size=(300, 4))
    labels = np.where(rng.random(300) < 0.7, logits.argmax(axis=1), rng.integers(0, 4, size=300))
    new_logits = rng.normal(0.0, 3.0, size=(100, 4))
    return logits, labels, new_logits


@pytest.fixture(scope="module")
def fitted(small):
    logits, labels, _ = small
    return {name: build_calibrator(name).fit(logits, labels) for name in NAMES}


def test_registry_has_every_method():
    assert NAMES == ["beta", "dirichlet", "ets", "histogram", "isotonic", "matrix-scaling", "platt",
                     "scaling-binning", "spline", "temperature", "top-label-histogram", "top-label-isotonic",
                     "uncalibrated", "vector-scaling"]


@pytest.mark.parametrize("name", NAMES)
def test_registry_sweep(small, fitted, name):
    _, _, new_logits = small
    calibrator = fitted[name]
    assert calibrator.name == name and calibrator.num_classes_ == 4
    probs = calibrator.transform(new_logits)
    assert probs.shape == (100, 4) and probs.dtype == np.float64
    assert np.isfinite(probs).all() and (probs >= 0).all() and (probs <= 1).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    if calibrator.keeps_argmax:  # all but the class-wise linear maps (see test_linear_calibrators)
        np.testing.assert_array_equal(probs.argmax(axis=1), new_logits.argmax(axis=1))
    assert isinstance(calibrator.summary(), dict)


@pytest.mark.parametrize("name", NAMES)
def test_dict_and_file_round_trips_give_identical_outputs(small, fitted, name, tmp_path):
    _, _, new_logits = small
    calibrator = fitted[name]
    data = calibrator.to_dict()
    assert set(data) == {"method", "format_version", "options", "params", "num_classes", "fitted_on"}
    assert data["method"] == name and data["format_version"] == 1
    expected = calibrator.transform(new_logits)
    through_json = Calibrator.from_dict(json.loads(json.dumps(data, allow_nan=False)))
    assert type(through_json) is type(calibrator)
    np.testing.assert_array_equal(through_json.transform(new_logits), expected)
    np.testing.assert_array_equal(type(calibrator).from_dict(data).transform(new_logits), expected)
    path = save_calibrator(calibrator, tmp_path / "calibrator.json")
    saved = read_json(path)
    assert saved["kind"] == "calibrator" and saved["schema_version"] == 1 and "adacal_version" in saved
    np.testing.assert_array_equal(load_calibrator(path).transform(new_logits), expected)


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_use_is_a_clear_error(small, name, tmp_path):
    calibrator = build_calibrator(name)
    message = f"{type(calibrator).__name__} is not fitted yet; call fit\\(logits, labels\\) first."
    for use in (lambda: calibrator.transform(small[2]), calibrator.to_dict,
                lambda: save_calibrator(calibrator, tmp_path / "c.json")):
        with pytest.raises(NotFittedError, match=message):
            use()
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("name", NAMES)
def test_wrong_number_of_classes_is_an_input_error(fitted, name):
    with pytest.raises(InputError, match=r"Expected logits with 4 classes \(as in fit\), got shape \(5, 3\)"):
        fitted[name].transform(np.zeros((5, 3)))


def test_bad_fit_inputs_are_input_errors(small):
    logits, labels, _ = small
    bad = logits.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputError, match="finite"):
        TemperatureScaling().fit(bad, labels)
    with pytest.raises(InputError, match="Expected labels to have 300 entries"):
        TemperatureScaling().fit(logits, labels[:-1])
    with pytest.raises(InputError, match=r"Expected labels in \[0, 3\]"):
        TemperatureScaling().fit(logits, labels + 1)


def test_unknown_names_and_options():
    with pytest.raises(UnknownNameError, match="Unknown calibrator 'temprature'. Did you mean 'temperature'"):
        build_calibrator("temprature")
    with pytest.raises(InputError, match="does not take option\\(s\\) n_bins; it takes: none"):
        build_calibrator("isotonic", n_bins=10)
    with pytest.raises(InputError, match="Expected n_knots to be an integer >= 3, got 2"):
        build_calibrator("spline", n_knots=2)
    with pytest.raises(InputError, match="Expected n_bins to be a positive integer, got 0"):
        build_calibrator("histogram", n_bins=0)


def test_from_dict_rejects_wrong_method_version_and_params(fitted):
    data = fitted["temperature"].to_dict()
    with pytest.raises(InputError, match="Expected a 'ets' calibrator, got method 'temperature'"):
        type(fitted["ets"]).from_dict(data)
    with pytest.raises(InputError, match="Expected calibrator format_version 1, got 2"):
        Calibrator.from_dict({**data, "format_version": 2})
    with pytest.raises(UnknownNameError, match="Unknown calibrator 'plat'"):
        Calibrator.from_dict({**data, "method": "plat"})
    with pytest.raises(InputError, match="Expected valid params for the 'temperature' calibrator"):
        Calibrator.from_dict({**data, "params": {"temperature": -1.0}})
    with pytest.raises(InputError, match="Expected valid params for the 'ets' calibrator"):
        Calibrator.from_dict({**fitted["ets"].to_dict(), "params": {"temperature": 1.0, "weights": [0.5, 0.6, 0.1]}})
    with pytest.raises(InputError, match="num_classes to be an integer >= 2"):
        Calibrator.from_dict({**data, "num_classes": 1})



@pytest.mark.parametrize("bad", ["2", True, None, [1.0]])
def test_from_dict_refuses_params_that_are_not_numbers(fitted, bad):
    """A hand-edited file: numpy would read "2" as 2.0 and true as 1.0; every numeric param must be a JSON number."""
    import json

    for name, calibrator in fitted.items():
        data = json.loads(json.dumps(calibrator.to_dict()))
        for key, value in data["params"].items():
            if key == "converged" or (key == "classes" and bad is None):  # a null class map: the pooled one stands in
                continue
            edited = json.loads(json.dumps(data))
            if isinstance(value, list):
                row = edited["params"][key][0] if isinstance(value[0], list) else edited["params"][key]
                row[0] = bad
            else:
                edited["params"][key] = bad
            with pytest.raises(InputError, match=f"valid params for the '{name}' calibrator"):
                Calibrator.from_dict(edited)


def test_from_dict_refuses_params_shaped_for_other_classes_and_values_out_of_range(fitted):
    for name in ("vector-scaling", "matrix-scaling", "dirichlet"):
        data = fitted[name].to_dict()
        k = data["num_classes"]
        with pytest.raises(InputError, match=rf"shaped for its num_classes \({k + 2}\), but they are for {k} classes"):
            Calibrator.from_dict({**data, "num_classes": k + 2})
    data = fitted["isotonic"].to_dict()
    values = data["params"]["values"]
    with pytest.raises(InputError, match="'values' must be probabilities"):
        Calibrator.from_dict({**data, "params": {**data["params"], "values": [v - 3.0 for v in values]}})


def test_load_calibrator_rejects_other_files(fitted, tmp_path):
    report = tmp_path / "calibrate.json"
    write_json(report, make_report("calibrate", config={}, results={"calibrators": {}, "best": None}))
    with pytest.raises(InputError, match="to be a report of kind 'calibrator', got one of kind 'calibrate'"):
        load_calibrator(report)
    path = save_calibrator(fitted["temperature"], tmp_path / "t.json")
    saved = read_json(path)
    saved["results"]["calibrator"]["format_version"] = 99
    write_json(path, saved)
    with pytest.raises(InputError, match="Cannot load the calibrator in .*t.json: Expected calibrator format_version "
                                         "1"):
        load_calibrator(path)
    with pytest.raises(InputError, match="does not exist"):
        load_calibrator(tmp_path / "missing.json")


def _kinds(seed=3):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(300, 4)) * 2
    labels = np.where(rng.random(300) < 0.7, logits.argmax(axis=1), rng.integers(0, 4, 300))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return logits, probs, labels


@pytest.mark.parametrize("method", ["temperature", "ets", "dirichlet", "histogram", "isotonic", "spline"])
def test_softmax_only_maps_give_the_same_output_for_logits_and_probabilities(method):
    """log p = logits − logsumexp(logits), a constant per row: maps that see logits only through softmax cannot
    tell them apart, whichever kind they were fitted on, when told which kind they are given."""
    from adacal.calibrators import build_calibrator

    logits, probs, labels = _kinds()
    for fitted_on, kind in ((logits, "logits"), (probs, "probs")):
        calibrator = build_calibrator(method).fit(fitted_on, labels)
        assert calibrator.fitted_on_ == kind
        expected = calibrator.transform(fitted_on)  # read as fitted
        np.testing.assert_allclose(calibrator.transform(probs, scores_kind="probs"), expected, atol=1e-7)
        np.testing.assert_allclose(calibrator.transform(logits, scores_kind="logits"), expected, atol=1e-7)


@pytest.mark.parametrize("method", ["vector-scaling", "matrix-scaling"])
def test_per_class_weights_are_applied_only_to_the_kind_they_were_fitted_on(method):
    from adacal.calibrators import Calibrator, build_calibrator

    logits, probs, labels = _kinds()
    on_logits = build_calibrator(method).fit(logits, labels)
    assert on_logits.fitted_on_ == "logits" and on_logits.to_dict()["fitted_on"] == "logits"
    with pytest.raises(InputError, match=rf"Expected logits for this {method} calibrator, which was fitted on "
                                         r"logits, got probabilities"):
        on_logits.transform(probs, scores_kind="probs")
    on_probs = build_calibrator(method).fit(probs, labels)
    restored = Calibrator.from_dict(on_probs.to_dict())
    assert restored.fitted_on_ == "probs" and on_probs.to_dict()["fitted_on"] == "probs"
    np.testing.assert_array_equal(restored.transform(probs), on_probs.transform(probs))
    with pytest.raises(InputError, match="Expected probabilities .* fitted on probabilities, got logits"):
        restored.transform(logits, scores_kind="logits")
    with pytest.raises(InputError, match=rf"This {method} calibrator was fitted on probabilities and reads every row "
                                         "as probabilities"):
        restored.transform(logits)
    # A calibrator saved before the kind was recorded was fitted on logits (the only kind the CLI applied it to);
    # adacal 0.1.0 wrote "probabilities" for probs.
    old = {key: value for key, value in on_logits.to_dict().items() if key != "fitted_on"}
    assert Calibrator.from_dict(old).fitted_on_ == "logits"
    with pytest.raises(InputError, match="fitted on logits, got probabilities"):
        Calibrator.from_dict(old).transform(probs, scores_kind="probs")
    legacy = Calibrator.from_dict({**on_probs.to_dict(), "fitted_on": "probabilities"})
    assert legacy.fitted_on_ == "probs"
    np.testing.assert_array_equal(legacy.transform(probs), on_probs.transform(probs))
    with pytest.raises(InputError, match="fitted_on to be logits or probs, got 'softmax'"):
        Calibrator.from_dict({**on_logits.to_dict(), "fitted_on": "softmax"})


@pytest.mark.parametrize("method", ["temperature", "histogram", "vector-scaling"])
def test_a_binary_models_one_score_per_sample_calibrates_as_two_columns(method):
    """predict_proba(X)[:, 1] in, both classes' calibrated probabilities out (as scikit-learn's calibrators)."""
    from adacal.calibrators import build_calibrator

    rng = np.random.default_rng(4)
    p = rng.random(400) ** 2
    y = (rng.random(400) < np.sqrt(p)).astype(int)
    two = np.stack([1 - p, p], axis=1)
    expected = build_calibrator(method).fit(two, y).transform(two)
    for spelled in (p, p[:, None]):
        np.testing.assert_allclose(build_calibrator(method).fit(spelled, y).transform(spelled), expected, atol=1e-9)


@pytest.mark.parametrize("name", ["temperature", "ets", "dirichlet", "spline"])
def test_float16_probabilities_are_probabilities_as_the_metrics_read_them(name):
    """float16 softmax rows sum to 1 only within ~3e-4: judged with float64's tolerance they were logits, and the
    calibrator fitted the softmax of the probabilities (T = 0.31 where their float64 copy gives T = 2.0)."""
    import torch

    rng = np.random.default_rng(4)
    z = rng.normal(size=(600, 6)) * 3
    labels = rng.integers(0, 6, 600)
    half = torch.softmax(torch.tensor(z), 1).half()
    sums = half.double().sum(1, keepdim=True)
    # as the metrics read them: rows within K float32 epsilons of 1 as given, the others over their sums
    wide = torch.where((sums - 1).abs() <= 6 * np.finfo(np.float32).eps, half.double(), half.double() / sums)
    for scores in (half, half.numpy()):
        calibrator = build_calibrator(name).fit(scores, labels)
        reference = build_calibrator(name).fit(wide, labels)
        assert calibrator.fitted_on_ == "probs"
        np.testing.assert_allclose(calibrator.transform(scores), reference.transform(wide), atol=1e-6)
