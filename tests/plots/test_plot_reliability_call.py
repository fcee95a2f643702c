"""adacal.plots.reliability: the one-call figure draws what bin_statistics and the bands say, into a new figure or
a given axes; sparse bins are marked with their counts."""

import numpy as np
import pytest

from adacal import plots
from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics


def _calibrated(n=600, k=4, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    logits = scale * rng.normal(size=(n, k))
    probs = softmax(logits)
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    return logits, probs, labels


def _reference(probs, labels, n_bins, binning):
    return bin_statistics(probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float), n_bins=n_bins,
                          binning=binning)


def _bars(ax):
    (bars,) = [c for c in ax.containers if c.get_label() == "Accuracy"]
    return np.array([p.get_height() for p in bars.patches]), bars


@pytest.mark.parametrize("strategy, binning", [("equal-width", "equal-width"), ("equal-mass", "equal-mass"),
                                               ("uniform", "equal-width"), ("quantile", "equal-mass")])
@pytest.mark.parametrize("as_logits", [True, False])
def test_bars_equal_bin_statistics(strategy, binning, as_logits):
    logits, probs, labels = _calibrated()
    display = plots.reliability(logits if as_logits else probs, labels, n_bins=7, strategy=strategy)
    expected = _reference(probs, labels, 7, binning)
    heights, bars = _bars(display.ax)
    np.testing.assert_allclose(heights, expected.accuracy, atol=1e-12)
    np.testing.assert_allclose([p.get_x() for p in bars.patches], expected.edges[:-1], atol=1e-12)
    np.testing.assert_array_equal(display.stats.counts, expected.counts)
    assert display.ece == pytest.approx(np.sum(expected.weights * np.abs(expected.gaps)), abs=1e-12)
    assert display.ax.get_label() == "reliability:0" and display.histogram_ax.get_label() == "histogram:0"
    assert display.ax.figure is display.figure


def test_draws_into_a_given_axes_and_returns_its_figure():
    from matplotlib.figure import Figure

    logits, probs, labels = _calibrated()
    fig = Figure()
    ax = fig.add_subplot(1, 2, 2)
    display = plots.reliability(logits, labels, ax=ax, n_bins=5, label="mine", bands="bootstrap", band_samples=50)
    assert display.ax is ax and display.figure is fig and display.histogram_ax is None and len(fig.axes) == 1
    assert tuple(display) == (fig, ax)  # unpacks as fig, ax
    np.testing.assert_allclose(_bars(ax)[0], _reference(probs, labels, 5, "equal-width").accuracy, atol=1e-12)
    assert ax.get_title().startswith("mine\nECE-EM ") and " · ECE-EW " in ax.get_title()  # the CLI's headline first
    counts = {t.get_gid(): t.get_text() for t in ax.texts}
    # every bin that holds samples; empty bins carry no "n=0"
    assert counts == {f"count:bin-{i}": f"n={c}" for i, c in enumerate(display.stats.counts) if c > 0}


def test_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    logits, probs, labels = _calibrated()
    display = plots.reliability(torch.from_numpy(logits).float(), torch.from_numpy(labels), n_bins=5)
    np.testing.assert_allclose(_bars(display.ax)[0], _reference(probs, labels, 5, "equal-width").accuracy, atol=1e-6)


