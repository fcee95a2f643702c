"""`adacal evaluate --group-by KEY`: per-group figures equal to the same figures on the group's rows alone (by hand on
three groups of top-label answers, and against `evaluate_predictions` of each group's rows for class scores), group
keys from .npz / .jsonl / .csv inputs, and the refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_helpers import one_line_error, runner

from adacal.cli import app
from adacal.commands.evaluate import run_evaluate
from adacal.errors import InputError
from adacal.evaluation import evaluate_predictions
from adacal.grouped import SMALL_GROUP, group_indices, grouped_results
from adacal.interpretation import Predictions
from adacal.interpretation.groups import attach_groups
from adacal.sources import read_report

# Three groups of top-label answers, and one of a single right answer.
ANSWERS = [
    ("a", 0.9, True), ("a", 0.8, False),
    ("b", 0.6, True), ("b", 0.6, True), ("b", 0.7, False),
    ("c", 0.3, False), ("c", 0.4, True),
    ("d", 0.95, True),
]


def _jsonl(path, rows=ANSWERS, key="task"):
    path.write_text("".join(json.dumps({"id": i, key: g, "confidence": c, "correct": r}) + "\n"
                            for i, (g, c, r) in enumerate(rows)))
    return path


def test_top_label_groups_by_hand(tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl")
    report = run_evaluate(path, n_bins=2, group_by="task").report
    table = report["results"]["groups"]
    assert report["config"]["group_by"] == "task" and table["key"] == "task"
    rows = {row["group"]: row for row in table["rows"]}
    assert [row["group"] for row in table["rows"]] == ["a", "b", "c", "d"]  # sorted by name
    assert [rows[g]["n_samples"] for g in "abcd"] == [2, 3, 2, 1]
    assert [rows[g]["accuracy"] for g in "abcd"] == pytest.approx([1 / 2, 2 / 3, 1 / 2, 1.0], abs=1e-15)
    assert all(row["small"] for row in table["rows"]) and SMALL_GROUP == 50
    # ECE-EW with 2 bins (edges 0, 0.5, 1): a: |0.85 - 1/2|; b: |1.9/3 - 2/3|; c: |0.35 - 1/2|; d: |0.95 - 1|.
    ece = [rows[g]["metrics"]["ece_ew"] for g in "abcd"]
    assert ece == pytest.approx([0.35, 0.1 / 3, 0.15, 0.05], abs=1e-12)
    # BRIER-TOP of a: ((0.9 - 1)² + 0.8²) / 2; NLL-CORRECT of a: -(log 0.9 + log 0.2) / 2.
    assert rows["a"]["metrics"]["brier_top"] == pytest.approx(0.325, abs=1e-12)
    assert rows["a"]["metrics"]["nll_correct"] == pytest.approx(-(math.log(0.9) + math.log(0.2)) / 2, abs=1e-12)
    # AUROC of correctness: a and c rank the right answer above the wrong one, b ranks the wrong one (0.7) first.
    assert [rows[g]["metrics"]["auroc_correct"] for g in "abc"] == [1.0, 0.0, 1.0]
    # AUPRC of errors: a's error is its least confident answer (1); b's enters last, after two right ones (1/3).
    assert rows["a"]["metrics"]["auprc_errors"] == 1.0
    assert rows["b"]["metrics"]["auprc_errors"] == pytest.approx(1 / 3, abs=1e-15)
    # d: one right answer, the ranking metrics undefined: left out, with a note.
    assert "auroc_correct" not in rows["d"]["metrics"] and "auprc_errors" not in rows["d"]["metrics"]
    assert "not computed" in rows["d"]["notes"][0]
    overall = table["overall"]
    assert overall["group"] == "all" and overall["n_samples"] == 8 and overall["accuracy"] == 5 / 8
    assert overall["metrics"] == report["results"]["metrics"]
    # The overall ECE-EW: bin 1 holds c (0.35 vs 1/2), bin 2 the rest (mean 4.55/6 vs 4/6), weighted by count.
    assert overall["metrics"]["ece_ew"] == pytest.approx((2 * 0.15 + 6 * abs(4.55 / 6 - 4 / 6)) / 8, abs=1e-12)


def test_class_score_groups_equal_each_groups_own_report(tmp_path):
    rng = np.random.default_rng(0)
    n = 240
    probs = rng.dirichlet(np.ones(4) * 0.7, size=n)
    labels = rng.integers(0, 4, size=n)
    subject = rng.integers(0, 3, size=n)  # integer group names
    np.savez(tmp_path / "p.npz", probs=probs, labels=labels, subject=subject)
    report = run_evaluate(tmp_path / "p.npz", group_by="subject", bootstrap=8, seed=3).report
    table = report["results"]["groups"]
    assert [row["group"] for row in table["rows"]] == ["0", "1", "2"]
    for row in table["rows"]:
        index = np.flatnonzero(subject == int(row["group"]))
        alone = evaluate_predictions(probs[index], labels[index], bootstrap=8, seed=3)
        assert row["n_samples"] == index.size
        assert row["metrics"] == pytest.approx(alone["metrics"], abs=1e-12)
        assert row["bootstrap"].keys() == alone["bootstrap"].keys()
        for key, interval in alone["bootstrap"].items():
            assert row["bootstrap"][key] == pytest.approx(interval, abs=1e-12)
        assert row["accuracy"] == pytest.approx(1 - alone["metrics"]["error"], abs=1e-12)
    assert table["overall"]["bootstrap"] == report["results"]["bootstrap"]
    assert sum(row["n_samples"] for row in table["rows"]) == n


def test_the_kind_of_scores_is_decided_once_for_every_group():
    # 300 rows of logits and 2 that happen to be probability rows (< 1 %: logits overall); alone, the 2 rows would
    # be read as probabilities. Their group is measured as the logits the whole matrix is.
    rng = np.random.default_rng(1)
    logits = np.vstack([rng.normal(0, 2, size=(300, 2)), [[0.3, 0.7], [0.6, 0.4]]])
    labels = rng.integers(0, 2, size=302)
    names = np.array(["x"] * 300 + ["y"] * 2)
    overall = evaluate_predictions(logits, labels, metric_names="nll,ece-ew")
    assert overall["assumed_input"] == "logits"
    table = grouped_results(logits, labels, names, key="k", overall=overall, metric_names="nll,ece-ew")
    y = table["rows"][1]
    assert y["metrics"] == evaluate_predictions(logits[300:], labels[300:], metric_names="nll,ece-ew",
                                                scores_kind="logits")["metrics"]
    assert y["metrics"] != evaluate_predictions(logits[300:], labels[300:], metric_names="nll,ece-ew")["metrics"]


def test_csv_column_set_aside_only_when_asked(tmp_path):
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=30).round(4)
    probs[:, 2] = (1 - probs[:, 0] - probs[:, 1]).round(4)
    labels = rng.integers(0, 3, size=30)
    task = rng.choice(["law", "math"], size=30)
    lines = ["task,cat,dog,eel,label"] + [f"{t},{p[0]},{p[1]},{p[2]},{y}" for t, p, y in zip(task, probs, labels)]
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    # Ordinary reading is unchanged: text beside the scores is refused.
    with pytest.raises(InputError, match="to be numbers, got '(law|math)'"):
        run_evaluate(tmp_path / "s.csv")
    run = run_evaluate(tmp_path / "s.csv", group_by="task")
    assert any("set aside as the --group-by key" in note for note in run.notes)
    assert run.report["results"]["num_classes"] == 3
    plain = evaluate_predictions(probs, labels)
    assert run.report["results"]["metrics"] == pytest.approx(plain["metrics"], abs=1e-12)
    rows = run.report["results"]["groups"]["rows"]
    assert [row["group"] for row in rows] == ["law", "math"]
    law = np.flatnonzero(task == "law")
    assert rows[0]["metrics"] == pytest.approx(evaluate_predictions(probs[law], labels[law])["metrics"], abs=1e-12)
    # With --score-columns the table is read as chosen, the groups from its column all the same.
    chosen = run_evaluate(tmp_path / "s.csv", group_by="task", options=_options(score_columns="cat,dog,eel"))
    assert chosen.report["results"]["groups"]["rows"] == rows


def _options(**kwargs):
    from adacal.sources import ReadOptions

    return ReadOptions(**kwargs)


def test_missing_key_lists_the_group_keys(tmp_path):
    np.savez(tmp_path / "p.npz", probs=[[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]], labels=[0, 1, 1],
             task=["a", "b", "a"], id=[0, 1, 2], weight=[0.2, 0.5, 0.1])
    with pytest.raises(InputError, match=r"^Expected --group-by key 'subject' in p.npz, found none: its group keys "
                                         r"are task\.$"):
        run_evaluate(tmp_path / "p.npz", group_by="subject")
    _jsonl(tmp_path / "a.jsonl", key="subject")
    with pytest.raises(InputError, match="found none: its group keys are subject"):
        run_evaluate(tmp_path / "a.jsonl", group_by="task")
    (tmp_path / "s.csv").write_text("task,cat,dog,label\nlaw,0.2,0.8,1\nmath,0.6,0.4,0\n")
    with pytest.raises(InputError, match="columns of s.csv, found none: its columns are task, cat, dog, label"):
        run_evaluate(tmp_path / "s.csv", group_by="tsk")


def test_keys_that_are_no_group_names_are_refused(tmp_path):
    np.savez(tmp_path / "p.npz", probs=[[0.9, 0.1], [0.3, 0.7]], labels=[0, 1], weight=[0.25, 0.5],
             short=["a"], pairs=[["a", "b"], ["c", "d"]])
    with pytest.raises(InputError, match="'weight' in p.npz to hold one group name per sample .*fraction"):
        run_evaluate(tmp_path / "p.npz", group_by="weight")
    with pytest.raises(InputError, match="1 values for 2 samples"):
        run_evaluate(tmp_path / "p.npz", group_by="short")
    with pytest.raises(InputError, match="shape"):
        run_evaluate(tmp_path / "p.npz", group_by="pairs")
    with pytest.raises(InputError, match="Expected --group-by to be a key"):
        run_evaluate(tmp_path / "p.npz", group_by="  ")
    with pytest.raises(InputError, match="at most 1000 groups"):
        group_indices(np.arange(1001).astype(str), key="id")


def test_split_prefixed_key_and_reader_filled_groups(tmp_path):
    np.savez(tmp_path / "p.npz", test_probs=[[0.9, 0.1], [0.3, 0.7]], test_labels=[0, 1], test_task=["a", "b"])
    rows = run_evaluate(tmp_path / "p.npz", group_by="task", metrics="error").report["results"]["groups"]["rows"]
    assert [(row["group"], row["n_samples"]) for row in rows] == [("a", 1), ("b", 1)]
    filled = Predictions(np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([0, 1]), groups={"task": np.array(["x", "y"])})
    assert attach_groups(filled, None, "task") is filled  # a reader's groups are taken as they are
    with pytest.raises(InputError, match="among the input's group keys, found none: they are task"):
        attach_groups(filled, None, "subject")


def test_cli_table_and_json(tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl")
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["evaluate", str(path), "--group-by", "task", "--n-bins", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "By task" in result.stdout and "fewer than 50 samples" in result.stdout
    for name in ("a", "b", "c", "d", "all"):
        assert any(line.split("│")[1].strip() == name for line in result.stdout.splitlines() if "│" in line)
    report = read_report(out, kind="evaluate")  # the schema knows results.groups
    assert [row["group"] for row in report["results"]["groups"]["rows"]] == ["a", "b", "c", "d"]
    quiet = runner.invoke(app, ["evaluate", str(path), "--group-by", "task", "-q"])
    assert quiet.exit_code == 0 and "a (n=2): " in quiet.stdout
    one_line_error(runner.invoke(app, ["evaluate", str(path), "--group-by", "subject"]),
                   "--group-by key 'subject'", "its group keys are task")


def test_schema_refuses_a_bad_group_row(tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl")
    report = run_evaluate(path, group_by="task").report
    report["results"]["groups"]["rows"][0]["n_samples"] = 0
    (tmp_path / "bad.json").write_text(json.dumps(report))
    with pytest.raises(InputError, match=r"results\.groups\.rows\[0\]\.n_samples"):
        read_report(tmp_path / "bad.json", kind="evaluate")


def test_pt_keys_of_strings_and_integers(tmp_path):
    torch = pytest.importorskip("torch", reason="a .pt file needs torch")
    logits = torch.tensor([[2.0, 0.0], [0.0, -1.0], [1.0, 0.5], [0.2, -0.1]])
    torch.save({"logits": logits, "labels": torch.tensor([0, 1, 1, 0]), "task": ["x", "y", "x", "y"],
                "fold": torch.tensor([1, 1, 2, 2])}, tmp_path / "p.pt")
    for key, names in (("task", ["x", "y"]), ("fold", ["1", "2"])):
        rows = run_evaluate(tmp_path / "p.pt", group_by=key, metrics="error").report["results"]["groups"]["rows"]
        assert [row["group"] for row in rows] == names
    x = run_evaluate(tmp_path / "p.pt", group_by="task", metrics="nll").report["results"]["groups"]["rows"][0]
    assert x["metrics"]["nll"] == pytest.approx(evaluate_predictions(logits[[0, 2]].numpy(), [0, 1],
                                                                     metric_names="nll")["metrics"]["nll"], abs=1e-12)


@pytest.mark.slow
def test_run_folder_and_checkpoint(digits_run, tmp_path):
    import shutil

    # A run folder: its predictions.npz, which holds no group keys (val_labels is no group).
    with pytest.raises(InputError, match="found none: its group keys are none"):
        run_evaluate(digits_run, group_by="task")
    # A checkpoint outside its run is run on its test split: its outputs carry no per-sample keys.
    shutil.copy(digits_run / "checkpoints" / "best.pt", tmp_path / "model.pt")
    with pytest.raises(InputError, match="with a predictions file, got model.pt, a checkpoint"):
        run_evaluate(tmp_path / "model.pt", group_by="task", device="cpu")
