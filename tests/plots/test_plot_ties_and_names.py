"""Reliability diagrams of tied confidences (equal-mass bins left empty with zero width are not drawn, and a note says
how many), unknown names in every `adacal plot` option (the choices and the closest match) and an input given twice
to `plot reliability` (drawn once, with a note)."""

import re

import numpy as np
import pytest

from adacal import plots
from adacal.cli import app
from adacal.errors import UnknownNameError
from adacal.metrics.binning import bin_statistics
from adacal.plots.reliability_diagrams import empty_bins_note

from cli_helpers import one_line_error, runner

N = 200


def _tied(kind, seed=0):
    """Two-class probabilities whose top confidence is: all 1.0, all 0.5 (every one tied), or 70 % exactly 1.0."""
    rng = np.random.default_rng(seed)
    if kind == "all-1":
        confidences = np.ones(N)
    elif kind == "all-half":
        confidences = np.full(N, 0.5)
    else:
        confidences = np.where(rng.random(N) < 0.7, 1.0, rng.uniform(0.55, 0.99, N))
    probs = np.stack([confidences, 1.0 - confidences], axis=1)
    labels = (rng.random(N) > confidences).astype(int)  # class 0 with probability `confidences`
    return probs, labels


def _stats(probs, labels, n_bins=15):
    return bin_statistics(probs.max(axis=1), probs.argmax(axis=1) == labels, n_bins=n_bins, binning="equal-mass")


def _bars(ax, label="Accuracy"):
    (bars,) = [c for c in ax.containers if c.get_label() == label]
    return bars.patches


def _counts(ax):
    return {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("count:")}


# What each kind of data leaves: (zero-width empty bins, where they sit).
CASES = {"all-1": (14, "100 %"), "all-half": (13, "50 %"), "partial": (None, "100 %")}


@pytest.mark.parametrize("kind", list(CASES))
def test_zero_width_empty_bins_get_no_bar_and_no_count_label(kind):
    probs, labels = _tied(kind)
    stats = _stats(probs, labels)
    hidden = (np.diff(stats.edges) == 0) & (stats.counts == 0)
    expected_hidden, where = CASES[kind]
    assert hidden.sum() == (expected_hidden or hidden.sum()) and hidden.sum() > 0  # the binning is unchanged
    display = plots.reliability(probs, labels, strategy="equal-mass")
    patches = _bars(display.ax)
    kept = np.flatnonzero(~hidden)
    assert len(patches) == kept.size
    np.testing.assert_allclose([p.get_x() for p in patches], stats.edges[:-1][kept], atol=1e-12)
    np.testing.assert_allclose([p.get_width() for p in patches], np.diff(stats.edges)[kept], atol=1e-12)
    np.testing.assert_allclose([p.get_height() for p in patches], stats.accuracy[kept], atol=1e-12)
    assert all(p.get_width() > 0 for p in patches)
    # No stacked "n=0": only bins that are drawn carry a count, and no two labels share a place.
    labels_drawn = _counts(display.ax)
    assert not any(f"count:bin-{i}" in labels_drawn for i in np.flatnonzero(hidden))
    places = [t.get_position()[0] for t in display.ax.texts if (t.get_gid() or "").startswith("count:")]
    assert len(places) == len(set(places))
    # The histogram beneath (equal-width) has no zero-width bars either.
    assert all(p.get_width() > 0 for p in display.histogram_ax.patches)
    # One note in the title says how many bins are empty and why.
    note = f"{hidden.sum()} of 15 bins empty (ties at {where})"
    assert display.ax.get_title().endswith(note)
    assert empty_bins_note(stats) == note


def test_all_tied_at_one_draws_one_bar_and_no_sparse_legend_entry():
    probs, labels = _tied("all-1")
    display = plots.reliability(probs, labels, strategy="equal-mass")
    (bar,) = _bars(display.ax)  # the one bin (0, 1] that holds every sample
    assert (bar.get_x(), bar.get_width()) == (0.0, 1.0)
    assert _counts(display.ax) == {}  # 200 samples: not sparse, and the empty bins are not labelled
    (gap,) = _bars(display.ax, "Gap")
    assert gap.get_y() + gap.get_height() == pytest.approx(1.0)  # up to the mean confidence, 100 %
    legend = [t.get_text() for t in display.figure.legends[0].get_texts()]
    assert not any(text.startswith("Bin with fewer than") for text in legend)


