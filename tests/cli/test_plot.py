"""`adacal plot` through CliRunner on synthetic run folders (no trainer needed): files, formats, artists, errors."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from adacal import plots
from adacal.arrays import softmax
from adacal.cli import app
from adacal.commands import plot as plot_command
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json

from cli_helpers import one_line_error, runner

M = 4
PNG, PDF = b"\x89PNG\r\n\x1a\n", b"%PDF-"


def _logits(n, seed, scale):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, n)
    logits = rng.normal(size=(n, 5))
    logits[np.arange(n), labels] += 1.5
    return (scale * logits).astype(np.float32), labels


def _history(epochs, seed, adafocal):
    rng = np.random.default_rng(seed)
    records = []
    for epoch in range(1, epochs + 1):
        metrics = lambda: {"error": float(rng.uniform(0.1, 0.5)), "nll": 1.0,  # noqa: E731
                           "ece_em": float(rng.uniform(0.01, 0.1)), "ece_ew": 0.05}
        record = {"epoch": epoch, "lr": 0.1, "train": {"loss": 1.0, "accuracy": 0.6}, "val": metrics(),
                  "test": metrics()}
        if adafocal:
            edges = np.concatenate([[0.0], np.sort(rng.uniform(0.4, 0.99, M - 1)), [1.0]])
            confidence = (edges[:-1] + edges[1:]) / 2
            update = {"edges": edges.tolist(), "gammas": rng.uniform(0.2, 5, M).tolist(),
                      "val_confidence": confidence.tolist(), "val_accuracy": (confidence - 0.02).tolist(),
                      "counts": [25] * M}
            record["adafocal"] = {"updates": [update], "train_confidence": (confidence + 0.01).tolist(),
                                  "train_counts": [100] * M}
        records.append(record)
    return records


def _make_run(root, name, loss, seed=0, scale=1.0):
    run = root / name
    run.mkdir()
    config = {"loss": loss, "model": "mlp", "dataset": "digits", "seed": seed, "epochs": 3}
    write_json(run / "config.json", make_report("train-config", config=config, results={}))
    lines = [json.dumps(r) for r in _history(3, seed, adafocal=loss == "adafocal")]
    (run / "history.jsonl").write_text("\n".join(lines) + "\n")
    save_split_predictions(run / "predictions.npz", val=Predictions(*_logits(100, seed, scale)),
                           test=Predictions(*_logits(200, seed + 50, scale)))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    made = {
        "ce": _make_run(root, "ce", "ce", seed=0, scale=2.0),
        "ce-seed1": _make_run(root, "ce-seed1", "ce", seed=1, scale=2.0),
        "adafocal": _make_run(root, "adafocal", "adafocal", seed=2),
    }
    ood = make_report("ood", config={}, results={
        "in": {"name": "digits", "n": 10}, "out": {"name": "noise", "n": 10}, "temperature": 1.2,
        "temperature_source": "fitted",
        "scores": {"entropy": {
            "pre": {"auroc": 0.75, "aupr_in": 0.7, "aupr_out": 0.7, "fpr_at_95_tpr": 0.5,
                    "roc": {"fpr": [0.0, 0.2, 1.0], "tpr": [0.0, 0.7, 1.0]}},
            "post": {"auroc": 0.8, "aupr_in": 0.7, "aupr_out": 0.7, "fpr_at_95_tpr": 0.4,
                     "roc": {"fpr": [0.0, 0.1, 1.0], "tpr": [0.0, 0.7, 1.0]}}}}})
    write_json(made["adafocal"] / "ood.json", ood)
    write_json(made["ce"] / "ood.json", ood)
    return made


def _ok(args):
    result = runner.invoke(app, ["plot", *args])
    assert result.exit_code == 0, result.output
    return result


def _error(args):
    return one_line_error(runner.invoke(app, ["plot", *args]))


def _stats(run, binning="equal-width", n_bins=15):
    with np.load(run / "predictions.npz") as data:
        probs, labels = softmax(data["test_logits"].astype(np.float64)), data["test_labels"]
    return bin_statistics(probs.max(axis=1), probs.argmax(axis=1) == labels, n_bins=n_bins, binning=binning)


def _bar_heights(fig):
    heights = []
    for ax in fig.axes:
        if ax.get_label().startswith("reliability:"):
            (bars,) = [c for c in ax.containers if c.get_label() == "Accuracy"]
            heights.append([r.get_height() for r in bars.patches])
    return heights


def test_reliability_of_run_folders_goes_to_a_comparison_name(runs, saved_figures, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _ok(["reliability", str(runs["ce"]), str(runs["adafocal"]), "--binning", "equal-mass", "--n-bins", "10",
                  "--dpi", "40"])
    out = Path("plots") / "compare-reliability-ce-adafocal.png"  # in the current folder
    assert out.read_bytes().startswith(PNG) and str(out) in result.stdout
    assert not (runs["ce"] / "plots" / "reliability.png").exists()  # the single run's figure is not touched
    (fig,) = saved_figures
    expected = [_stats(runs[name], "equal-mass", 10).accuracy for name in ("ce", "adafocal")]
    np.testing.assert_array_equal(_bar_heights(fig), expected)
    titles = [ax.get_title() for ax in fig.axes if ax.get_label().startswith("reliability:")]
    assert titles[0].startswith("CE\n") and titles[1].startswith("AdaFocal\n")


def test_reliability_of_predictions_file_and_evaluate_json(runs, tmp_path, saved_figures, monkeypatch):
    monkeypatch.chdir(tmp_path)
    predictions = tmp_path / "preds.npz"
    predictions.write_bytes((runs["ce"] / "predictions.npz").read_bytes())
    stats = _stats(runs["ce"])
    evaluate = tmp_path / "eval.json"
    write_json(evaluate, make_report("evaluate", config={}, results={
        "bins": {"equal_width": stats.to_dict(), "equal_mass": _stats(runs["ce"], "equal-mass").to_dict()}}))
    _ok(["reliability", str(predictions), str(evaluate), "--labels", "file,report", "--title", "Two inputs",
         "--dpi", "30"])
    assert (tmp_path / "plots" / "compare-reliability-preds-eval.png").read_bytes().startswith(PNG)
    np.testing.assert_array_equal(_bar_heights(saved_figures[0]), [stats.accuracy, stats.accuracy])
    titles = [ax.get_title() for ax in saved_figures[0].axes if ax.get_label().startswith("reliability:")]
    assert [t.split("\n")[0] for t in titles] == ["file", "report"]


def test_repeated_losses_are_told_apart_by_the_first_differing_detail(runs, tmp_path, saved_figures):
    _ok(["reliability", str(runs["ce"]), str(runs["ce-seed1"]), str(runs["adafocal"]), "--out",
         str(tmp_path / "r.png"), "--dpi", "30"])
    titles = [ax.get_title().split("\n")[0] for ax in saved_figures[0].axes
              if ax.get_label().startswith("reliability:")]
    assert titles == ["CE (seed 0)", "CE (seed 1)", "AdaFocal"]  # same model and dataset: the seed differs
    run = tmp_path / "ce"
    shutil.copytree(runs["ce"], run)
    write_json(run / "evaluate.json", make_report("evaluate", config={}, results={
        "bins": {"equal_width": _stats(run).to_dict()}}))
    _ok(["reliability", str(run), str(run / "evaluate.json"), "--out", str(tmp_path / "r.png"), "--dpi", "30"])
    titles = [ax.get_title().split("\n")[0] for ax in saved_figures[1].axes
              if ax.get_label().startswith("reliability:")]
    assert titles == ["CE (ce)", "CE (evaluate.json)"]


def test_reliability_with_calibrated_adds_the_calibrated_panel(runs, tmp_path, saved_figures):
    calibrators = pytest.importorskip("adacal.calibrators")
    with np.load(runs["ce"] / "predictions.npz") as data:
        val_logits, val_labels, test_logits = data["val_logits"], data["val_labels"], data["test_logits"]
        test_labels = data["test_labels"]
    calibrator = calibrators.build_calibrator("temperature").fit(val_logits, val_labels)
    write_json(tmp_path / "calibrate.json", make_report("calibrate", config={}, results={
        "calibrators": {"temperature": {"params": {}, "calibrator": calibrator.to_dict()}}, "best": "temperature"}))
    _ok(["reliability", str(runs["ce"]), "--calibrated", str(tmp_path / "calibrate.json"),
         "--out", str(tmp_path / "cal.png"), "--dpi", "30"])
    _ok(["reliability", str(runs["ce"]), "--calibrated", str(tmp_path / "calibrate.json"), "--dpi", "30"])
    assert (runs["ce"] / "plots" / "reliability-calibrated.png").is_file()  # not the plain diagram's name
    probs = np.asarray(calibrator.transform(test_logits), dtype=np.float64)
    expected = bin_statistics(probs.max(axis=1), probs.argmax(axis=1) == test_labels).accuracy
    heights = _bar_heights(saved_figures[0])
    assert len(heights) == 2
    np.testing.assert_allclose(heights[1], expected, atol=1e-12)


def test_calibrated_panel_of_probabilities_follows_what_the_calibrator_allows(runs, tmp_path, saved_figures):
    """Temperature scaling applies to probabilities as to their logits; vector scaling fitted on logits refuses them."""
    calibrators = pytest.importorskip("adacal.calibrators")
    with np.load(runs["ce"] / "predictions.npz") as data:
        val_logits, val_labels = data["val_logits"], data["val_labels"]
        test_logits, test_labels = data["test_logits"].astype(np.float64), data["test_labels"]
    np.savez(tmp_path / "probs.npz", probs=softmax(test_logits), labels=test_labels)
    for method in ("temperature", "vector-scaling"):
        calibrator = calibrators.build_calibrator(method).fit(val_logits, val_labels)
        write_json(tmp_path / f"{method}.json", make_report("calibrate", config={}, results={
            "calibrators": {method: {"params": {}, "calibrator": calibrator.to_dict()}}, "best": method}))
    _ok(["reliability", str(tmp_path / "probs.npz"), "--calibrated", str(tmp_path / "temperature.json"),
         "--out", str(tmp_path / "t.png"), "--dpi", "30"])
    probs = np.asarray(calibrators.build_calibrator("temperature").fit(val_logits, val_labels).transform(test_logits))
    expected = bin_statistics(probs.max(axis=1), probs.argmax(axis=1) == test_labels).accuracy
    np.testing.assert_allclose(_bar_heights(saved_figures[0])[1], expected, atol=1e-9)
    message = _error(["reliability", str(tmp_path / "probs.npz"), "--calibrated", str(tmp_path / "vector-scaling.json"),
                      "--out", str(tmp_path / "v.png")])
    assert "fitted on logits, got probabilities" in message and "--calibrated, applied to" in message
    assert not (tmp_path / "v.png").exists()


def test_gamma_writes_one_panel_per_requested_bin(runs, tmp_path, saved_figures):
    _ok(["gamma", str(runs["adafocal"]), "--bins", "0,3", "--out", str(tmp_path / "gamma.pdf")])
    assert (tmp_path / "gamma.pdf").read_bytes().startswith(PDF)
    (fig,) = saved_figures
    assert sorted(ax.get_label() for ax in fig.axes
                  if ax.get_label().startswith("gamma:")) == ["gamma:bin-0", "gamma:bin-3"]
    history = plots.load_history(runs["adafocal"] / "history.jsonl")
    (gamma_ax,) = [ax for ax in fig.axes if ax.get_label() == "gamma:bin-3"]
    np.testing.assert_array_equal(gamma_ax.get_lines()[0].get_ydata(),
                                  [r["adafocal"]["updates"][0]["gammas"][3] for r in history])


def test_correspondence_curves_and_roc_write_their_files(runs, tmp_path):
    _ok(["correspondence", str(runs["adafocal"]), "--bins", "1", "--dpi", "30"])
    assert (runs["adafocal"] / "plots" / "correspondence.png").read_bytes().startswith(PNG)
    _ok(["curves", str(runs["ce"]), str(runs["ce-seed1"]), str(runs["adafocal"]), "--out", str(tmp_path / "c.png"),
         "--dpi", "30"])
    assert (tmp_path / "c.png").read_bytes().startswith(PNG)
    _ok(["roc", str(runs["ce"] / "ood.json"), str(runs["adafocal"]), "--out", str(tmp_path / "roc.svg")])
    assert "<svg" in (tmp_path / "roc.svg").read_text()


def test_same_input_gives_identical_bytes(runs, tmp_path):
    # (SVG determinism is checked in tests/plots/test_plots.py)
    for name in ("a", "b"):
        _ok(["gamma", str(runs["adafocal"]), "--bins", "2", "--out", str(tmp_path / f"{name}.png"), "--dpi", "30"])
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_gamma_on_a_run_without_adafocal_is_a_one_line_error(runs):
    for command in ("gamma", "correspondence"):
        message = _error([command, str(runs["ce"])])
        assert message == f"Error: {runs['ce']} was trained with --loss ce; plot {command} needs an adafocal run."
    assert not (runs["ce"] / "plots" / "gamma.png").exists()


@pytest.mark.parametrize(
    "args, match",
    [
        (["gamma", "{adafocal}", "--bins", "0,4"], rf"\[0, {M - 1}\], got 4"),
        (["gamma", "{adafocal}", "--bins", "zero"], "comma-separated"),
        (["reliability", "{adafocal}", "--out", "{tmp}/x.jpg"], r"\.png, \.svg or \.pdf"),
        (["reliability", "{tmp}/missing.npz", "--out", "{tmp}/x.png"], "does not exist"),
        (["reliability", "{adafocal}", "--binning", "quantile", "--out", "{tmp}/x.png"],
         r"Unknown binning \(--binning\) 'quantile'. Choices: equal-mass, equal-width"),
        (["reliability", "{adafocal}", "--n-bins", "0", "--out", "{tmp}/x.png"], "--n-bins"),
        (["reliability", "{adafocal}", "--n-bins", "1001", "--out", "{tmp}/x.png"],
         r"at most 1,000 bins in a reliability diagram .* got 1,001 from --n-bins"),
        (["reliability", "{adafocal}", "{ce}", "--labels", "one", "--out", "{tmp}/x.png"], "--labels"),
        (["reliability", "{adafocal}/ood.json", "--out", "{tmp}/x.png"], "kind 'evaluate', got one of kind 'ood'"),
        (["roc", "{adafocal}/config.json", "--out", "{tmp}/x.png"], "kind 'ood', got one of kind 'train-config'"),
        (["roc", "{adafocal}", "--score", "energy", "--out", "{tmp}/x.png"], "energy"),
        (["roc", "{adafocal}/predictions.npz", "--out", "{tmp}/x.png"], "a predictions file: score it first"),
        (["curves", "{tmp}", "--out", "{tmp}/x.png"], "run folder"),
        (["reliability", "{adafocal}", "--dpi", "0", "--out", "{tmp}/x.png"], "--dpi"),
        (["reliability", "{adafocal}", "--bogus"], "No such option"),
    ],
)
def test_bad_input_is_one_line_error_and_writes_nothing(runs, tmp_path, args, match):
    names = {"adafocal": runs["adafocal"], "ce": runs["ce"], "tmp": tmp_path}
    before = _files(runs["ce"].parent)
    message = _error([a.format(**names) for a in args])
    assert re.search(match, message), message
    assert list(tmp_path.iterdir()) == []
    assert _files(runs["ce"].parent) == before


def test_an_evaluate_report_with_more_bins_than_a_diagram_draws_is_refused(runs, tmp_path):
    from adacal.plots.reliability_diagrams import MAX_DIAGRAM_BINS

    report = tmp_path / "many.json"
    shutil.copy(runs["ce"] / "predictions.npz", tmp_path / "p.npz")  # a file: evaluate writes only --json
    result = runner.invoke(app, ["evaluate", str(tmp_path / "p.npz"), "--n-bins", str(MAX_DIAGRAM_BINS + 1), "--json",
                                 str(report)])
    assert result.exit_code == 0, result.output
    message = _error(["reliability", str(report), "--out", str(tmp_path / "x.png")])
    assert message == (f"Error: Expected at most {MAX_DIAGRAM_BINS:,} bins in a reliability diagram (one bar each; "
                       f"narrower bins than a pixel show nothing), got {MAX_DIAGRAM_BINS + 1:,} from panel 'many'.")
    assert not (tmp_path / "x.png").exists()
    help_text = runner.invoke(app, ["plot", "reliability", "--help"]).output
    assert f"at most {MAX_DIAGRAM_BINS:,}" in " ".join(help_text.replace("│", " ").split())  # however it wraps


def test_parse_bins_and_labels():
    assert plot_command.parse_bins("0, 7,14") == [0, 7, 14] and plot_command.parse_bins(None) is None
    with pytest.raises(InputError, match="--bins"):
        plot_command.parse_bins("0,seven")
    assert plot_command.parse_labels("a,b", 2) == ["a", "b"]
    with pytest.raises(InputError, match="--labels"):
        plot_command.parse_labels("a,b", 3)


def test_check_dpi():
    assert plot_command.check_dpi(150) == 150
    for bad in (0, 9, 2401, True, 1.5):
        with pytest.raises(InputError, match="--dpi"):
            plot_command.check_dpi(bad)


def _files(root):
    return sorted(str(p) for p in root.rglob("*"))


def test_plot_help_lists_subcommands():
    result = runner.invoke(app, ["plot", "--help"])
    assert result.exit_code == 0
    for name in ("reliability", "gamma", "curves", "correspondence", "roc"):
        assert name in result.stdout


def test_bins_help_states_the_panel_limit():
    from adacal.plots.adafocal import MAX_BIN_PANELS

    text = re.sub(r"[\s│]+", " ", runner.invoke(app, ["plot", "gamma", "--help"]).output)
    assert f"at most {MAX_BIN_PANELS} (one panel each" in text


def test_reliability_reads_a_json_of_predictions_as_predictions_and_a_report_as_a_report(runs, tmp_path, saved_figures):
    with np.load(runs["ce"] / "predictions.npz") as data:
        logits, labels = data["test_logits"].astype(float), data["test_labels"]
    (tmp_path / "preds.json").write_text(json.dumps({"logits": logits.tolist(), "labels": labels.tolist()}))
    np.savez(tmp_path / "preds.npz", logits=logits, labels=labels)
    for name in ("preds.json", "preds.npz"):
        _ok(["reliability", str(tmp_path / name), "--out", str(tmp_path / f"{name}.png"), "--dpi", "30"])
    np.testing.assert_allclose(_bar_heights(saved_figures[0])[0], _bar_heights(saved_figures[1])[0], atol=1e-12)
    assert runner.invoke(app,
                         ["evaluate", str(tmp_path / "preds.npz"), "--json", str(tmp_path / "r.json")]).exit_code == 0
    _ok(["reliability", str(tmp_path / "r.json"), "--out", str(tmp_path / "report.png"), "--dpi", "30"])
    np.testing.assert_allclose(_bar_heights(saved_figures[2])[0], _bar_heights(saved_figures[1])[0], atol=1e-12)


def test_reliability_says_what_reading_a_predictions_file_assumed(tmp_path, monkeypatch):
    """The notes evaluate prints (binary decision scores here) are printed by plot reliability too."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "binary.npz", scores=3.0 * rng.normal(size=200), labels=rng.integers(0, 2, 200))
    result = _ok(["reliability", str(tmp_path / "binary.npz"), "--dpi", "30"])
    assert "Note: binary.npz:scores: 1-D scores outside [0, 1] taken as binary decision scores" in result.stderr


