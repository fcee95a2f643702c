"""`plot reliability --corp`: the CORP (PAV) curve and its consistency band drawn over the bars, the same curve
`adacal.metrics.decomposition.corp_curve` gives for the top-1 confidences; refused for bin statistics only."""

import json

import numpy as np
import pytest

from adacal.cli import app
from adacal.errors import InputError
from adacal.metrics import top_label
from adacal.metrics.decomposition import corp_curve
from adacal.plots import ReliabilityRequest, reliability_diagram, reliability_inputs
from cli_helpers import one_line_error, runner


@pytest.fixture(scope="module")
def preds(tmp_path_factory):
    rng = np.random.default_rng(21)
    logits = rng.normal(size=(300, 3)) * 1.5
    labels = rng.integers(0, 3, 300)
    path = tmp_path_factory.mktemp("corp") / "preds.npz"
    np.savez(path, logits=logits, labels=labels)
    return path, logits, labels


def test_panel_holds_the_corp_curve_and_figure_draws_it(preds):
    path, logits, labels = preds
    panels = reliability_inputs(ReliabilityRequest([path], corp=True, band_samples=50, band_level=0.8, seed=4))
    top = top_label(logits, labels)
    expected = corp_curve(top.confidences, top.correct, n_resamples=50, level=0.8, seed=4)
    curve = panels[0].corp
    assert np.array_equal(curve.forecasts, expected.forecasts)
    assert np.array_equal(curve.recalibrated, expected.recalibrated)
    assert np.array_equal(curve.band_low, expected.band_low) and curve.level == 0.8
    figure = reliability_diagram(panels)
    gids = {artist.get_gid() for ax in figure.axes for artist in [*ax.lines, *ax.collections]}
    assert {"corp", "corp-band"} <= gids
    line = next(line for ax in figure.axes for line in ax.lines if line.get_gid() == "corp")
    assert np.array_equal(line.get_ydata(), expected.recalibrated)
    assert reliability_inputs(ReliabilityRequest([path]))[0].corp is None


def test_cli_writes_and_refuses_bin_statistics(preds, tmp_path):
    path = preds[0]
    out = tmp_path / "corp.png"
    result = runner.invoke(app, ["plot", "reliability", str(path), "--corp", "--band-samples", "20", "--out",
                                 str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0
    report = tmp_path / "evaluate.json"
    assert runner.invoke(app, ["evaluate", str(path), "--json", str(report)]).exit_code == 0
    assert json.loads(report.read_text())["schema_version"]
    result = runner.invoke(app, ["plot", "reliability", str(report), "--corp", "--out", str(tmp_path / "x.png")])
    one_line_error(result, "--corp", "per-sample predictions")
    with pytest.raises(InputError, match="--corp"):
        reliability_inputs(ReliabilityRequest([report], corp=True))