def test_drawn_into_a_given_axes_the_note_is_a_legend_line():
    from matplotlib.figure import Figure

    probs, labels = _tied("partial")
    ax = Figure().add_subplot()
    display = plots.reliability(probs, labels, ax=ax, strategy="equal-mass", title="mine")
    assert ax.get_title() == "mine"
    hidden = int(((np.diff(display.stats.edges) == 0) & (display.stats.counts == 0)).sum())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[-1] == f"{hidden} of 15 bins empty (ties at 100 %)"  # after the diagram's own entries
    assert [line.get_gid() for line in ax.lines].count("note:empty-bins") == 1
    assert len(_bars(ax)) == 15 - hidden
    assert "count:bin-14" not in _counts(ax)  # every drawn bin is labelled ("all"), the hidden ones are not


def test_no_note_and_every_bar_without_ties():
    rng = np.random.default_rng(3)
    confidences = rng.uniform(0.5, 1.0, N)
    probs = np.stack([confidences, 1 - confidences], axis=1)
    labels = (rng.random(N) > confidences).astype(int)
    for strategy in ("equal-width", "equal-mass"):
        display = plots.reliability(probs, labels, strategy=strategy, n_bins=10)
        assert len(_bars(display.ax)) == 10 and "bins empty" not in display.ax.get_title()
        assert empty_bins_note(display.stats) is None


def test_fewer_samples_than_bins_is_not_called_a_tie():
    confidences = np.array([0.6, 0.7, 0.8])
    stats = bin_statistics(confidences, np.ones(3), n_bins=10, binning="equal-mass")
    note = empty_bins_note(stats)
    assert note is not None and note.endswith("(3 samples for 10 bins)") and "ties" not in note
    assert "fewer samples (3) than bins" in empty_bins_note(stats, detail=True)


def test_panels_of_tied_data_side_by_side_keep_their_own_notes():
    panels = [plots.ReliabilityPanel(kind, _stats(*_tied(kind))) for kind in ("all-1", "partial")]
    panels.append(plots.ReliabilityPanel("untied", bin_statistics(np.linspace(0.5, 1, N), np.ones(N), n_bins=15,
                                                                  binning="equal-mass")))
    fig = plots.reliability_diagram(panels)
    main = [ax for ax in fig.axes if ax.get_label().startswith("reliability:")]
    titles = [ax.get_title() for ax in main]
    assert titles[0].endswith("14 of 15 bins empty (ties at 100 %)")
    assert titles[1].endswith("(ties at 100 %)") and "bins empty" not in titles[2]
    assert [len(_bars(ax)) for ax in main] == [1, 15 - int(titles[1].split("\n")[-1].split()[0]), 15]
    hist = [ax for ax in fig.axes if ax.get_label().startswith("histogram:")]
    assert all(p.get_width() > 0 for ax in hist for p in ax.patches)  # equal-mass histogram: no zero-width bars


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_tied_figures_are_byte_for_byte_deterministic(fmt, tmp_path):
    probs, labels = _tied("partial")
    written = []
    for name in ("a", "b"):
        display = plots.reliability(probs, labels, strategy="equal-mass")
        written.append(plots.save_figure(display.figure, tmp_path / f"{name}.{fmt}", dpi=40).read_bytes())
    assert written[0] == written[1]


# ------------------------------------------------------------------------------------------------ through the CLI


def _npz(path, probs, labels):
    np.savez(path, probs=probs, labels=labels)
    return str(path)