def test_reliability_reads_files_with_evaluates_options_and_a_saved_calibrator(runs, tmp_path, monkeypatch):
    """Files `evaluate` reads with --labels, --logits-key/--labels-key or --renormalize can be plotted (the errors
    used to name options plot did not have), and --calibrated takes what `calibrate --save` writes."""
    from adacal.calibrators import build_calibrator, save_calibrator

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(3)
    logits, labels = 2.0 * rng.normal(size=(300, 4)), rng.integers(0, 4, 300)
    np.save(tmp_path / "scores.npy", logits)
    np.save(tmp_path / "y.npy", labels)
    assert "give --labels-file FILE" in _error(["reliability", str(tmp_path / "scores.npy"), "--out",
                                                str(tmp_path / "a.png")])
    _ok(["reliability", str(tmp_path / "scores.npy"), "--labels-file", str(tmp_path / "y.npy"), "--out",
         str(tmp_path / "a.png"), "--dpi", "30"])
    np.savez(tmp_path / "keys.npz", out=logits, gt=labels)
    _ok(["reliability", str(tmp_path / "keys.npz"), "--logits-key", "out", "--labels-key", "gt", "--out",
         str(tmp_path / "b.png"), "--dpi", "30"])
    rounded = np.round(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), 2)
    np.savez(tmp_path / "rounded.npz", probs=rounded, labels=labels)
    _ok(["reliability", str(tmp_path / "rounded.npz"), "--renormalize", "--out", str(tmp_path / "c.png"), "--dpi",
         "30"])
    save_calibrator(build_calibrator("temperature").fit(logits, labels), tmp_path / "ts.json")
    np.savez(tmp_path / "p.npz", logits=logits, labels=labels)
    _ok(["reliability", str(tmp_path / "p.npz"), "--calibrated", str(tmp_path / "ts.json"), "--out",
         str(tmp_path / "d.png"), "--dpi", "30"])
    assert (tmp_path / "d.png").read_bytes().startswith(PNG)


