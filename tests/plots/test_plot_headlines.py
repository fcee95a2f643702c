"""Figures that say what the numbers say (#32 item 2): reliability titles headline ECE-EM exactly as `adacal evaluate`
prints it, the smoothed curve stays where samples lie and looks nothing like the overall-accuracy line, and ROC
figures say where their OOD set came from. Checked through the figures' artists, not pixels."""

import re

import numpy as np
import pytest

from adacal import plots
from adacal.cli import app
from adacal.metrics import smooth_reliability
from adacal.metrics.binning import bin_statistics
from adacal.ood import detect_ood
from adacal.ood.scores import ood_report
from adacal.plots.bands import smooth_coverage
from adacal.plots.reliability_diagrams import SMOOTH_LEGEND
from adacal.plots.reliability_panels import ReliabilityPanel, panel_from_scores
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json
from cli_helpers import one_line_error, runner


def _preds(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), labels] += 1.0
    save_split_predictions(path, val=Predictions(logits[:100], labels[:100]), test=Predictions(logits, labels))
    return path


def _printed(args):
    """ECE-EM and ECE-EW as `adacal evaluate` prints them in its table (text, % with its rounding)."""
    result = runner.invoke(app, ["evaluate", *map(str, args)])
    assert result.exit_code == 0, result.output
    return tuple(re.search(rf"{name}\s*│\s*([0-9.]+)\s*│", result.stdout).group(1) for name in ("ECE-EM", "ECE-EW"))


def _plot(args, saved_figures):
    result = runner.invoke(app, ["plot", *map(str, args)])
    assert result.exit_code == 0, result.output
    return saved_figures[-1]


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.get_label().startswith("reliability:")]


def _headline(title):
    """The ECE line of a panel title: ECE-EM first, ECE-EW beside it."""
    line = next(line for line in title.splitlines() if line.startswith("ECE-"))
    match = re.fullmatch(r"ECE-EM ([0-9.]+) % · ECE-EW ([0-9.]+) %( · .*)?", line)
    assert match, line
    return match.group(1), match.group(2)


# --------------------------------------------------------------------------------- titles = evaluate's numbers


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
@pytest.mark.parametrize("n_bins", [None, 10])
def test_a_panel_headlines_the_ece_em_evaluate_prints_for_the_same_file(tmp_path, saved_figures, binning, n_bins):
    preds = _preds(tmp_path / "p.npz")
    bins = [] if n_bins is None else ["--n-bins", n_bins]
    fig = _plot(["reliability", preds, "--binning", binning, *bins, "--out", tmp_path / "r.png", "--dpi", "30"],
                saved_figures)
    (title,) = _titles(fig)
    assert _headline(title) == _printed([preds, *bins])  # the same numbers, the same rounding, whatever the bars


def test_an_evaluate_json_panel_shows_the_ece_it_stores_and_the_calibrated_panel_evaluates_calibrator(
        tmp_path, saved_figures):
    preds = _preds(tmp_path / "p.npz")
    printed = _printed([preds, "--json", tmp_path / "evaluate.json"])
    fig = _plot(["reliability", tmp_path / "evaluate.json", "--out", tmp_path / "e.png", "--dpi", "30"], saved_figures)
    assert _headline(_titles(fig)[0]) == printed

    calibrator = tmp_path / "t.json"
    result = runner.invoke(app, ["calibrate", str(preds), "--method", "temperature", "--save", str(calibrator)])
    assert result.exit_code == 0, result.output
    fig = _plot(["reliability", preds, "--calibrated", calibrator, "--out", tmp_path / "c.png", "--dpi", "30"],
                saved_figures)
    before, after = _titles(fig)
    assert _headline(before) == printed
    assert _headline(after) == _printed([preds, "--calibrator", calibrator])


def test_an_evaluate_json_without_the_metrics_takes_them_from_its_bins_and_refuses_a_damaged_one(
        tmp_path, saved_figures):
    rng = np.random.default_rng(2)
    confidences = rng.uniform(0.4, 1.0, 200)
    correct = (rng.random(200) < confidences).astype(float)
    width, mass = (bin_statistics(confidences, correct, binning=b) for b in ("equal-width", "equal-mass"))
    bins = {"equal_width": width.to_dict(), "equal_mass": mass.to_dict()}
    path = tmp_path / "evaluate.json"
    write_json(path, make_report("evaluate", config={}, results={"bins": bins}))
    fig = _plot(["reliability", path, "--out", tmp_path / "r.png", "--dpi", "30"], saved_figures)
    from adacal.metrics.binning import calibration_error

    expected = (f"{100 * calibration_error(mass):.2f}", f"{100 * calibration_error(width):.2f}")
    assert _headline(_titles(fig)[0]) == expected
    write_json(path, make_report("evaluate", config={}, results={"bins": bins, "metrics": {"ece_em": 7.5}}))
    one_line_error(runner.invoke(app, ["plot", "reliability", str(path), "--out", str(tmp_path / "s.png")]),
                   "results.metrics.ece_em", "fraction in [0, 1]")