def test_cli_equal_mass_of_tied_confidences(tmp_path, saved_figures):
    preds = _npz(tmp_path / "tied.npz", *_tied("all-1"))
    result = runner.invoke(app, ["plot", "reliability", preds, "--binning", "equal-mass", "--dpi", "30"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tied-reliability.png").is_file()
    (fig,) = saved_figures
    (ax,) = [a for a in fig.axes if a.get_label() == "reliability:0"]
    assert len(_bars(ax)) == 1 and _counts(ax) == {}
    assert ax.get_title().endswith("14 of 15 bins empty (ties at 100 %)")
    assert ("Note: tied: 14 of 15 bins are empty and of zero width at 100 %, as tied confidences are never split "
            "between bins; they are not drawn.") in result.stderr.splitlines()


def test_cli_equal_width_of_tied_confidences_has_no_note(tmp_path):
    preds = _npz(tmp_path / "tied.npz", *_tied("all-1"))
    result = runner.invoke(app, ["plot", "reliability", preds, "--dpi", "30"])
    assert result.exit_code == 0, result.output
    assert "bins are empty" not in result.stderr


# ------------------------------------------------------------------------------------------------ the same input twice


def test_cli_same_input_twice_is_drawn_once_with_a_note(tmp_path, saved_figures, monkeypatch):
    monkeypatch.chdir(tmp_path)
    preds = _npz(tmp_path / "p.npz", *_tied("partial"))
    result = runner.invoke(app, ["plot", "reliability", preds, f"{tmp_path}/./p.npz", "--dpi", "30"])
    assert result.exit_code == 0, result.output
    (fig,) = saved_figures
    assert [a.get_label() for a in fig.axes if a.get_label().startswith("reliability:")] == ["reliability:0"]
    assert f"Note: {tmp_path}/p.npz is given more than once; it is drawn once." in result.stderr.splitlines()
    # named as the figure of one input, beside it, not as a comparison in the current folder
    assert (tmp_path / "p-reliability.png").is_file() and not (tmp_path / "plots").exists()


def test_unique_inputs_keep_the_first_spelling_in_order():
    from pathlib import Path

    from adacal.plots.reliability_readers import unique_inputs

    assert unique_inputs(["a.npz", "b.npz", "./a.npz", "a.npz"]) == (
        [Path("a.npz"), Path("b.npz")], ["a.npz is given more than once; it is drawn once"])


def test_run_folder_and_its_predictions_file_are_one_input(tmp_path):
    from pathlib import Path

    from adacal.plots.reliability_readers import unique_inputs
    from adacal.reports import make_report, write_json

    run = tmp_path / "run"
    run.mkdir()
    write_json(run / "config.json", make_report("train-config", config={"loss": "ce"}, results={}))
    kept, notes = unique_inputs([run, run / "predictions.npz"])
    assert kept == [Path(run)] and notes == [f"{run / 'predictions.npz'} holds the same predictions as {run}; they "
                                             "are drawn once"]


def test_labels_of_a_repeated_input_keep_the_first(tmp_path):
    preds = _npz(tmp_path / "p.npz", *_tied("partial"))
    notes = []
    panels = plots.reliability_inputs(plots.ReliabilityRequest([preds, preds], labels=["first", "second"]),
                                      notes_out=notes)
    assert [p.label for p in panels] == ["first"]
    assert notes[0] == f"{preds} is given more than once; it is drawn once"


# ------------------------------------------------------------------------------------------------ unknown names


def _error(tmp_path, *args):
    return one_line_error(runner.invoke(app, ["plot", *map(str, args), "--out", str(tmp_path / "x.png")]))


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """Predictions with val_/test_ arrays, their calibrate.json (temperature) and a saved temperature calibrator."""
    from adacal.predictions import Predictions, save_split_predictions

    root = tmp_path_factory.mktemp("calibrated")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 300)
    logits = rng.normal(size=(300, 3))
    logits[np.arange(300), labels] += 2.0
    preds = root / "p.npz"
    save_split_predictions(preds, val=Predictions(logits[:150], labels[:150]),
                           test=Predictions(logits[150:], labels[150:]))
    for extra in (["--json", str(root / "cal.json")], ["--save", str(root / "one.json")]):
        result = runner.invoke(app, ["calibrate", str(preds), "--method", "temperature", *extra])
        assert result.exit_code == 0, result.output
    return {"preds": preds, "report": root / "cal.json", "one": root / "one.json"}


@pytest.mark.parametrize("which", ["report", "one"])
@pytest.mark.parametrize("method, hint", [("temperatur", "temperature"), ("nope", None), ("BEST", "best")])
def test_unknown_method_lists_the_choices_and_the_closest(calibrated, tmp_path, which, method, hint):
    message = _error(tmp_path, "reliability", calibrated["preds"], "--calibrated", calibrated[which],
                     "--method", method)
    assert f"Unknown calibrator (--method) '{method}'." in message
    assert message.endswith("Choices: best, temperature.")
    assert (f"Did you mean '{hint}'?" in message) if hint else ("Did you mean" not in message)
    assert list(tmp_path.iterdir()) == []


def test_a_known_method_missing_from_the_file_says_what_it_holds(calibrated, tmp_path):
    message = _error(tmp_path, "reliability", calibrated["preds"], "--calibrated", calibrated["report"],
                     "--method", "isotonic")
    assert "Expected calibrator 'isotonic'" in message and "it has: temperature" in message


@pytest.mark.parametrize("args, expected", [
    (["reliability", "{preds}", "--binning", "equal_mass"],
     "Unknown binning (--binning) 'equal_mass'. Did you mean 'equal-mass'? Choices: equal-mass, equal-width."),
    (["reliability", "{preds}", "--split", "tset"],
     "Unknown split (--split) 'tset'. Did you mean 'test'? Choices: test, val."),
    (["reliability", "{preds}", "--bands", "bootstap"],
     "Unknown band kind (--bands) 'bootstap'. Did you mean 'bootstrap'? Choices: bootstrap, consistency, none."),
    (["curves", "{tmp}", "--split", "vall"],
     "Unknown split (--split) 'vall'. Did you mean 'val'? Choices: auto, test, val."),
    (["reliabilty", "{preds}"], "Unknown plot kind 'reliabilty'. Did you mean 'reliability'? Choices: "
                                "conformal, correspondence, curves, gamma, reliability, risk-coverage, roc, shift."),
    (["nope", "{preds}"], "Unknown plot kind 'nope'. Choices: conformal, correspondence, curves, gamma, "
                          "reliability, risk-coverage, roc, shift."),
])
def test_unknown_names_in_plot_options(calibrated, tmp_path, args, expected):
    args = [a.format(preds=calibrated["preds"], tmp=tmp_path) for a in args]
    message = _error(tmp_path, *args)
    assert message.startswith(f"Error: {expected}"), message
    assert list(tmp_path.iterdir()) == []


def _ood_report(tmp_path):
    from adacal.reports import make_report, write_json

    roc = {"auroc": 0.8, "aupr_in": 0.7, "aupr_out": 0.7, "fpr_at_95_tpr": 0.4,
           "roc": {"fpr": [0.0, 0.2, 1.0], "tpr": [0.0, 0.7, 1.0]}}
    results = {"in": {"name": "digits", "n": 10}, "out": {"name": "noise", "n": 10}, "temperature": 1.2,
               "temperature_source": "fitted", "scores": {"entropy": {"pre": roc, "post": roc}}}
    path = tmp_path / "reports" / "ood.json"
    path.parent.mkdir()
    write_json(path, make_report("ood", config={}, results=results))
    return path


def test_roc_score_typo_suggests_and_a_missing_known_score_says_what_is_there(tmp_path):
    report = _ood_report(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    message = _error(out, "roc", report, "--score", "maxprob")
    assert message == "Error: Unknown OOD score (--score) 'maxprob'. Did you mean 'max-prob'? Choices: energy, " \
                      "entropy, max-prob."
    message = _error(out, "roc", report, "--score", "energy")
    assert "Expected OOD score 'energy'" in message and "it has: entropy" in message
    assert list(out.iterdir()) == []


def test_python_api_names_suggest_too():
    probs, labels = _tied("partial")
    with pytest.raises(UnknownNameError, match=re.escape("Unknown strategy 'quantiles'. Did you mean 'quantile'?")):
        plots.reliability(probs, labels, strategy="quantiles")
    with pytest.raises(UnknownNameError, match=re.escape("Did you mean 'test'?")):
        plots.training_curves({"a": [[{"epoch": 1}]]}, split="tests")
    with pytest.raises(UnknownNameError, match=re.escape("Did you mean 'entropy'?")):
        plots.roc_curves([("a", {"scores": {"entropy": {}}})], score="entropi")
    with pytest.raises(UnknownNameError, match=re.escape("Did you mean 'val'?")):
        plots.reliability_inputs(plots.ReliabilityRequest(["x.npz"], split="VAL "))


def test_cli_same_input_twice_with_calibrated_is_one_input(calibrated, tmp_path, saved_figures):
    preds = calibrated["preds"]
    result = runner.invoke(app, ["plot", "reliability", str(preds), str(preds), "--calibrated",
                                 str(calibrated["report"]), "--out", str(tmp_path / "c.png"), "--dpi", "30"])
    assert result.exit_code == 0, result.output
    (fig,) = saved_figures
    assert len([a for a in fig.axes if a.get_label().startswith("reliability:")]) == 2  # the input and calibrated