def test_split_val_needs_val_arrays_and_one_equal_mass_bin_is_titled_ece_em(tmp_path, saved_figures, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(5)
    logits, labels = 2.0 * rng.normal(size=(200, 3)), rng.integers(0, 3, 200)
    np.savez(tmp_path / "one.npz", logits=logits, labels=labels)
    # A file of one set has no validation split: plotting its arrays as "val" misled
    assert "Expected val_ arrays (val_logits, val_labels) in" in _error(
        ["reliability", str(tmp_path / "one.npz"), "--split", "val", "--out", str(tmp_path / "v.png")])
    np.savez(tmp_path / "two.npz", val_logits=logits[:100], val_labels=labels[:100], test_logits=logits[100:],
             test_labels=labels[100:])
    _ok(["reliability", str(tmp_path / "two.npz"), "--split", "val", "--out", str(tmp_path / "v.png"), "--dpi", "30"])
    # One bin's edges are 0 and 1 under either binning: the title follows --binning, not the edges
    _ok(["reliability", str(tmp_path / "one.npz"), "--binning", "equal-mass", "--n-bins", "1", "--out",
         str(tmp_path / "m.png"), "--dpi", "30"])
    titles = [ax.get_title() for ax in saved_figures[-1].axes if ax.get_label().startswith("reliability:")]
    assert titles[0].splitlines()[1].startswith("ECE-EM ")  # the headline, as evaluate's; ECE-EW beside it
    legend = [t.get_text() for t in saved_figures[-1].legends[0].get_texts()]
    assert "Accuracy (1 equal-mass bin)" in legend
