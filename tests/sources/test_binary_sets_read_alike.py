"""A binary model's one score per sample is read as probabilities when all in [0, 1] and as decision scores
otherwise; one model gives one kind of score, so when one of its sets (test, validation, OOD) falls outside [0, 1], a
set that happens to lie in [0, 1] is read as decision scores too. Each reading here is checked against the same
scores written out as explicit two-column decision scores [0, s] (softmax([0, s]) = sigmoid(s))."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.arrays import binary_score_columns, mixed_binary_kinds
from adacal.cli import app
from adacal.ood import detect_ood
from adacal.interpretation import load_split_predictions, mixed_binary_readings

from cli_helpers import runner

RNG = np.random.default_rng(11)
# Decision scores of one model: the validation and in-distribution sets happen to lie in [0, 1], the others not.
S_VAL = RNG.uniform(0.05, 0.95, 200)
Y_VAL = (RNG.random(200) < 0.7).astype(np.int64)
S_TEST = 2.5 * RNG.standard_normal(300)
Y_TEST = (RNG.random(300) < 1 / (1 + np.exp(-S_TEST))).astype(np.int64)
S_IN = RNG.uniform(0.0, 1.0, 80)
S_OUT = 3.0 * RNG.standard_normal(70)



def _figures(results):
    """A report's results without `input`, the record of which files were read (their paths differ here)."""
    return {key: value for key, value in results.items() if key != "input"}

def columns(scores: np.ndarray) -> np.ndarray:
    """The explicit decision-score reading, [0, s]."""
    return np.stack([np.zeros(len(scores)), scores], axis=1)


@pytest.mark.parametrize(("sets", "mixed"), [
    ((S_VAL, S_TEST), True),
    ((S_VAL[:, None], S_TEST), True),            # (N, 1) columns are one score per sample too
    ((S_VAL, S_IN), False),                      # both in [0, 1]: probabilities, as each alone
    ((S_TEST, S_OUT), False),                    # both outside: decision scores, as each alone
    ((S_VAL, columns(S_TEST)), False),           # a two-column set has a kind of its own
    ((S_VAL, None, S_OUT), True),
    ((S_VAL,), False),
    ((), False),
])
def test_mixed_binary_kinds(sets, mixed):
    assert mixed_binary_kinds(*sets) is mixed


def test_decision_reading_of_scores_in_the_unit_interval():
    as_probabilities, probabilities = binary_score_columns(S_VAL)
    assert probabilities and np.array_equal(as_probabilities, np.stack([1 - S_VAL, S_VAL], axis=1))
    as_decision, probabilities = binary_score_columns(S_VAL, decision=True)
    assert not probabilities and np.array_equal(as_decision, columns(S_VAL))


def test_notes_tell_the_two_readings_apart():
    prob = "x: 1-D scores in [0, 1] taken as positive-class probabilities p (columns 1 - p, p)"
    decision = "y: 1-D scores outside [0, 1] taken as binary decision scores (logits) s (columns 0, s)"
    assert mixed_binary_readings([prob], [decision])
    assert mixed_binary_readings([prob, decision])
    assert not mixed_binary_readings([prob], [prob], ["a CSV's row-index column dropped"])
    assert not mixed_binary_readings([decision], [])


@pytest.mark.parametrize("scores", ["entropy", "max-prob", "energy"])
def test_detect_ood_reads_one_models_two_sets_alike(scores):
    mixed = detect_ood(S_IN, S_OUT, scores=[scores], temperature=1.5)
    explicit = detect_ood(columns(S_IN), columns(S_OUT), scores=[scores], temperature=1.5)
    assert mixed == explicit
    # Both sets in [0, 1] stay probabilities, as each alone.
    both = detect_ood(S_IN, S_VAL, scores=["entropy"])
    as_probs = detect_ood(np.stack([1 - S_IN, S_IN], 1), np.stack([1 - S_VAL, S_VAL], 1), scores=["entropy"])
    assert both == as_probs


def test_a_split_file_reads_its_validation_and_test_sets_alike(tmp_path):
    np.savez(tmp_path / "split.npz", val_logits=S_VAL, val_labels=Y_VAL, test_logits=S_TEST, test_labels=Y_TEST)
    splits = load_split_predictions(tmp_path / "split.npz")
    np.testing.assert_array_equal(splits["val"].logits, columns(S_VAL))
    np.testing.assert_array_equal(splits["test"].logits, columns(S_TEST))
    assert "taken as binary decision scores" in splits["val"].notes[0]
    assert "another set of the same model's scores lies outside [0, 1]" in splits["val"].notes[0]
    # Both in [0, 1]: probabilities, as before.
    np.savez(tmp_path / "probs.npz", val_logits=S_VAL, val_labels=Y_VAL, test_logits=S_IN,
             test_labels=Y_VAL[:80])
    splits = load_split_predictions(tmp_path / "probs.npz")
    np.testing.assert_array_equal(splits["val"].logits, np.stack([1 - S_VAL, S_VAL], axis=1))


