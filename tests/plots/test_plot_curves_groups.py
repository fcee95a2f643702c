"""`adacal plot curves`: which runs are averaged as seeds of one setting and how the lines are named; a run given
twice, a rerun with the same seed, and seeds of different lengths (adacal.plots.curve_inputs, curve_notes)."""

import json

import numpy as np
import pytest

from adacal import plots
from adacal.cli import app
from adacal.reports import make_report, write_json
from cli_helpers import runner

# A resolved config.json as `adacal train` writes it (digits, mlp, focal).
CONFIG = {
    "dataset": "digits", "model": "mlp", "loss": "focal", "model_options": {}, "loss_options": {"gamma": 3.0},
    "epochs": 4, "batch_size": 32, "lr": 0.1, "milestones": [20], "lr_decay": 0.1, "momentum": 0.9,
    "weight_decay": 0.0, "optimizer": "sgd", "seed": 0, "device": "auto", "amp": False, "channels_last": False,
    "update_every": "epoch", "select": "last", "grad_clip": None, "eval_test_every": 0, "out": "runs", "resume": None,
    "workers": 0, "data_dir": None, "train_subset": 128, "val_size": None, "test_subset": None, "preset": "quick",
    "loss_reduction": "mean", "name": None,
}


def _history(epochs, seed):
    rng = np.random.default_rng(seed)
    return [{"epoch": e, "lr": 0.1, "train": {"loss": 1.0, "accuracy": 0.5},
             "val": {"error": float(rng.uniform(0.1, 0.5)), "ece_em": float(rng.uniform(0.01, 0.1))}}
            for e in range(1, epochs + 1)]