def test_a_panel_of_bins_alone_names_the_ece_of_its_bins_and_ece_em_always_leads():
    rng = np.random.default_rng(3)
    confidences = rng.uniform(0.4, 1.0, 300)
    correct = (rng.random(300) < confidences).astype(float)
    width = bin_statistics(confidences, correct)
    fig = plots.reliability_diagram([ReliabilityPanel("EW only", width)])
    assert _titles(fig)[0].splitlines()[1].startswith("ECE-EW ")  # nothing to headline but what its bins give
    fig = plots.reliability_diagram([ReliabilityPanel("given", width, ece_em=0.01234, ece_ew=0.5)])
    assert _headline(_titles(fig)[0]) == ("1.23", "50.00")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Accuracy (15 equal-width bins)" in legend  # the titles name two binnings: the bars say theirs


# ------------------------------------------------------------------------------------------ the smoothed curve


def _smooth_line(fig_or_ax):
    axes = fig_or_ax.axes if hasattr(fig_or_ax, "legends") else [fig_or_ax]
    return next(line for ax in axes for line in ax.get_lines() if line.get_gid() == "smooth")


def test_the_smoothed_curve_is_drawn_only_over_the_confidences_the_samples_cover():
    rng = np.random.default_rng(4)
    # top-1 confidences in two clusters with nothing between them: 0.55–0.6 and 0.9–0.98
    confidences = np.concatenate([rng.uniform(0.55, 0.6, 150), rng.uniform(0.9, 0.98, 250)])
    probs = np.stack([confidences, 1 - confidences], axis=1)
    labels = (rng.random(confidences.size) > confidences).astype(int)
    panel = panel_from_scores(probs, labels, smooth=True)
    sigma = panel.smooth.bandwidth
    assert 0.3 > 4 * sigma  # the empty stretch is wider than the curve may bridge
    line = _smooth_line(plots.reliability_diagram([panel]))
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    drawn = np.isfinite(y)
    step = np.diff(x).max()
    assert x[drawn].min() >= confidences.min() - step and x[drawn].max() <= confidences.max() + step
    assert not drawn[(x > 0.6 + 2 * sigma + step) & (x < 0.9 - 2 * sigma - step)].any()
    assert drawn[(x > 0.56) & (x < 0.59)].all() and drawn[(x > 0.91) & (x < 0.97)].all()
    expected = smooth_reliability(probs, labels)  # where it is drawn, it is the metric's curve
    np.testing.assert_allclose(y[drawn], expected.curve[drawn], atol=1e-12)


def test_a_panel_built_without_samples_draws_its_curve_over_the_bins_that_hold_samples():
    confidences = np.linspace(0.61, 0.89, 100)
    correct = (np.arange(100) % 4 != 0).astype(float)
    stats = bin_statistics(confidences, correct, n_bins=10)
    curve = smooth_reliability(np.stack([confidences, 1 - confidences], axis=1), np.zeros(100, dtype=int))
    line = _smooth_line(plots.reliability_diagram([ReliabilityPanel("m", stats, smooth=curve)]))
    x, drawn = np.asarray(line.get_xdata()), np.isfinite(line.get_ydata())
    assert x[drawn].min() >= 0.6 - 0.01 and x[drawn].max() <= 0.9 + 0.01  # bins 6, 7 and 8: [0.6, 0.9]


def test_smooth_coverage_breaks_only_across_stretches_wider_than_four_bandwidths():
    grid = np.linspace(0, 1, 201)
    covered = smooth_coverage(grid, [0.2, 0.25, 0.3, 0.7], bandwidth=0.02)
    assert covered[(grid >= 0.2) & (grid <= 0.3)].all()  # 0.05 apart: within 2σ of a sample everywhere
    assert not covered[(grid > 0.35) & (grid < 0.65)].any() and covered[np.isclose(grid, 0.7)].all()
    assert not covered[grid < 0.2 - 0.0025].any() and not covered[grid > 0.7 + 0.0025].any()
    assert smooth_coverage(grid, [0.5] * 10, bandwidth=0.02).sum() == 1  # all tied: one point, drawn as a marker


