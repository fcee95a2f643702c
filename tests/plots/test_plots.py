"""adacal.plots: figures drawn from bin statistics and histories, checked through their artists (not pixels)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from adacal import plots
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics
from adacal.plots.style import percent_tick

M = 5  # validation bins in the synthetic AdaFocal history


def _confidences(n=400, seed=0):
    rng = np.random.default_rng(seed)
    confidences = rng.beta(5, 1.5, n)
    correct = (rng.random(n) < confidences ** 1.3).astype(float)
    return confidences, correct


def _history(epochs=4, m=M, seed=0, updates_per_epoch=1, adafocal=True, test=True):
    """History records following the run-folder schema, with values that differ per bin and epoch."""
    rng = np.random.default_rng(seed)
    records = []
    for epoch in range(1, epochs + 1):
        record = {
            "epoch": epoch,
            "lr": 0.1,
            "train": {"loss": 1.0 / epoch, "accuracy": 0.5 + 0.1 * epoch},
            "val": {"error": 0.4 / epoch + rng.random() * 0.01, "nll": 1.0, "ece_em": 0.1 / epoch, "ece_ew": 0.1},
        }
        if test:
            record["test"] = {"error": 0.5 / epoch + rng.random() * 0.02, "nll": 1.0,
                              "ece_em": 0.2 / epoch + rng.random() * 0.01, "ece_ew": 0.1}
        if adafocal:
            updates = []
            for _ in range(updates_per_epoch):
                inner = np.sort(rng.uniform(0.3, 0.99, m - 1))
                edges = np.concatenate([[0.0], inner, [1.0]])
                confidence = (edges[:-1] + edges[1:]) / 2
                updates.append({
                    "edges": edges.tolist(),
                    "gammas": rng.uniform(-2, 20, m).tolist(),
                    "val_confidence": confidence.tolist(),
                    "val_accuracy": np.clip(confidence - rng.normal(0, 0.05, m), 0, 1).tolist(),
                    "counts": [10] * m,
                })
            counts = [5] * m
            counts[-1] = 0 if epoch == 1 else 5
            record["adafocal"] = {"updates": updates, "train_confidence": rng.uniform(0.3, 1.0, m).tolist(),
                                  "train_counts": counts}
        records.append(record)
    return records


def _axes(fig, prefix):
    return [ax for ax in fig.axes if ax.get_label().startswith(prefix)]


# ------------------------------------------------------------------------------------------------ reliability


def _slow_ece(confidences, correct, edges):
    total = 0.0
    for i in range(len(edges) - 1):
        members = [k for k, c in enumerate(confidences) if (edges[i] < c or (i == 0 and c <= edges[1])) and
                   (c <= edges[i + 1] or i == len(edges) - 2)]
        if members:
            gap = abs(np.mean([confidences[k] for k in members]) - np.mean([correct[k] for k in members]))
            total += gap * len(members) / len(confidences)
    return total


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_reliability_bars_are_the_bin_statistics(binning):
    confidences, correct = _confidences()
    stats = bin_statistics(confidences, correct, n_bins=10, binning=binning)
    fig = plots.reliability_diagram([plots.ReliabilityPanel("AdaFocal", stats)])
    (ax,) = _axes(fig, "reliability:")
    (bars,) = [c for c in ax.containers if c.get_label() == "Accuracy"]
    heights = np.array([r.get_height() for r in bars.patches])
    lefts = np.array([r.get_x() for r in bars.patches])
    widths = np.array([r.get_width() for r in bars.patches])
    np.testing.assert_array_equal(heights, stats.accuracy)
    np.testing.assert_allclose(lefts, stats.edges[:-1], atol=1e-15)
    np.testing.assert_allclose(lefts + widths, stats.edges[1:], atol=1e-12)  # bars span their bin's edges
    (gaps,) = [c for c in ax.containers if c.get_label() == "Gap"]
    filled = stats.counts > 0
    np.testing.assert_allclose([r.get_y() for r in gaps.patches],
                               np.minimum(stats.accuracy, stats.mean_confidence)[filled])
    np.testing.assert_allclose([r.get_height() for r in gaps.patches], np.abs(stats.gaps)[filled])
    expected = 100 * _slow_ece(confidences.tolist(), correct.tolist(), stats.edges)
    name = "ECE-EW" if binning == "equal-width" else "ECE-EM"
    assert f"{name} {expected:.2f} %" in ax.get_title()


def test_reliability_panels_side_by_side_share_axes_and_colours():
    confidences, correct = _confidences()
    panels = [
        ("CE", bin_statistics(confidences ** 0.5, correct)),
        ("FLSD-53", bin_statistics(confidences, correct)),
        plots.ReliabilityPanel("AdaFocal", bin_statistics(confidences, correct),
                               histogram=(np.linspace(0, 1, 21), np.arange(20))),
    ]
    fig = plots.reliability_diagram(panels, title="CIFAR-10")
    main, hist = _axes(fig, "reliability:"), _axes(fig, "histogram:")
    assert len(main) == len(hist) == 3
    assert main[0].get_shared_y_axes().joined(main[0], main[2])
    assert main[0].get_shared_x_axes().joined(main[1], hist[1])
    colours = [ax.containers[0].patches[0].get_facecolor()[:3] for ax in main]
    from matplotlib.colors import to_rgb

    assert colours == [pytest.approx(to_rgb(plots.loss_color(n))) for n in ("ce", "flsd-53", "adafocal")]
    # the histogram shows the share of samples (%) of the given counts
    shares = [r.get_height() for r in hist[2].patches]
    np.testing.assert_allclose(shares, 100 * np.arange(20) / np.arange(20).sum())
    assert fig._suptitle.get_text() == "CIFAR-10"


def test_reliability_rejects_bad_panels():
    with pytest.raises(InputError, match="at least one"):
        plots.reliability_diagram([])
    with pytest.raises(InputError, match="reliability panel"):
        plots.reliability_diagram([("CE", [0.1, 0.2])])


# ---------------------------------------------------------------------------------------------------- AdaFocal


def test_gamma_panels_match_requested_bins_and_history_values():
    history = _history()
    fig = plots.gamma_dynamics(history, bins=[0, 2, 4])
    assert [ax.get_label() for ax in _axes(fig, "error:")] == ["error:bin-0", "error:bin-2", "error:bin-4"]
    assert len(_axes(fig, "gamma:")) == 3 and len(_axes(fig, "edges:")) == 3
    epochs = [r["epoch"] for r in history]
    for b in (0, 2, 4):
        (gamma_ax,) = _axes(fig, f"gamma:bin-{b}")
        (line,) = [ln for ln in gamma_ax.get_lines() if ln.get_label() == r"$\gamma_t$"]
        np.testing.assert_array_equal(line.get_xdata(), epochs)
        np.testing.assert_array_equal(line.get_ydata(), [r["adafocal"]["updates"][0]["gammas"][b] for r in history])
        (error_ax,) = _axes(fig, f"error:bin-{b}")
        curve = [ln for ln in error_ax.get_lines() if ln.get_label().startswith("$E")][0]
        expected = [100 * (u["val_confidence"][b] - u["val_accuracy"][b])
                    for u in (r["adafocal"]["updates"][0] for r in history)]
        np.testing.assert_allclose(curve.get_ydata(), expected)
        zero = [ln for ln in error_ax.get_lines() if ln.get_label() == "E = 0"][0]
        assert list(zero.get_ydata()) == [0, 0]


def test_gamma_default_is_every_bin_and_several_updates_spread_over_the_epoch():
    history = _history(epochs=2, updates_per_epoch=2)
    fig = plots.gamma_dynamics(history)
    assert len(_axes(fig, "error:")) == M
    (line,) = [ln for ln in _axes(fig, "gamma:bin-1")[0].get_lines() if ln.get_label() == r"$\gamma_t$"]
    np.testing.assert_allclose(line.get_xdata(), [0.5, 1.0, 1.5, 2.0])
    np.testing.assert_array_equal(
        line.get_ydata(), [u["gammas"][1] for r in history for u in r["adafocal"]["updates"]])


def test_gamma_has_its_own_axis_below_the_error_with_a_zero_line_only_when_negative():
    history = _history(epochs=3)
    for record, sign in zip(history, (1, -1, 1)):  # bin 0 goes negative (inverse focal) once, bin 1 never does
        record["adafocal"]["updates"][0]["gammas"][0] = sign * 0.2
        record["adafocal"]["updates"][0]["gammas"][1] = 2.0
    fig = plots.gamma_dynamics(history, bins=[0, 1])
    fig.draw_without_rendering()
    for b in (0, 1):
        error_ax, gamma_ax, edge_ax = (_axes(fig, f"{kind}:bin-{b}")[0] for kind in ("error", "gamma", "edges"))
        # stacked as in the paper's figure 5, not a twin axis whose zero would not line up with E = 0
        assert error_ax.get_position().y0 > gamma_ax.get_position().y1 - 1e-9
        assert gamma_ax.get_position().y0 > edge_ax.get_position().y1 - 1e-9
    zero_lines = {b: [ln for ln in _axes(fig, f"gamma:bin-{b}")[0].get_lines() if "gamma = 0" in ln.get_label()]
                  for b in (0, 1)}
    assert len(zero_lines[0]) == 1 and list(zero_lines[0][0].get_ydata()) == [0, 0]
    assert zero_lines[1] == []


@pytest.mark.parametrize("bins, match", [([0, M], rf"\[0, {M - 1}\], got {M}"), ([-1], "got -1"), ([], "at least one")])
def test_bins_out_of_range_are_input_errors(bins, match):
    with pytest.raises(InputError, match=match):
        plots.gamma_dynamics(_history(), bins=bins)


@pytest.mark.parametrize("draw", [plots.gamma_dynamics, plots.correspondence])
def test_runs_with_many_bins_draw_at_most_max_panels_evenly_spaced_and_say_so(draw):
    """A run trained with --n-bins 400 drew 400 panels (minutes, unreadable): now 30, first to last, named in the
    title; asking for more than 30 is refused."""
    from adacal.plots.adafocal import MAX_BIN_PANELS

    history = _history(epochs=2, m=400)
    fig = draw(history)
    prefix = "error:" if draw is plots.gamma_dynamics else "confidence:"
    drawn = sorted(int(ax.get_label().rsplit("-", 1)[1]) for ax in _axes(fig, prefix))
    assert len(drawn) == MAX_BIN_PANELS and drawn[0] == 0 and drawn[-1] == 399
    assert max(np.diff(drawn)) - min(np.diff(drawn)) <= 1  # evenly spaced
    assert fig._suptitle.get_text().endswith(f"({MAX_BIN_PANELS} of 400 bins)")
    assert "bins)" not in draw(_history(epochs=2))._suptitle.get_text()  # all bins drawn: nothing to say
    with pytest.raises(InputError, match=rf"at most {MAX_BIN_PANELS} bins \(one panel each\), got 31"):
        draw(history, bins=list(range(31)))


def test_many_reliability_diagrams_wrap_into_rows_and_too_many_are_refused():
    """Up to five diagrams a row; 40 inputs used to make one 20,000-pixel-wide strip."""
    from adacal.plots.reliability_diagrams import MAX_PANEL_COLUMNS, MAX_PANELS

    stats = bin_statistics(np.linspace(0.3, 1.0, 50), np.ones(50), n_bins=5)
    fig = plots.reliability_diagram([(f"model {k}", stats) for k in range(12)])
    fig.draw_without_rendering()
    boxes = [_axes(fig, f"reliability:{k}")[0].get_position() for k in range(12)]
    for k in range(12):
        row, column = divmod(k, MAX_PANEL_COLUMNS)
        assert np.isclose(boxes[k].x0, boxes[column].x0)  # same column as the first row's
        if row:
            assert boxes[k].y1 < boxes[k - MAX_PANEL_COLUMNS].y0  # below the row above
    assert fig.get_figwidth() < 20
    with pytest.raises(InputError, match=rf"at most {MAX_PANELS} reliability diagrams in one figure, got 61"):
        plots.reliability_diagram([("m", stats)] * (MAX_PANELS + 1))


def test_history_without_adafocal_is_an_input_error():
    with pytest.raises(InputError, match="AdaFocal"):
        plots.gamma_dynamics(_history(adafocal=False))
    with pytest.raises(InputError, match="AdaFocal"):
        plots.correspondence(_history(adafocal=False))


def test_correspondence_draws_train_and_validation_confidence():
    history = _history()
    fig = plots.correspondence(history, bins=[4, 1])
    assert [ax.get_label() for ax in _axes(fig, "confidence:")] == ["confidence:bin-4", "confidence:bin-1"]
    (ax,) = _axes(fig, "confidence:bin-4")
    lines = {line.get_label(): line for line in ax.get_lines()}
    train = np.array([r["adafocal"]["train_confidence"][4] for r in history])
    train[0] = np.nan  # no training sample fell into bin 4 in epoch 1
    np.testing.assert_array_equal(lines["$C_{train}$"].get_ydata(), train)
    np.testing.assert_array_equal(lines["$C_{val}$"].get_ydata(),
                                  [r["adafocal"]["updates"][0]["val_confidence"][4] for r in history])
    np.testing.assert_array_equal(lines["$A_{val}$"].get_ydata(),
                                  [r["adafocal"]["updates"][0]["val_accuracy"][4] for r in history])


def test_history_file_errors_name_the_line(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"epoch": 1}) + "\n{not json\n")
    with pytest.raises(InputError, match="line 2"):
        plots.load_history(path)
    with pytest.raises(InputError, match="does not exist"):
        plots.load_history(tmp_path / "missing.jsonl")


# ------------------------------------------------------------------------------------------- training curves


def test_curves_mean_and_std_band_match_numpy():
    seeds = [_history(epochs=5, seed=s, adafocal=False) for s in range(3)]
    single = [_history(epochs=5, seed=9)]
    fig = plots.training_curves({"AdaFocal": single, "CE": seeds}, losses={"AdaFocal": "adafocal", "CE": "ce"})
    for metric in ("error", "ece_em"):
        values = np.array([[r["test"][metric] for r in h] for h in seeds])
        mean, std = values.mean(axis=0), values.std(axis=0)
        (ax,) = _axes(fig, f"curves:{metric}")
        lines = {line.get_label(): line for line in ax.get_lines()}
        np.testing.assert_allclose(lines["CE (mean ± std, 3 seeds)"].get_ydata(), 100 * mean)
        np.testing.assert_allclose(lines["AdaFocal"].get_ydata(), [100 * r["test"][metric] for r in single[0]])
        assert lines["CE (mean ± std, 3 seeds)"].get_color() == plots.loss_color("ce")
        (band,) = [c for c in ax.collections if c.get_gid() == "band:CE"]
        vertices = band.get_paths()[0].vertices
        for epoch, m, s in zip(range(1, 6), mean, std):
            ys = vertices[np.isclose(vertices[:, 0], epoch), 1]
            assert ys.min() == pytest.approx(100 * (m - s)) and ys.max() == pytest.approx(100 * (m + s))
        assert "Test" in ax.get_ylabel() and "(%)" in ax.get_ylabel()


def test_curves_fall_back_to_validation_and_align_epochs():
    short, long = _history(epochs=3, test=False, adafocal=False), _history(epochs=5, seed=1, adafocal=False)
    summary = plots.summarize_curve([short, long], "val", "error")
    np.testing.assert_array_equal(summary.epochs, [1, 2, 3])
    fig = plots.training_curves({"CE": [short, long]})
    assert _axes(fig, "curves:error")[0].get_ylabel() == "Validation error (%)"
    with pytest.raises(InputError, match="split"):
        plots.training_curves({"CE": [short]}, split="train")


# -------------------------------------------------------------------------------------------------------- ROC


def _ood_results(auroc=0.6171, post=True):
    fpr = np.linspace(0, 1, 11)
    entry = lambda a, p: {"auroc": a, "aupr_in": 0.5, "aupr_out": 0.5, "fpr_at_95_tpr": 0.9,  # noqa: E731
                          "roc": {"fpr": fpr.tolist(), "tpr": (fpr ** p).tolist()}}
    return {"in": {"name": "cifar10", "n": 100}, "out": {"name": "svhn", "n": 100}, "temperature": 1.5,
            "temperature_source": "fitted",
            "scores": {"entropy": {"pre": entry(auroc, 0.8), "post": entry(0.9, 0.3) if post else None}}}


def test_roc_curves_plot_the_report_and_auroc_in_legend():
    fig = plots.roc_curves([plots.RocInput("CE", _ood_results(), "ce"), ("AdaFocal", _ood_results(0.9609, post=False))])
    (ax,) = _axes(fig, "roc")
    lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
    assert set(lines) == {"roc:CE:pre", "roc:CE:post", "roc:AdaFocal:pre"}
    np.testing.assert_allclose(lines["roc:CE:pre"].get_ydata(), np.linspace(0, 1, 11) ** 0.8)
    assert "AUROC 61.71 %" in lines["roc:CE:pre"].get_label()
    assert "T = 1.50" in lines["roc:CE:post"].get_label()
    assert lines["roc:CE:post"].get_linestyle() == "--"
    assert lines["roc:AdaFocal:pre"].get_color() == plots.loss_color("adafocal")
    with pytest.raises(InputError, match="energy"):
        plots.roc_curves([("CE", _ood_results())], score="energy")


def test_roc_curves_of_the_same_loss_differ_by_marker():
    fig = plots.roc_curves([plots.RocInput(f"AdaFocal (seed {s})", _ood_results(), "adafocal") for s in (0, 1)]
                           + [plots.RocInput("CE", _ood_results(), "ce")])
    lines = {line.get_gid(): line for line in _axes(fig, "roc")[0].get_lines() if line.get_gid()}
    seed0, seed1 = lines["roc:AdaFocal (seed 0):pre"], lines["roc:AdaFocal (seed 1):pre"]
    assert seed0.get_color() == seed1.get_color() == plots.loss_color("adafocal")
    assert seed0.get_marker() in ("", "None", None) and seed1.get_marker() not in ("", "None", None)
    assert lines["roc:CE:pre"].get_marker() in ("", "None", None)


# ------------------------------------------------------------------------------------------------ saving


@pytest.fixture(scope="module")
def small_figure_factory():
    confidences, correct = _confidences(n=100)
    return lambda: plots.reliability_diagram([("CE", bin_statistics(confidences, correct, n_bins=5))])


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml"), (".pdf", b"%PDF-")])
def test_save_figure_is_deterministic(tmp_path, small_figure_factory, suffix, magic):
    first = plots.save_figure(small_figure_factory(), tmp_path / f"a{suffix}", dpi=40)
    second = plots.save_figure(small_figure_factory(), tmp_path / f"b{suffix}", dpi=40)
    assert first.read_bytes().startswith(magic)
    assert first.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a{suffix}", f"b{suffix}"]  # no temp files left


def test_save_figure_pdf_has_no_timestamp(tmp_path, small_figure_factory):
    data = plots.save_figure(small_figure_factory(), tmp_path / "a.PDF").read_bytes()
    assert data.startswith(b"%PDF-") and b"CreationDate" not in data


def test_save_figure_rejects_unknown_extension_and_bad_dpi(tmp_path, small_figure_factory):
    with pytest.raises(InputError, match=r"\.png, \.svg or \.pdf, got '\.jpg'"):
        plots.save_figure(small_figure_factory(), tmp_path / "x.jpg")
    with pytest.raises(InputError, match="--dpi"):
        plots.save_figure(small_figure_factory(), tmp_path / "x.png", dpi=0)
    assert list(tmp_path.iterdir()) == []


def _all_figures():
    confidences, correct = _confidences()
    return {
        "reliability": plots.reliability_diagram([("CE", bin_statistics(confidences, correct)),
                                                  ("AdaFocal", bin_statistics(confidences, correct))]),
        "gamma": plots.gamma_dynamics(_history(), bins=[0, 2, 4]),
        "correspondence": plots.correspondence(_history(), bins=[0, 2, 4]),
        "curves": plots.training_curves({"CE": [_history(seed=s) for s in range(2)], "AdaFocal": [_history()]},
                                        losses={"CE": "ce", "AdaFocal": "adafocal"}),
        "roc": plots.roc_curves([plots.RocInput("CE", _ood_results(), "ce"),
                                 plots.RocInput("AdaFocal", _ood_results(0.9), "adafocal")]),
    }


def test_probability_axes_are_labelled_and_ticked_in_percent():
    figures = _all_figures()
    percent_axes = {
        "reliability": [("reliability:0", "y"), ("histogram:0", "x")],
        "gamma": [("edges:bin-0", "y")],
        "correspondence": [("confidence:bin-0", "y")],
        "roc": [("roc", "x"), ("roc", "y")],
    }
    for name, wanted in percent_axes.items():
        for label, which in wanted:
            (ax,) = _axes(figures[name], label)
            axis = ax.xaxis if which == "x" else ax.yaxis
            assert "(%)" in axis.get_label().get_text(), (name, label, which)
            assert axis.get_major_formatter()(0.975, 0) == "97.5", (name, label, which)  # data stay fractions
    for ax in _axes(figures["curves"], "curves:"):
        assert ax.get_ylabel().endswith("(%)")
    assert percent_tick(0.2) == "20" and percent_tick(-0.005) == "-0.5"
    assert percent_tick(0.6000000000000001) == "60" and percent_tick(1e-17) == "0"


def test_legends_sit_outside_every_axes():
    for name, fig in _all_figures().items():
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        assert fig.legends, name
        for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
            box = legend.get_window_extent(renderer)
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent(renderer)), (name, ax.get_label())


def test_colours_are_fixed_per_loss_and_distinct():
    assert plots.loss_color("AdaFocal") == plots.loss_color("adafocal") == plots.LOSS_COLORS["adafocal"]
    assert plots.loss_color("Label smoothing") == plots.LOSS_COLORS["label-smoothing"]
    assert len(set(plots.LOSS_COLORS.values())) == len(plots.LOSS_COLORS)
    assert plots.loss_color("my-loss") == plots.loss_color("my-loss")
    assert plots.display_name("flsd-53") == "FLSD-53" and plots.display_name("mine") == "mine"


def test_importing_plots_does_not_import_matplotlib():
    code = "import sys, adacal.plots, adacal.cli; sys.exit('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
