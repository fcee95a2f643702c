"""Every command that reads saved predictions says how it read them: one `Note: read ...` line on stderr, and the
`Interpretation` record under `results.input` of its report; a file it cannot read without guessing is one `Error:`
line naming the option (docs/inputs.md)."""

from __future__ import annotations

import json

import numpy as np
from cli_helpers import one_line_error, runner

from adacal.arrays import softmax
from adacal.cli import app

RNG = np.random.default_rng(5)
LOGITS = RNG.normal(scale=2.0, size=(200, 4))
LABELS = RNG.integers(0, 4, 200)


def _run(*argv):
    return runner.invoke(app, [str(a) for a in argv])


def test_evaluate_prints_and_records_how_it_read_the_file(tmp_path):
    np.savez(tmp_path / "p.npz", probs=softmax(LOGITS), labels=LABELS)
    result = _run("evaluate", tmp_path / "p.npz", "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note: read ")]
    assert notes == [f"Note: read {tmp_path / 'p.npz'} [probs, labels; whole file]: 200 x 4 probabilities (its key "
                     "names probabilities; every row sums to 1)."]
    record = json.loads((tmp_path / "e.json").read_text())["results"]["input"]
    assert (record["kind"], record["split"], record["n"], record["k"]) == ("probabilities", "whole file", 200, 4)
    assert record["scores_key"] == "probs" and record["labels_key"] == "labels"


def test_calibrate_records_both_splits(tmp_path):
    np.savez(tmp_path / "p.npz", val_logits=LOGITS[:100], val_labels=LABELS[:100], test_logits=LOGITS[100:],
             test_labels=LABELS[100:])
    result = _run("calibrate", tmp_path / "p.npz", "--json", tmp_path / "c.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "c.json").read_text())["results"]["input"]
    assert (record["val"]["scores_key"], record["test"]["scores_key"]) == ("val_logits", "test_logits")
    assert "Note: val: read" in result.stderr and "Note: test: read" in result.stderr


def test_ood_records_both_sets_and_refuses_a_stray_value(tmp_path):
    np.savez(tmp_path / "in.npz", logits=LOGITS)
    np.savez(tmp_path / "out.npz", logits=LOGITS[:50] * 0.1)
    result = _run("ood", "--in-preds", tmp_path / "in.npz", "--out-preds", tmp_path / "out.npz", "--json",
                  tmp_path / "o.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o.json").read_text())["results"]["input"]
    assert (record["in"]["n"], record["out"]["n"]) == (200, 50)
    probs = softmax(LOGITS)
    probs[0, 0] = -1e-12
    np.savez(tmp_path / "in.npz", probs)
    result = _run("ood", "--in-preds", tmp_path / "in.npz", "--out-preds", tmp_path / "out.npz")
    one_line_error(result, "row 0 has the entry -1e-12", "--scores-kind")


def test_evaluate_refuses_a_flipping_value_and_the_option_settles_it(tmp_path):
    probs = softmax(LOGITS)
    probs[3] = 0.0
    np.savez(tmp_path / "p.npz", probs, LABELS)
    one_line_error(_run("evaluate", tmp_path / "p.npz"), "row 3 is all zeros", "--scores-kind logits")
    result = _run("evaluate", tmp_path / "p.npz", "--scores-kind", "logits", "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["results"]["input"]["kind_rule"] == "--scores-kind logits"
    assert report["config"]["source"]["scores_kind"] == "logits"


def test_reading_options_are_checked_in_one_line(tmp_path):
    np.savez(tmp_path / "p.npz", logits=LOGITS, labels=LABELS)
    one_line_error(_run("evaluate", tmp_path / "p.npz", "--scores-kind", "percent"), "--scores-kind", "'percent'")
    one_line_error(_run("evaluate", tmp_path / "p.npz", "--separator", "pipe"), "--separator", "'pipe'")
    one_line_error(_run("evaluate", tmp_path / "p.npz", "--pt-items", "rows"), "--pt-items", "'rows'")
    one_line_error(_run("evaluate", tmp_path / "p.npz", "--scores-kind", "logits", "--renormalize"),
                   "--renormalize only with probabilities")
