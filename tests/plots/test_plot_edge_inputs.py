"""Plots on inputs nobody had tried: a one-panel AdaFocal figure, a one-epoch run, a bin filled at one update only,
--bins with non-ASCII digits, --split val on an evaluate.json, --method without --calibrated, and the library's
drawing functions given malformed in-memory inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal import plots
from adacal.cli import app
from adacal.commands.plot import parse_bins
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics
from adacal.plots.style import figure_style, isolated_points
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json
from cli_helpers import one_line_error, runner

M = 4


def _update(edges, gammas, confidence, accuracy, counts):
    return {"edges": list(map(float, edges)), "gammas": list(map(float, gammas)),
            "val_confidence": list(map(float, confidence)), "val_accuracy": list(map(float, accuracy)),
            "counts": list(map(int, counts))}


def _history(epochs, updates_per_epoch=1, seed=0, empty_bin=None, filled_at=None):
    """An AdaFocal history; bin `empty_bin` has validation samples only at update number `filled_at` (0-based)."""
    rng = np.random.default_rng(seed)
    records, k = [], 0
    for epoch in range(1, epochs + 1):
        updates = []
        for _ in range(updates_per_epoch):
            edges = np.concatenate([[0.0], np.sort(rng.uniform(0.3, 0.95, M - 1)), [1.0]])
            confidence = (edges[:-1] + edges[1:]) / 2
            counts = np.full(M, 20)
            if empty_bin is not None and k != filled_at:
                counts[empty_bin] = 0
            updates.append(_update(edges, rng.uniform(0.5, 3.0, M), confidence, confidence - 0.05, counts))
            k += 1
        metrics = {"error": float(rng.uniform(0.1, 0.5)), "ece_em": float(rng.uniform(0.01, 0.1))}
        records.append({"epoch": epoch, "val": metrics, "adafocal": {
            "updates": updates, "train_confidence": (confidence + 0.01).tolist(), "train_counts": [50] * M}})
    return records


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with figure_style():
        fig.canvas.draw()
    return fig.canvas.get_renderer()


def _axes(fig, label):
    (ax,) = [a for a in fig.axes if a.get_label() == label]
    return ax


def _line(ax, label):
    (line,) = [line for line in ax.get_lines() if line.get_label() == label]
    return line


def _marked(line):
    """Indices of the points of `line` that carry a marker."""
    if line.get_marker() in (None, "None", "", " "):
        return []
    every = line.get_markevery()
    n = len(line.get_xdata())
    return list(range(n)) if every is None else sorted(int(i) for i in every)


# ------------------------------------------------------------------------------------------- one panel fits


@pytest.mark.parametrize("draw", [plots.gamma_dynamics, plots.correspondence])
@pytest.mark.parametrize("bins", [[0], [1, 2]])
def test_a_figure_of_one_or_two_bins_holds_its_whole_title_and_legend(draw, bins):
    fig = draw(_history(3), bins)
    renderer = _drawn(fig)
    width = fig.bbox.width
    for artist in (fig._suptitle, *fig.legends):
        box = artist.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width, (artist, box, width)  # was cut off at both edges with one panel


def test_a_run_of_one_bin_draws_a_readable_figure():
    rng = np.random.default_rng(1)
    records = [{"epoch": e, "adafocal": {"updates": [_update([0, 1], [rng.uniform(1, 2)], [0.7], [0.6], [50])],
                                         "train_confidence": [0.72], "train_counts": [80]}} for e in (1, 2)]
    for draw in (plots.gamma_dynamics, plots.correspondence):
        fig = draw(records)
        renderer = _drawn(fig)
        assert fig.legends[0].get_window_extent(renderer).x1 <= fig.bbox.width
        assert fig._suptitle.get_window_extent(renderer).x0 >= 0


# ------------------------------------------------------------------------------- every value is drawn


def test_a_one_epoch_run_shows_every_value_and_ticks_its_epoch():
    history = _history(1)
    update = history[0]["adafocal"]["updates"][0]
    fig = plots.correspondence(history)
    _drawn(fig)
    for b in range(M):
        ax = _axes(fig, f"confidence:bin-{b}")
        for name, key in ((r"$C_{val}$", "val_confidence"), (r"$A_{val}$", "val_accuracy")):
            line = _line(ax, name)
            assert line.get_ydata()[0] == pytest.approx(update[key][b])
            assert _marked(line) == [0]  # one point of a line without markers drew nothing before
        (bar,) = [c for c in ax.collections if c.get_gid() == "boundaries"]  # a band one update wide has no area
        (segment,) = bar.get_segments()
        assert segment[:, 1].tolist() == pytest.approx([update["edges"][b], update["edges"][b + 1]])
        assert [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]] == [1.0]

    fig = plots.gamma_dynamics(history)
    _drawn(fig)
    edge_ax = _axes(fig, "edges:bin-0")
    (bar,) = [c for c in edge_ax.collections if c.get_gid() == "boundaries"]
    assert bar.get_segments()[0][:, 1].tolist() == pytest.approx(update["edges"][:2])
    assert _marked(_line(_axes(fig, "gamma:bin-0"), r"$\gamma_t$")) == [0]


def test_a_bin_filled_at_one_update_of_many_is_marked_there():
    # 3 epochs × 8 updates = 24 points: lines carry no markers, so a value between two gaps was invisible
    history = _history(3, updates_per_epoch=8, empty_bin=2, filled_at=10)
    fig = plots.gamma_dynamics(history, [1, 2])
    error = _line(_axes(fig, "error:bin-2"), r"$E_{val,i} = C_{val,i} - A_{val,i}$")
    assert np.flatnonzero(np.isfinite(error.get_ydata())).tolist() == [10]
    assert _marked(error) == [10]
    assert _marked(_line(_axes(fig, "error:bin-1"), r"$E_{val,i} = C_{val,i} - A_{val,i}$")) == []  # no gaps: none

    fig = plots.correspondence(history, [2])
    ax = _axes(fig, "confidence:bin-2")
    assert _marked(_line(ax, r"$C_{val}$")) == [10] and _marked(_line(ax, r"$A_{val}$")) == [10]


@pytest.mark.parametrize("values", [[1.0], [np.nan], [1, np.nan, 2], [1, 2, np.nan, 3, np.nan, np.nan, 4, 5],
                                    [np.nan, 1, np.nan], [np.inf, 1, 2], []])
def test_isolated_points_are_those_a_line_cannot_draw(values):
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    expected = [i for i in range(values.size)
                if finite[i] and not (i > 0 and finite[i - 1]) and not (i + 1 < values.size and finite[i + 1])]
    assert isolated_points(values).tolist() == expected


def test_epoch_axes_tick_whole_epochs_only():
    runs = {"CE": [[{"epoch": e, "val": {"error": 0.5 / e, "ece_em": 0.1}} for e in (1, 2, 3)]]}
    fig = plots.training_curves(runs)
    _drawn(fig)
    for ax in fig.axes:
        low, high = ax.get_xlim()
        shown = [t for t in ax.get_xticks() if low <= t <= high]
        assert shown and all(float(t).is_integer() for t in shown), shown  # was 1.00, 1.25, 1.50, ...
    fig = plots.training_curves({"CE": [runs["CE"][0][:1]]})  # one epoch: that epoch, ticked
    _drawn(fig)
    low, high = fig.axes[0].get_xlim()
    assert [t for t in fig.axes[0].get_xticks() if low <= t <= high] == [1.0]


# -------------------------------------------------------------------------------------- CLI refusals


def _run(root):
    run = root / "ada"
    run.mkdir()
    write_json(run / "config.json", make_report("train-config", config={"loss": "adafocal", "seed": 0}, results={}))
    (run / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _history(2)))
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 90)
    logits = rng.normal(size=(90, 3))
    save_split_predictions(run / "predictions.npz", val=Predictions(logits[:30], labels[:30]),
                           test=Predictions(logits, labels))
    confidences = np.exp(logits).max(axis=1) / np.exp(logits).sum(axis=1)
    stats = bin_statistics(confidences, logits.argmax(axis=1) == labels, n_bins=15)
    write_json(run / "evaluate.json", make_report("evaluate", config={}, results={
        "bins": {"equal_width": stats.to_dict()}}))
    return run


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_bins_with_digits_other_than_ascii_are_a_one_line_error(tmp_path):
    assert parse_bins("+2, 0") == [2, 0]
    for text in ("²", "1,²", "١", "０"):  # str.isdigit() admits them; int() raised ValueError with a traceback
        with pytest.raises(InputError, match="--bins"):
            parse_bins(text)
    run = _run(tmp_path)
    before = _files(tmp_path)
    for kind in ("gamma", "correspondence"):
        one_line_error(runner.invoke(app, ["plot", kind, str(run), "--bins", "²", "--out", str(tmp_path / "g.png")]),
                       "Expected --bins to be comma-separated bin indices")
    assert _files(tmp_path) == before


def test_split_val_of_an_evaluate_report_is_refused(tmp_path):
    run = _run(tmp_path)
    before = _files(tmp_path)
    result = runner.invoke(app, ["plot", "reliability", str(run / "evaluate.json"), "--split", "val",
                                 "--out", str(tmp_path / "r.png")])
    one_line_error(result, "holds bin statistics of the test split; --split val")  # drew the test bins before
    assert _files(tmp_path) == before
    result = runner.invoke(app, ["plot", "reliability", str(run / "evaluate.json"), "--out", str(tmp_path / "r.png"),
                                 "--dpi", "20"])
    assert result.exit_code == 0, result.output


def test_method_without_calibrated_is_refused(tmp_path):
    run = _run(tmp_path)
    before = _files(tmp_path)
    result = runner.invoke(app, ["plot", "reliability", str(run), "--method", "temperature",
                                 "--out", str(tmp_path / "r.png")])
    one_line_error(result, "Expected --calibrated with --method temperature")  # was silently ignored
    assert _files(tmp_path) == before


# --------------------------------------------------------------------------- the library's own inputs


def test_a_single_path_is_one_input_not_its_characters(tmp_path):
    run = _run(tmp_path)
    assert plots.curve_inputs(str(run)).runs == plots.curve_inputs([run]).runs
    (panel,) = plots.reliability_inputs(plots.ReliabilityRequest(str(run / "predictions.npz")))
    assert panel.stats.counts.sum() == 90


_HISTORY = _history(2)
_ROC = {"pre": {"roc": {"fpr": [0.0, 1.0], "tpr": [0.0, 1.0]}}}


@pytest.mark.parametrize("call, expected", [
    (lambda: plots.training_curves([("CE", [_HISTORY])]), "Expected runs to map"),
    (lambda: plots.training_curves({"CE": []}), "non-empty list of training histories"),
    (lambda: plots.training_curves({"CE": [{"epoch": 1}]}), "list of epoch records"),
    (lambda: plots.training_curves({"CE": [[{"val": {"error": 0.1, "ece_em": 0.1}}]]}), "integer 'epoch'"),
    (lambda: plots.training_curves({"CE": [[{"epoch": "1", "val": {"error": 0.1, "ece_em": 0.1}}]]}),
     "integer 'epoch'"),
    (lambda: plots.training_curves({"CE": [[None]]}), "history record 1 to be a dict"),
    (lambda: plots.training_curves({"CE": [[{"epoch": 1, "val": {"error": "x", "ece_em": 0.1}}]]}),
     "val.error of history record 1"),
    (lambda: plots.curve_notes({"CE": [[{"val": {}}], [{"val": {}}]]}), "integer 'epoch'"),
    (lambda: plots.gamma_dynamics(None), "list of epoch records"),
    (lambda: plots.gamma_dynamics([{"adafocal": _HISTORY[0]["adafocal"]}]), "integer 'epoch'"),
    (lambda: plots.gamma_dynamics(_HISTORY, 3), "list of bin indices"),
    (lambda: plots.correspondence(_HISTORY, "0,1"), "list of bin indices"),
    (lambda: plots.roc_curves([("a", [1, 2])]), "to be a dict"),
    (lambda: plots.roc_curves([("a", {"scores": {"entropy": {}}})]), "hold a ROC curve"),
    (lambda: plots.roc_curves([("a", {"scores": {"entropy": [_ROC]}})]), "hold a ROC curve"),
    (lambda: plots.roc_curves(["a"]), "RocInput or \\(label, results\\)"),
    (lambda: plots.roc_curves(None), "list of OOD reports"),
    (lambda: plots.reliability_diagram(None), "list of reliability panels"),
])
def test_malformed_inputs_from_python_are_input_errors(call, expected):
    with pytest.raises(InputError, match=expected):
        call()


def test_well_formed_inputs_still_draw():
    plots.roc_curves([("a", {"scores": {"entropy": _ROC}})])
    plots.gamma_dynamics(_HISTORY, np.array([0, 3]))
    records = [{"epoch": np.int64(e), "val": {"error": np.float32(0.2), "ece_em": None}} for e in (1, 2)]
    plots.training_curves({"CE": [records]})
