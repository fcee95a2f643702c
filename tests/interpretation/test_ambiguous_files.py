"""Files that admit two readings — or whose values disagree with each other or with their key — are refused in one
line naming the option that settles them; with that option they are read (docs/inputs.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_scores
from adacal.metrics import compute_metrics
from adacal.commands.inputs import resolve_calibration_input
from adacal.sources import ReadOptions

RNG = np.random.default_rng(11)
N, K = 500, 10
LOGITS = RNG.normal(scale=3.0, size=(N, K))
PROBS = softmax(LOGITS)
LABELS = RNG.integers(0, K, N)


def _with(array, row, column, value):
    array = array.copy()
    array[row, column] = value
    return array


def _zero_row(array, row):
    array = array.copy()
    array[row] = 0.0
    return array


def _save(path, *arrays, **named):
    np.savez(path, *arrays, **named)
    return path


# (name, write(tmp_path) -> path, refusal fragment, ReadOptions that settle it, expected kind after)
CASES = [
    ("one -1e-12 entry among probabilities (np.savez unnamed)",
     lambda d: _save(d / "p.npz", _with(PROBS, 7, 3, -1e-12), LABELS),
     "row 7 has the entry -1e-12", ReadOptions(scores_kind="logits"), "logits"),
    ("one all-zero row among probabilities",
     lambda d: _save(d / "p.npz", _zero_row(PROBS, 42), LABELS),
     "row 42 is all zeros", ReadOptions(scores_kind="logits"), "logits"),
    ("one row summing to 0.5 among probabilities",
     lambda d: _save(d / "p.npz", np.vstack([PROBS[:9], PROBS[9:10] / 2, PROBS[10:]]), LABELS),
     "row 9 sums to 0.5", ReadOptions(renormalize=True), "probabilities"),
    ("percentages holding one -1e-9",
     lambda d: _save(d / "p.npz", _with(100 * PROBS, 0, 0, -1e-9), LABELS),
     "--renormalize", ReadOptions(scores_kind="logits"), "logits"),
    ("a stray value under the key probs",
     lambda d: _save(d / "p.npz", probs=_with(PROBS, 3, 1, 1.5), labels=LABELS),
     "as its name says", ReadOptions(scores_kind="logits"), "logits"),
    ("a binary model's probabilities with one value outside [0, 1]",
     lambda d: _save(d / "p.npz", logits=np.r_[PROBS[:-1, 0], -1e-12], labels=LABELS % 2),
     "--scores-kind", ReadOptions(scores_kind="logits"), "binary decision scores"),
    ("plain and split keys in one file",
     lambda d: _save(d / "p.npz", logits=LOGITS, labels=LABELS, test_logits=LOGITS[:5], test_labels=LABELS[:5]),
     "--logits-key", ReadOptions(logits_key="test_logits", labels_key="test_labels"), "logits"),
    ("two spellings of the scores",
     lambda d: _save(d / "p.npz", logits=LOGITS, probs=PROBS, labels=LABELS),
     "--logits-key", ReadOptions(logits_key="probs"), "probabilities"),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_ambiguous_or_contradictory_files_are_refused_naming_the_option(tmp_path, case):
    _, write, fragment, settle, kind = case
    path = write(tmp_path)
    with pytest.raises(InputError) as refusal:
        load_predictions(path)
    message = str(refusal.value)
    assert "\n" not in message and fragment in message, message
    assert "--" in message  # the option that settles it
    assert load_predictions(path, options=settle).interpretation.kind == kind


def test_the_refusal_names_the_first_offending_rows(tmp_path):
    probs = _with(_with(PROBS, 12, 0, -1e-12), 30, 2, -0.5)
    with pytest.raises(InputError, match=r"2 of 500 rows are not \(row 12 has the entry -1e-12; row 30 has the entry "
                                         r"-0\.5\): pass --renormalize"):
        load_predictions(_save(tmp_path / "p.npz", probs, LABELS))


def test_logits_with_a_few_rows_that_look_like_probabilities_by_chance_are_logits(tmp_path):
    """Two small logits can sum to 1: up to 1 % of the rows may, and the file is still read as logits."""
    logits = LOGITS[:, :2].copy()
    logits[:4] = [[0.25, 0.75], [0.5, 0.5], [0.1, 0.9], [0.0, 1.0]]  # 4 of 500 rows: 0.8 %
    read = load_predictions(_save(tmp_path / "l.npz", logits=logits, labels=LABELS % 2))
    assert read.interpretation.kind == "logits" and "4 of 500 rows look like probabilities" in \
        read.interpretation.kind_rule
    assert compute_metrics(read.logits, read.labels) == compute_metrics(logits, LABELS % 2)
    logits[:6] = [[0.25, 0.75]] * 6  # 6 of 500: 1.2 %, refused
    with pytest.raises(InputError, match="6 of 500 rows are probabilities and 494 are not"):
        load_predictions(_save(tmp_path / "l.npz", logits=logits, labels=LABELS % 2))


def test_ood_sets_with_a_stray_value_are_refused_not_read_as_logits(tmp_path):
    """A single -1e-12 in the in-distribution file moved entropy AUROC from 0.9999 to 0.017."""
    _save(tmp_path / "in.npz", _with(PROBS, 0, 0, -1e-12))
    with pytest.raises(InputError, match="row 0 has the entry -1e-12"):
        load_scores(tmp_path / "in.npz")


def test_pt_batches_of_a_binary_model_whose_labels_are_all_one_hot_are_refused(tmp_path):
    """25 binary batches of 20, each with one positive label, are also 25 samples of 20 classes."""
    scores = torch.rand(25, 20)
    labels = torch.zeros(25, 20, dtype=torch.int64)
    labels[torch.arange(25), torch.randint(0, 20, (25,))] = 1
    torch.save([(scores[i], labels[i]) for i in range(25)], tmp_path / "b.pt")
    with pytest.raises(InputError, match="both readings fit: pass --pt-items"):
        load_predictions(tmp_path / "b.pt")
    batches = load_predictions(tmp_path / "b.pt", options=ReadOptions(pt_items="batches"))
    assert (batches.interpretation.n, batches.interpretation.k) == (500, 2)
    samples = load_predictions(tmp_path / "b.pt", options=ReadOptions(pt_items="samples"))
    assert (samples.interpretation.n, samples.interpretation.k) == (25, 20)
    labels[0, :] = 0  # one batch without a positive: no sample's one-hot label, so batches
    labels[0, :2] = 1
    torch.save([(scores[i], labels[i]) for i in range(25)], tmp_path / "b.pt")
    assert load_predictions(tmp_path / "b.pt").interpretation.n == 500


def test_a_pt_list_of_two_probability_batches_the_second_saturated_is_refused(tmp_path):
    """The second batch, saturated to exact 0/1, was read as one-hot labels: half the OOD set disappeared."""
    first = torch.from_numpy(PROBS[:250])
    second = torch.nn.functional.one_hot(torch.from_numpy(LABELS[250:]), K).double()
    torch.save([first, second], tmp_path / "two.pt")
    with pytest.raises(InputError, match="saturated to 0 and 1.*--pt-items"):
        load_scores(tmp_path / "two.pt")
    assert load_scores(tmp_path / "two.pt", options=ReadOptions(pt_items="batches")).shape == (N, K)
    torch.save((first, second), tmp_path / "pair.pt")  # a tuple is a (scores, labels) pair
    assert load_predictions(tmp_path / "pair.pt").interpretation.n == 250


def test_calibrate_never_fits_on_a_val_files_test_arrays(tmp_path):
    np.savez(tmp_path / "test.npz", logits=LOGITS[:100], labels=LABELS[:100])
    np.savez(tmp_path / "predictions.npz", test_logits=LOGITS[100:], test_labels=LABELS[100:])
    with pytest.raises(InputError, match="calibrators are fitted on validation data only, never on test data"):
        resolve_calibration_input(tmp_path / "test.npz", val=tmp_path / "predictions.npz")
    np.savez(tmp_path / "predictions.npz", val_logits=LOGITS[100:300], val_labels=LABELS[100:300],
             test_logits=LOGITS[300:], test_labels=LABELS[300:])
    inputs = resolve_calibration_input(tmp_path / "test.npz", val=tmp_path / "predictions.npz")
    assert inputs.val.interpretation.split == "val" and inputs.val.interpretation.n == 200
    assert inputs.test.interpretation.split == "whole file"


def test_evaluate_and_calibrate_read_the_same_split_of_a_split_file(tmp_path):
    np.savez(tmp_path / "p.npz", val_logits=LOGITS[:200], val_labels=LABELS[:200], test_logits=LOGITS[200:],
             test_labels=LABELS[200:])
    assert load_predictions(tmp_path / "p.npz").interpretation.scores_key == "test_logits"
    inputs = resolve_calibration_input(tmp_path / "p.npz")
    assert (inputs.val.interpretation.scores_key, inputs.test.interpretation.scores_key) == ("val_logits",
                                                                                           "test_logits")
    with pytest.raises(InputError, match=r"--logits-key to name test scores here.*val_logits"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="val_logits"))


def test_the_record_is_json_and_one_line(tmp_path):
    read = load_predictions(_save(tmp_path / "p.npz", probs=PROBS, labels=LABELS))
    record = read.interpretation.to_dict()
    assert json.loads(json.dumps(record)) == record
    assert record | {"file": None} == {
        "file": None, "format": "npz", "scores_key": "probs", "labels_key": "labels", "labels_file": None,
        "split": "whole file", "kind": "probabilities", "kind_rule": "its key names probabilities; every row sums to 1",
        "n": N, "k": K, "renormalized_rows": 0, "dropped_rows": 0, "notes": []}
    assert read.interpretation.summary() == (f"read {tmp_path / 'p.npz'} [probs, labels; whole file]: 500 x 10 "
                                             "probabilities (its key names probabilities; every row sums to 1)")