def _calibrate_report(tmp_path, name, *args):
    out = tmp_path / f"{name}.json"
    result = runner.invoke(app, ["calibrate", *map(str, args), "--method", "temperature", "--json", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


@pytest.mark.parametrize("layout", ["one split file", "separate --val file"])
def test_calibrate_fits_on_validation_scores_read_as_the_test_scores_are(tmp_path, layout):
    """The fit on validation decision scores that happen to lie in [0, 1] equals the fit on the same scores written
    as explicit decision columns; read as probabilities it would fit another temperature."""
    if layout == "one split file":
        np.savez(tmp_path / "mixed.npz", val_logits=S_VAL, val_labels=Y_VAL, test_logits=S_TEST, test_labels=Y_TEST)
        np.savez(tmp_path / "explicit.npz", val_logits=columns(S_VAL), val_labels=Y_VAL,
                 test_logits=columns(S_TEST), test_labels=Y_TEST)
        mixed = _calibrate_report(tmp_path, "mixed", tmp_path / "mixed.npz")
        explicit = _calibrate_report(tmp_path, "explicit", tmp_path / "explicit.npz")
    else:
        np.savez(tmp_path / "val.npz", logits=S_VAL, labels=Y_VAL)
        np.savez(tmp_path / "test.npz", logits=S_TEST, labels=Y_TEST)
        np.savez(tmp_path / "val2.npz", logits=columns(S_VAL), labels=Y_VAL)
        np.savez(tmp_path / "test2.npz", logits=columns(S_TEST), labels=Y_TEST)
        mixed = _calibrate_report(tmp_path, "mixed", tmp_path / "test.npz", "--val", tmp_path / "val.npz")
        explicit = _calibrate_report(tmp_path, "explicit", tmp_path / "test2.npz", "--val", tmp_path / "val2.npz")
    assert _figures(mixed["results"]) == _figures(explicit["results"])
    assumed = json.dumps(mixed["config"])
    assert "another set of the same model's scores lies outside [0, 1]" in assumed


@pytest.mark.parametrize("val_scores, in_scores, out_scores", [
    (S_VAL, S_IN, S_OUT),          # the OOD set is outside [0, 1]
    (S_TEST[:200], S_IN, S_VAL),   # only the validation set is: the two sets scored are decision scores too
], ids=["ood-set-outside", "validation-set-outside"])
def test_ood_fits_its_temperature_on_validation_scores_read_as_the_sets_are(tmp_path, val_scores, in_scores,
                                                                            out_scores):
    np.savez(tmp_path / "in.npz", val_logits=val_scores, val_labels=Y_VAL, test_logits=in_scores,
             test_labels=Y_VAL[:80])
    np.save(tmp_path / "out.npy", out_scores)
    np.savez(tmp_path / "in2.npz", val_logits=columns(val_scores), val_labels=Y_VAL, test_logits=columns(in_scores),
             test_labels=Y_VAL[:80])
    np.save(tmp_path / "out2.npy", columns(out_scores))
    reports = []
    for in_file, out_file in (("in.npz", "out.npy"), ("in2.npz", "out2.npy")):
        target = tmp_path / f"{in_file}.json"
        result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / in_file), "--out-preds",
                                     str(tmp_path / out_file), "--fit-temperature", "--json", str(target)])
        assert result.exit_code == 0, result.output
        reports.append(json.loads(target.read_text()))
    for key in ("scores", "temperature", "temperature_source"):
        assert reports[0]["results"][key] == reports[1]["results"][key]
    assert reports[0]["results"]["temperature_source"] == "fitted"


def test_compare_calibrators_reads_its_two_splits_alike():
    from adacal.calibrators import compare_calibrators

    mixed = compare_calibrators(S_VAL, Y_VAL, S_TEST, Y_TEST, methods=["temperature", "histogram"])
    explicit = compare_calibrators(columns(S_VAL), Y_VAL, columns(S_TEST), Y_TEST, methods=["temperature", "histogram"])
    assert (json.dumps(_figures(mixed.results), sort_keys=True, default=str)
            == json.dumps(_figures(explicit.results), sort_keys=True, default=str))