@pytest.mark.parametrize("given_ax", [False, True])
def test_the_smoothed_line_and_the_overall_accuracy_line_look_different_and_the_legend_says_which(given_ax):
    from matplotlib.colors import to_rgb

    rng = np.random.default_rng(5)
    logits = rng.normal(size=(300, 4)) * 2
    labels = rng.integers(0, 4, 300)
    if given_ax:
        from matplotlib.figure import Figure

        display = plots.reliability(logits, labels, ax=Figure().add_subplot(), smooth=True)
        legend = display.ax.get_legend()
        assert any(t.get_text().startswith("Smoothed (smECE") for t in legend.get_texts())
        return
    display = plots.reliability(logits, labels, smooth=True)
    smooth = _smooth_line(display.ax)
    (accuracy,) = [line for line in display.histogram_ax.get_lines() if line.get_gid() == "overall-accuracy"]
    assert smooth.get_linestyle() == "-" and accuracy.get_linestyle() == "-."
    assert to_rgb(smooth.get_color()) != to_rgb(accuracy.get_color())
    assert smooth.get_linewidth() > accuracy.get_linewidth()
    legend = display.figure.legends[0]
    entries = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles))
    assert entries[SMOOTH_LEGEND].get_linestyle() == "-" and entries["Overall accuracy"].get_linestyle() == "-."


# ------------------------------------------------------------------------------------ ROC: where the OOD set is from


def _ood_report(path, *, out_name="cifar10-c gaussian_noise s5", config=None, seed=0):
    rng = np.random.default_rng(seed)
    results = detect_ood(3 * rng.normal(size=(40, 4)), rng.normal(size=(30, 4)), scores=("entropy",),
                         temperature=1.5, temperature_source="option", in_name="cifar10", out_name=out_name)
    write_json(path, ood_report(results, config=config or {}))
    return path


@pytest.mark.parametrize("source, said", [
    ("generated", "generated by adacal with cifar severities"),  # a report from before tables were recorded
    ("hendrycks-files", "read from Hendrycks' files"),
    ("dataset", "the dataset's test split"),
    ("file", "inputs read from a file"),
    (None, "source not recorded"),
])
def test_the_roc_title_says_where_the_ood_set_came_from(tmp_path, saved_figures, source, said):
    config = {"model": "runs/ce", "out": "cifar10-c", "corruption": "gaussian_noise", "severity": 5}
    if source is not None:
        config["out_source"] = source
    report = _ood_report(tmp_path / "ood.json", config=config)
    fig = _plot(["roc", report, "--out", tmp_path / "roc.png", "--dpi", "30"], saved_figures)
    (ax,) = [a for a in fig.axes if a.get_label() == "roc"]
    title = " ".join(ax.get_title().split())
    assert f"cifar10 → cifar10-c gaussian_noise s5, {said} (score: entropy)" in title


def test_roc_curves_of_differently_sourced_sets_say_each_source_in_the_legend(tmp_path):
    generated = _ood_report(tmp_path / "g.json", config={"model": "a", "out_source": "generated"})
    hendrycks = _ood_report(tmp_path / "h.json", config={"model": "a", "out_source": "hendrycks-files"}, seed=1)
    saved = _ood_report(tmp_path / "s.json", config={"model": None, "in_preds": "in.npz", "out_preds": "out.npz"},
                        seed=2)
    items = plots.roc_inputs([generated, hendrycks, saved], labels=["gen", "hend", "saved"])
    assert [item.source for item in items] == ["generated by adacal with cifar severities",
                                               "read from Hendrycks' files", "scored from saved outputs"]
    fig = plots.roc_curves(items)
    texts = [" ".join(t.get_text().split()) for t in fig.legends[0].get_texts()]
    assert any(text.startswith("gen (generated by adacal with cifar severities), pre-T") for text in texts)
    assert any(text.startswith("hend (read from Hendrycks' files), pre-T") for text in texts)
    assert any(text.startswith("saved (scored from saved outputs), pre-T") for text in texts)
    (ax,) = fig.axes
    assert "sources in the legend" in " ".join(ax.get_title().split())
    # a RocInput made by hand, without a report, says so too
    fig = plots.roc_curves([plots.RocInput("CE", items[0].results)])
    assert "source not recorded" in " ".join(fig.axes[0].get_title().split())