def _run(root, name, *, epochs=4, history_epochs=None, loss_options=None, **options):
    """A run folder with CONFIG changed by `options` (and `loss_options`), and `history_epochs` epochs recorded."""
    config = {**CONFIG, "name": name, **options, "epochs": epochs}
    if loss_options is not None:
        config["loss_options"] = loss_options
    run = root / name
    run.mkdir(parents=True)
    write_json(run / "config.json", make_report("train-config", config=config, results={}))
    history = _history(epochs if history_epochs is None else history_epochs, config["seed"] * 7 + len(name))
    (run / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    return run


def _curves(saved_figures, tmp_path, *runs, out="c.png"):
    result = runner.invoke(app, ["plot", "curves", *map(str, runs), "--out", str(tmp_path / out), "--dpi", "30"])
    assert result.exit_code == 0, result.output
    (ax,) = [ax for ax in saved_figures[-1].axes if ax.get_label() == "curves:error"]
    return {line.get_label(): line for line in ax.get_lines()}, result.stderr


def _val_errors(run):
    return [r["val"]["error"] for r in plots.load_history(run / "history.jsonl")]


def test_runs_that_differ_in_a_loss_option_are_separate_lines_named_by_it(tmp_path, saved_figures):
    g0 = _run(tmp_path, "g_0", loss_options={"gamma": 0.0})
    g1000 = _run(tmp_path, "g_1000", loss_options={"gamma": 1000.0})
    lines, _ = _curves(saved_figures, tmp_path, g0, g1000)
    assert list(lines) == ["Focal γ=0", "Focal γ=1000"]  # not "Focal (mean ± std, 2 seeds)"
    np.testing.assert_allclose(lines["Focal γ=1000"].get_ydata(), 100 * np.array(_val_errors(g1000)))
    assert lines["Focal γ=0"].get_color() == lines["Focal γ=1000"].get_color() == plots.loss_color("focal")
    assert lines["Focal γ=0"].get_linestyle() != lines["Focal γ=1000"].get_linestyle()


@pytest.mark.parametrize(
    "options, labels",
    [
        ({"lr": 0.01}, ["Focal lr=0.1", "Focal lr=0.01"]),
        ({"train_subset": 256}, ["Focal train-subset=128", "Focal train-subset=256"]),
        ({"preset": "paper"}, ["Focal preset=quick", "Focal preset=paper"]),
        ({"milestones": [2, 3]}, ["Focal milestones=20", "Focal milestones=2,3"]),
        ({"amp": True}, ["Focal amp=false", "Focal amp=true"]),
        ({"lr": 0.01, "weight_decay": 5e-4}, ["Focal lr=0.1, weight-decay=0", "Focal lr=0.01, weight-decay=0.0005"]),
        ({"lr": 0.01, "weight_decay": 5e-4, "optimizer": "adam"}, ["Focal · a", "Focal · b"]),  # too many: the folder
    ],
)
def test_any_training_option_that_differs_splits_the_line(tmp_path, saved_figures, options, labels):
    a, b = _run(tmp_path, "a", seed=0), _run(tmp_path, "b", seed=1, **options)
    lines, _ = _curves(saved_figures, tmp_path, a, b)
    assert list(lines) == labels


def test_runs_of_different_epochs_are_separate_lines(tmp_path, saved_figures):
    runs = [_run(tmp_path, f"e_{n}", epochs=n, seed=k) for k, n in enumerate((4, 1, 20))]
    lines, stderr = _curves(saved_figures, tmp_path, *runs)
    assert list(lines) == ["Focal epochs=4", "Focal epochs=1", "Focal epochs=20"]
    assert [len(line.get_xdata()) for line in lines.values()] == [4, 1, 20] and stderr == ""


def test_seeds_that_differ_only_in_bookkeeping_are_averaged(tmp_path, saved_figures):
    runs = [
        _run(tmp_path, "s0", seed=0),
        _run(tmp_path / "elsewhere", "s1", seed=1, out="elsewhere", device="cuda", workers=4, data_dir="/data",
             channels_last=True, select="best-val", eval_test_every=0, resume="runs/s1"),
        _run(tmp_path, "s2", seed=2, loss_options={"gamma": 3}),  # 3 == 3.0
    ]
    lines, stderr = _curves(saved_figures, tmp_path, *runs)
    assert list(lines) == ["Focal (mean ± std, 3 seeds)"] and stderr == ""
    errors = np.array([_val_errors(run) for run in runs])
    np.testing.assert_allclose(lines["Focal (mean ± std, 3 seeds)"].get_ydata(), 100 * errors.mean(axis=0))


def test_a_deprecated_option_spelling_is_the_same_option(tmp_path, saved_figures):
    a = _run(tmp_path, "a", loss="adafocal", loss_options={"n_bins": 15})
    b = _run(tmp_path, "b", loss="adafocal", loss_options={"num_bins": 15}, seed=1)
    lines, _ = _curves(saved_figures, tmp_path, a, b)
    assert list(lines) == ["AdaFocal (mean ± std, 2 seeds)"]


def test_a_run_given_twice_counts_once_with_a_note(tmp_path, saved_figures):
    run, other = _run(tmp_path, "base"), _run(tmp_path, "other", seed=1)
    lines, stderr = _curves(saved_figures, tmp_path, run, run, run / "config.json", out="twice.png")
    assert list(lines) == ["Focal"]  # not "Focal (mean ± std, 3 seeds)"
    assert stderr == f"Note: {run} is given more than once; it is drawn once.\n"
    _curves(saved_figures, tmp_path, run, out="once.png")
    assert (tmp_path / "twice.png").read_bytes() == (tmp_path / "once.png").read_bytes()
    lines, _ = _curves(saved_figures, tmp_path, run, other, run)
    assert list(lines) == ["Focal (mean ± std, 2 seeds)"]


def test_runs_with_the_same_options_and_seed_are_not_two_seeds(tmp_path, saved_figures):
    first = _run(tmp_path, "first", seed=3)
    rerun = _run(tmp_path / "copies", "rerun", seed=3, device="cpu")  # same options, another device: not a new seed
    third = _run(tmp_path, "third", seed=4)
    lines, stderr = _curves(saved_figures, tmp_path, first, rerun, third)
    assert list(lines) == ["Focal (mean ± std, 2 seeds)"]
    assert stderr == (f"Note: {rerun} has the same options and seed (3) as {first}, so it is not another seed; "
                      f"only {first} is drawn.\n")
    expected = np.mean([_val_errors(first), _val_errors(third)], axis=0)
    np.testing.assert_allclose(lines["Focal (mean ± std, 2 seeds)"].get_ydata(), 100 * expected)


def test_seeds_of_different_lengths_are_drawn_over_the_shared_epochs_and_say_so(tmp_path, saved_figures):
    # Same options (epochs=20); the runs stopped after 4, 1 and 20 epochs (interrupted, or still training).
    runs = [_run(tmp_path, f"s{seed}", epochs=20, history_epochs=n, seed=seed) for seed, n in enumerate((4, 2, 20))]
    lines, stderr = _curves(saved_figures, tmp_path, *runs)
    label = "Focal (mean ± std, 3 seeds, epochs 1–2 of 4/2/20)"
    assert list(lines) == [label]
    np.testing.assert_array_equal(lines[label].get_xdata(), [1, 2])
    expected = np.mean([_val_errors(run)[:2] for run in runs], axis=0)
    np.testing.assert_allclose(lines[label].get_ydata(), 100 * expected)
    assert stderr == (f"Note: Focal: its 3 runs ({runs[0]}, {runs[1]}, {runs[2]}) record validation metrics for 4, 2 "
                      "and 20 epochs; mean ± std is drawn over epochs 1–2, the epochs all of them have.\n")
    _, stderr = _curves(saved_figures, tmp_path, runs[0], runs[2], runs[1], out="again.png")
    assert "for 4, 20 and 2 epochs" in stderr
    lines, stderr = _curves(saved_figures, tmp_path, runs[2], _run(tmp_path, "full", epochs=20, seed=9))
    assert list(lines) == ["Focal (mean ± std, 2 seeds)"] and stderr == ""  # same lengths: nothing to say


def test_curve_notes_name_only_the_metric_that_is_cut():
    full = _history(3, 0)
    short_ece = [{**r, "val": {"error": r["val"]["error"]}} if r["epoch"] == 3 else r for r in _history(3, 1)]
    summary = plots.summarize_curve([full, short_ece], "val", "ece_em")
    assert summary.run_epochs == (3, 2) and summary.cut and summary.drawn() == "epochs 1–2"
    assert plots.curve_notes({"CE": [full, short_ece]}) == [
        "CE: its 2 runs record validation ECE-EM for 3 and 2 epochs; mean ± std is drawn over epochs 1–2, the "
        "epochs all of them have"]
    assert plots.curve_notes({"CE": [full, full], "AdaFocal": [full]}) == []


def test_curve_inputs_groups_in_the_library(tmp_path):
    a, b = _run(tmp_path, "a", seed=0), _run(tmp_path, "b", seed=1)
    c = _run(tmp_path, "c", seed=0, loss="ce", loss_options={})
    inputs = plots.curve_inputs([a, b, c, a])
    assert list(inputs.runs) == ["Focal", "CE"]
    assert inputs.folders == {"Focal": [a, b], "CE": [c]} and inputs.losses == {"Focal": "focal", "CE": "ce"}
    assert [len(h) for h in inputs.runs["Focal"]] == [4, 4]
    assert inputs.notes == [f"{a} is given more than once; it is drawn once"]


def test_curves_help_states_the_grouping_rules():
    text = " ".join(runner.invoke(app, ["plot", "curves", "--help"]).output.replace("│", " ").split())
    for fragment in ("equal except the seed", "Focal γ=0", "count once", "epochs they all have"):
        assert fragment in text
