"""`adacal plot conformal`: coverage against α (with the 1 − α line) and set-size histograms of several inputs side by
side; the plotted numbers are the conformal reports' (or, for predictions, `adacal conformal`'s on the same input),
the PNG is written with its kind, and bad input is one line."""

import json

import numpy as np
import pytest

from adacal.cli import app
from adacal.commands.conformal import run_conformal
from adacal.commands.plot import conformal_levels
from adacal.plots import figure_kind
from adacal.plots.conformal import conformal_figure, size_shares
from adacal.predictions import Predictions, save_split_predictions

from cli_helpers import one_line_error, runner

PNG = b"\x89PNG\r\n\x1a\n"


def _logits(n, k, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.2
    return (2.0 * logits).astype(np.float32), labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("plot-conformal")
    save_split_predictions(root / "split.npz", val=Predictions(*_logits(200, 8, 1)),
                           test=Predictions(*_logits(300, 8, 2)))
    for score in ("thr", "aps"):
        result = runner.invoke(app, ["conformal", str(root / "split.npz"), "--alpha", "0.05,0.1,0.2", "--score",
                                     score, "--json", str(root / f"{score}.json")])
        assert result.exit_code == 0, result.output
    return root


def _levels(path):
    return json.loads(path.read_text())["results"]["levels"]


def _drawn(fig, label):
    line = next(line for line in fig.axes[0].lines if line.get_gid() == f"coverage:{label}")
    bars = [patch for patch in fig.axes[1].patches if patch.get_gid() == f"sizes:{label}"]
    return line.get_xdata(), line.get_ydata(), np.array([bar.get_height() for bar in bars])


def test_figure_draws_the_reports_numbers(files):
    thr, aps = _levels(files / "thr.json"), _levels(files / "aps.json")
    fig = conformal_figure([("THR", thr), ("APS", aps)])
    assert fig.axes[0].get_label() == "conformal:coverage" and fig.axes[1].get_label() == "conformal:sizes"
    largest = max(int(size) for level in (thr[1], aps[1]) for size in level["size_distribution"])
    for label, levels in (("THR", thr), ("APS", aps)):
        x, y, heights = _drawn(fig, label)
        assert x.tolist() == [0.05, 0.1, 0.2] and y.tolist() == [level["coverage"] for level in levels]
        # The histogram is the α = 0.1 level (the default), a share of rows per size 0..largest.
        counts = levels[1]["size_distribution"]
        assert np.allclose(heights, [100 * counts.get(str(size), 0) / levels[1]["n"] for size in range(largest + 1)])
    target = next(line for line in fig.axes[0].lines if line.get_gid() == "target")
    assert np.allclose(target.get_ydata(), 1 - np.asarray(target.get_xdata()))
    assert len(fig.axes[0].containers) == 2  # error bars: the Clopper–Pearson interval of each input


def test_size_alpha_picks_the_histogram(files):
    aps = _levels(files / "aps.json")
    fig = conformal_figure([("APS", aps)], size_alpha=0.2)
    heights = _drawn(fig, "APS")[2]
    assert np.allclose(heights / 100, size_shares(aps[2], len(heights) - 1))
    assert "α = 0.2" in fig.axes[1].get_title()


def test_large_sets_are_gathered_in_the_last_bar():
    level = {"alpha": 0.1, "coverage": 0.9, "coverage_interval": [0.8, 0.95], "n": 4, "mean_set_size": 20.0,
             "size_distribution": {"2": 1, "30": 2, "50": 1}}
    assert size_shares(level, largest=20)[[2, 20]].tolist() == [0.25, 0.75]


def test_levels_of_a_predictions_file_are_conformals(files):
    drawn = conformal_levels(files / "split.npz", alpha="0.1,0.2", score="thr")
    assert drawn == run_conformal(files / "split.npz", alpha="0.1,0.2", score="thr").results["levels"]
    assert conformal_levels(files / "thr.json") == _levels(files / "thr.json")


def test_cli_writes_a_png_whose_numbers_are_the_reports(files, tmp_path, monkeypatch):
    import adacal.plots.conformal as module

    drawn = []
    original = module.conformal_figure

    def keep(*args, **kwargs):
        drawn.append(original(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(module, "conformal_figure", keep)
    out = tmp_path / "sets.png"
    result = runner.invoke(app, ["plot", "conformal", str(files / "thr.json"), str(files / "aps.json"),
                                 str(files / "split.npz"), "--labels", "THR,APS,fitted", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG) and figure_kind(out) == "conformal"
    fig = drawn[0]
    assert _drawn(fig, "THR")[1].tolist() == [level["coverage"] for level in _levels(files / "thr.json")]
    fitted = run_conformal(files / "split.npz", alpha="0.05,0.1,0.15,0.2,0.3").results["levels"]
    assert _drawn(fig, "fitted")[1].tolist() == [level["coverage"] for level in fitted]


def test_refusals(files, tmp_path):
    def plot(*args):
        return runner.invoke(app, ["plot", "conformal", *map(str, args), "--out", str(tmp_path / "x.png")])

    one_line_error(plot(files / "thr.json", "--alpha", "0.1"), "--alpha, --score and --calibrator only")
    one_line_error(plot(files / "thr.json", "--size-alpha", "0.3"), "--size-alpha")
    one_line_error(plot(files / "thr.json", "--size-alpha", "1.5"), "alpha")
    one_line_error(plot(files / "split.npz", "--alpha", "2"), "--alpha")
    one_line_error(plot(files / "thr.json", files / "aps.json", "--labels", "one"), "--labels")
    (tmp_path / "other.json").write_text(json.dumps({"schema_version": 1, "kind": "evaluate", "results": {}}))
    one_line_error(plot(tmp_path / "other.json"), "kind 'conformal'")
    assert not (tmp_path / "x.png").exists()