@pytest.mark.parametrize("kind", ["consistency", "bootstrap"])
def test_bands_are_drawn_where_the_band_function_puts_them(kind):
    logits, probs, labels = _calibrated()
    display = plots.reliability(logits, labels, n_bins=6, bands=kind, band_samples=80, band_level=0.8, seed=3)
    stats = display.stats
    confidences, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    expected = plots.reliability_bands(kind, confidences, correct, stats.edges, n_samples=80, level=0.8, seed=3)
    np.testing.assert_allclose(display.bands.lower, expected.lower, atol=1e-12)
    (segments,) = [c for c in display.ax.collections if c.get_gid() == f"band:{kind}"]
    shown = np.isfinite(expected.lower) & (stats.counts > 0)
    drawn = np.array(segments.get_segments())
    centres = (stats.edges[:-1] + stats.edges[1:]) / 2
    np.testing.assert_allclose(drawn[:, 0, 0], centres[shown], atol=1e-12)
    np.testing.assert_allclose(drawn[:, 0, 1], expected.lower[shown], atol=1e-12)
    np.testing.assert_allclose(drawn[:, 1, 1], expected.upper[shown], atol=1e-12)
    legend_texts = [t.get_text() for t in display.figure.legends[0].get_texts()]
    assert expected.description in legend_texts


def test_sparse_and_empty_bins_are_marked_with_their_counts():
    rng = np.random.default_rng(1)
    confidences = np.concatenate([rng.uniform(0.9, 1.0, 200), [0.55, 0.56, 0.58]])  # bin 5 holds 3 samples
    probs = np.stack([confidences, 1 - confidences], axis=1)
    labels = np.zeros(len(confidences), dtype=int)
    display = plots.reliability(probs, labels, n_bins=10, min_count=10)
    counts = display.stats.counts
    heights, bars = _bars(display.ax)
    texts = {t.get_gid(): t.get_text() for t in display.ax.texts}
    sparse = np.flatnonzero((counts < 10) & (counts > 0))
    assert counts[5] == 3 and texts["count:bin-5"] == "n=3" and "count:bin-0" not in texts  # no "n=0"
    assert set(texts) == {f"count:bin-{i}" for i in sparse}  # only sparse bins that hold samples are labelled
    assert bars.patches[5].get_alpha() < bars.patches[9].get_alpha()
    # the sparse bin's gap is faded too (it cannot dominate the panel), and the legend's swatch is the tint drawn
    gaps = next(c for c in display.ax.containers if c.get_label() == "Gap")
    assert gaps.patches[[i for i in np.flatnonzero(counts > 0)].index(5)].get_alpha() < 0.5
    assert display.histogram_ax.get_ylim()[1] <= 100.0  # a share axis ends at 100 %
    hist_texts = {t.get_gid(): t.get_text() for t in display.histogram_ax.texts}
    assert hist_texts == {f"hist-count:bin-{i}": str(c) for i, c in enumerate(counts) if c > 0}
    legend_texts = [t.get_text() for t in display.figure.legends[0].get_texts()]
    assert "Bin with fewer than 10 samples (n shown)" in legend_texts


def test_user_label_and_title_are_literal():
    logits, _, labels = _calibrated(n=100)
    display = plots.reliability(logits, labels, label="a_b $x^2$ 100%", title=r"$\frac{1}{0}$")
    title = display.ax.get_title()
    assert title.startswith("a_b $x^2$ 100%\n") and not display.ax.title.get_parse_math()
    (suptitle,) = display.figure.texts
    assert suptitle.get_text() == r"$\frac{1}{0}$" and not suptitle.get_parse_math()


@pytest.mark.parametrize("kwargs, match", [
    ({"strategy": "quantiles"}, "strategy"),
    ({"n_bins": 0}, "n_bins"),
    ({"bands": "both"}, "--bands"),
    ({"band_samples": 1}, "--band-samples"),
    ({"min_count": -1}, "--min-bin-count"),
    ({"ax": "axes"}, "matplotlib Axes"),
])
def test_bad_arguments_are_one_sentence(kwargs, match):
    logits, _, labels = _calibrated(n=50)
    with pytest.raises(InputError, match=match):
        plots.reliability(logits, labels, **kwargs)


def test_same_seed_gives_the_same_figure_bytes(tmp_path):
    logits, _, labels = _calibrated(n=200)
    paths = []
    for name in ("a", "b"):
        display = plots.reliability(logits, labels, n_bins=5, bands="consistency", band_samples=30, seed=4)
        paths.append(plots.save_figure(display.figure, tmp_path / f"{name}.svg"))
    assert paths[0].read_bytes() == paths[1].read_bytes()