def test_a_val_file_with_its_labels_beside_it_is_read_as_the_test_file(tmp_path):
    """`--val val.npy` (labels in val_labels.npy beside it): the reading that finds the sibling labels keeps the
    decision-score setting."""
    np.save(tmp_path / "val.npy", S_VAL)
    np.save(tmp_path / "val_labels.npy", Y_VAL)
    np.savez(tmp_path / "test.npz", logits=S_TEST, labels=Y_TEST)
    np.save(tmp_path / "val2.npy", columns(S_VAL))
    np.save(tmp_path / "val2_labels.npy", Y_VAL)
    np.savez(tmp_path / "test2.npz", logits=columns(S_TEST), labels=Y_TEST)
    mixed = _calibrate_report(tmp_path, "mixed", tmp_path / "test.npz", "--val", tmp_path / "val.npy")
    explicit = _calibrate_report(tmp_path, "explicit", tmp_path / "test2.npz", "--val", tmp_path / "val2.npy")
    assert _figures(mixed["results"]) == _figures(explicit["results"])


def test_one_split_of_a_file_is_read_as_its_other_split_says(tmp_path):
    """`evaluate` reads only the test split of a val_/test_ file, `calibrate` both: the test split's reading (and so
    the uncalibrated metrics) must not depend on the command. Here the validation split lies outside [0, 1]."""
    from adacal.commands.evaluate import run_evaluate
    from adacal.interpretation import load_predictions

    np.savez(tmp_path / "p.npz", val_logits=S_TEST[:200], val_labels=Y_VAL, test_logits=S_IN,
             test_labels=Y_VAL[:80])
    test = load_predictions(tmp_path / "p.npz")
    np.testing.assert_array_equal(test.logits, columns(S_IN))
    assert load_split_predictions(tmp_path / "p.npz")["test"].logits.tolist() == test.logits.tolist()
    np.savez(tmp_path / "q.npz", test_logits=columns(S_IN), test_labels=Y_VAL[:80])
    got = run_evaluate(tmp_path / "p.npz").report["results"]["metrics"]
    assert got == run_evaluate(tmp_path / "q.npz").report["results"]["metrics"]


def test_ood_reads_the_in_distribution_file_with_its_validation_split_with_or_without_fitting(tmp_path):
    np.savez(tmp_path / "in.npz", val_logits=S_TEST[:200], val_labels=Y_VAL, test_logits=S_IN,
             test_labels=Y_VAL[:80])
    np.save(tmp_path / "out.npy", S_VAL[:70])
    reports = []
    for extra in ([], ["--temperature", "1.0"]):
        target = tmp_path / f"r{len(reports)}.json"
        result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / "in.npz"), "--out-preds",
                                     str(tmp_path / "out.npy"), "--json", str(target), *extra])
        assert result.exit_code == 0, result.output
        reports.append(json.loads(target.read_text())["results"]["scores"]["entropy"]["pre"])
    explicit = detect_ood(columns(S_IN), columns(S_VAL[:70]))["scores"]["entropy"]["pre"]
    assert reports[0] == reports[1] == explicit


def test_decision_scores_near_one_are_not_refused_as_truncated_probabilities(tmp_path):
    near_one = RNG.uniform(0.9, 1.0, 200)
    np.savez(tmp_path / "p.npz", val_logits=near_one, val_labels=Y_VAL, test_logits=S_TEST, test_labels=Y_TEST)
    splits = load_split_predictions(tmp_path / "p.npz")
    np.testing.assert_array_equal(splits["val"].logits, columns(near_one))
    from adacal.calibrators import compare_calibrators

    compare_calibrators(near_one, Y_VAL, S_TEST, Y_TEST, methods=["temperature"])


def test_renormalize_takes_one_score_per_sample_only_as_probabilities(tmp_path):
    from adacal.errors import InputError
    from adacal.interpretation import load_predictions
    from adacal.sources.formats import ReadOptions

    np.savez(tmp_path / "p.npz", logits=S_VAL, labels=Y_VAL)
    read = load_predictions(tmp_path / "p.npz", options=ReadOptions(renormalize=True))
    np.testing.assert_allclose(read.logits, np.stack([1 - S_VAL, S_VAL], axis=1))
    np.savez(tmp_path / "pct.npz", logits=100 * S_VAL, labels=Y_VAL)  # percentages: no row to divide by its sum
    with pytest.raises(InputError, match=r"one score per sample\) in \[0, 1\] with --renormalize"):
        load_predictions(tmp_path / "pct.npz", options=ReadOptions(renormalize=True))