@pytest.mark.parametrize("given_ax", [False, True])
def test_smoothed_curve_is_the_metrics_smooth_reliability(given_ax):
    from adacal.metrics import smooth_reliability

    logits, probs, labels = _calibrated(n=400)
    if given_ax:
        from matplotlib.figure import Figure

        ax = Figure().add_subplot()
        display = plots.reliability(logits, labels, ax=ax, smooth=True)
    else:
        display = plots.reliability(logits, labels, smooth=True)
    expected = smooth_reliability(probs, labels)
    (line,) = [line for line in display.ax.lines if line.get_gid() == "smooth"]
    np.testing.assert_allclose(line.get_xdata(), expected.grid)
    drawn = np.isfinite(line.get_ydata())  # where the confidences lie (tests/plots/test_plot_headlines.py)
    assert drawn.sum() > 0.5 * drawn.size
    np.testing.assert_allclose(line.get_ydata()[drawn], expected.curve[drawn], atol=1e-12)
    assert f"smECE {100 * expected.ece:.2f} %" in line.get_label()
    assert not [line for line in plots.reliability(logits, labels).ax.lines if line.get_gid() == "smooth"]


def test_more_bins_than_a_diagram_draws_are_refused_before_any_work():
    from adacal.plots.reliability_diagrams import MAX_DIAGRAM_BINS

    logits, _, labels = _calibrated()
    plots.reliability(logits, labels, n_bins=MAX_DIAGRAM_BINS)  # the limit itself draws
    with pytest.raises(InputError, match=r"at most 1,000 bins .* got 1,001 from n_bins"):
        plots.reliability(logits, labels, n_bins=MAX_DIAGRAM_BINS + 1, bands="consistency")
    many = bin_statistics(np.linspace(0, 1, 50), np.ones(50), n_bins=MAX_DIAGRAM_BINS + 1)
    with pytest.raises(InputError, match="from panel 'wide'"):
        plots.reliability_diagram([("wide", many)])


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_shared_legend_fits_the_figure_with_bands_and_smoothed_curves(n):
    """With bands and smoothed curves the legend ran past both edges of the figure (and had one unattributable
    'Smoothed (smECE …)' entry per panel); it now has one smoothed entry, each title gives its panel's smECE."""
    from adacal.plots.reliability_diagrams import SMOOTH_LEGEND, reliability_diagram
    from adacal.plots.reliability_panels import panel_from_scores

    logits, probs, labels = _calibrated(n=300)
    panels = [panel_from_scores(probs, labels, label=f"model {i}", bands="consistency", smooth=True)
              for i in range(n)]
    figure = reliability_diagram(panels)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    (legend,) = figure.legends
    box, frame = legend.get_window_extent(renderer), figure.bbox
    assert box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1
    texts = [text.get_text() for text in legend.get_texts()]
    assert texts.count(SMOOTH_LEGEND) == 1 and not any(text.startswith("Smoothed (smECE") for text in texts)
    titles = [ax.get_title() for ax in figure.axes if ax.get_label().startswith("reliability:")]
    assert all("smECE" in title for title in titles)


def test_reliability_reads_scores_by_the_metrics_rule_and_scores_kind_chooses():
    """One all-zero row among softmax rows: refused naming scores_kind= (as ece_em and the files refuse it), never
    drawn as the softmax of "logits"; scores_kind="logits" draws what the metrics compute for the same choice."""
    from adacal.metrics import ece_ew

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(300, 5))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(0, 5, 300)
    probs[7] = 0.0
    with pytest.raises(InputError, match="scores_kind="):
        plots.reliability(probs, labels)
    display = plots.reliability(probs, labels, scores_kind="logits")
    assert display.ece == pytest.approx(ece_ew(probs, labels, scores_kind="logits"), abs=1e-12)
