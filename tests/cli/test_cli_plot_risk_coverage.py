"""`adacal plot risk-coverage` through CliRunner: run folders and predictions files read as `evaluate` reads them,
the drawn curves equal the core's, default names, repeats drawn once, and one-line errors that write nothing."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from adacal.cli import app
from adacal.metrics import aurc
from adacal.metrics.selective import risk_coverage_curve
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json

from cli_helpers import one_line_error, runner, snapshot

PNG = b"\x89PNG\r\n\x1a\n"


def _logits(n, seed, scale):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, n)
    logits = rng.normal(size=(n, 5))
    logits[np.arange(n), labels] += 1.5
    return (scale * logits).astype(np.float32), labels


def _make_run(root, name, loss, seed):
    run = root / name
    run.mkdir()
    config = {"loss": loss, "model": "mlp", "dataset": "digits", "seed": seed, "epochs": 1}
    write_json(run / "config.json", make_report("train-config", config=config, results={}))
    record = {"epoch": 1, "lr": 0.1, "train": {"loss": 1.0, "accuracy": 0.6},
              "val": {"error": 0.3, "nll": 1.0, "ece_em": 0.05, "ece_ew": 0.05}}
    (run / "history.jsonl").write_text(json.dumps(record) + "\n")
    save_split_predictions(run / "predictions.npz", val=Predictions(*_logits(100, seed, 2.0)),
                           test=Predictions(*_logits(300, seed + 50, 2.0)))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    made = {"ce": _make_run(root, "ce", "ce", 0), "adafocal": _make_run(root, "adafocal", "adafocal", 1)}
    write_json(made["ce"] / "evaluate.json", make_report("evaluate", config={}, results={}))
    return made


def _test_curve(run):
    with np.load(run / "predictions.npz") as data:
        return risk_coverage_curve(data["test_logits"], data["test_labels"]), data["test_logits"], data["test_labels"]


def _curves(fig):
    (ax,) = fig.axes
    return {line.get_gid(): line for line in ax.lines}


def test_two_runs_side_by_side(runs, saved_figures, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot", "risk-coverage", str(runs["ce"]), str(runs["adafocal"]), "--dpi", "40"])
    assert result.exit_code == 0, result.output
    out = Path("plots") / "compare-risk-coverage-ce-adafocal.png"
    assert out.read_bytes().startswith(PNG) and str(out) in result.stdout
    (fig,) = saved_figures
    lines = _curves(fig)
    for name, label in (("ce", "CE"), ("adafocal", "AdaFocal")):
        curve, logits, labels = _test_curve(runs[name])
        drawn = lines[f"risk-coverage:{label}"]
        np.testing.assert_array_equal(drawn.get_xdata(), curve.coverage)
        np.testing.assert_array_equal(drawn.get_ydata(), curve.risk)
        assert drawn.get_label() == f"{label}: AURC {100 * aurc(logits, labels):.2f} %"
        assert f"oracle:{label}" in lines and f"random:{label}" in lines


def test_one_predictions_file_with_labels_and_svg(runs, saved_figures, tmp_path):
    source = tmp_path / "preds.npz"
    source.write_bytes((runs["ce"] / "predictions.npz").read_bytes())
    out = tmp_path / "rc.svg"
    result = runner.invoke(app, ["plot", "risk-coverage", str(source), "--labels", "mine", "--out", str(out),
                                 "--title", "Selective"])
    assert result.exit_code == 0, result.output
    assert "<svg" in out.read_text()
    (fig,) = saved_figures
    np.testing.assert_array_equal(_curves(fig)["risk-coverage:mine"].get_ydata(), _test_curve(runs["ce"])[0].risk)
    assert fig._suptitle.get_text() == "Selective"


def test_default_name_of_one_run_and_input_given_twice(runs, saved_figures):
    result = runner.invoke(app, ["plot", "risk-coverage", str(runs["adafocal"]),
                                 str(runs["adafocal"] / "predictions.npz")])
    assert result.exit_code == 0, result.output
    target = runs["adafocal"] / "plots" / "risk-coverage.png"
    assert target.read_bytes().startswith(PNG)
    assert "holds the same predictions" in result.output
    (fig,) = saved_figures
    assert sorted(_curves(fig)) == ["oracle:AdaFocal", "random:AdaFocal", "risk-coverage:AdaFocal"]
    target.unlink()


def test_confidence_correct_pairs(tmp_path, saved_figures):
    rng = np.random.default_rng(5)
    confidence = np.round(rng.uniform(0.2, 1.0, 200), 2)
    correct = rng.random(200) < confidence
    path = tmp_path / "pairs.csv"
    path.write_text("confidence,correct\n" + "".join(f"{c},{int(k)}\n" for c, k in zip(confidence, correct)))
    result = runner.invoke(app, ["plot", "risk-coverage", str(path), "--out", str(tmp_path / "p.png")])
    assert result.exit_code == 0, result.output
    drawn = _curves(saved_figures[0])["risk-coverage:pairs"]
    # by the definition: accept each distinct confidence and above
    thresholds = np.unique(confidence)[::-1]
    np.testing.assert_allclose(drawn.get_ydata(), [1 - correct[confidence >= t].mean() for t in thresholds],
                               atol=1e-12)


@pytest.mark.parametrize("args, match", [
    (["{tmp}/missing.npz", "--out", "{tmp}/x.png"], "does not exist"),
    (["{ce}", "{adafocal}", "--labels", "one", "--out", "{tmp}/x.png"], "--labels"),
    (["{ce}/evaluate.json", "--out", "{tmp}/x.png"], "is an adacal .evaluate. report"),
    (["{ce}", "--out", "{tmp}/x.jpg"], r"\.png, \.svg or \.pdf"),
    (["{ce}", "--dpi", "0", "--out", "{tmp}/x.png"], "--dpi"),
    (["{ce}", "--logits-key", "z", "--out", "{tmp}/x.png"], "--logits-key only with a predictions file"),
])
def test_bad_input_is_one_line_and_writes_nothing(runs, tmp_path, args, match):
    names = {"ce": runs["ce"], "adafocal": runs["adafocal"], "tmp": tmp_path}
    before = snapshot(runs["ce"].parent)
    result = runner.invoke(app, ["plot", "risk-coverage", *[a.format(**names) for a in args]])
    message = one_line_error(result)
    if match is not None:
        assert re.search(match, message), message
    assert list(tmp_path.iterdir()) == [] and snapshot(runs["ce"].parent) == before


def test_help_names_the_references():
    result = runner.invoke(app, ["plot", "risk-coverage", "--help"])
    assert result.exit_code == 0 and "oracle" in result.output and "--labels" in result.output


def test_input_given_twice_keeps_its_first_label(runs, saved_figures, tmp_path):
    result = runner.invoke(app, ["plot", "risk-coverage", str(runs["ce"]), str(runs["adafocal"]), str(runs["ce"]),
                                 "--labels", "first,second,third", "--out", str(tmp_path / "twice.png")])
    assert result.exit_code == 0, result.output
    assert "is given more than once" in result.output
    lines = _curves(saved_figures[0])
    assert sorted(gid for gid in lines if gid.startswith("risk-coverage:")) == ["risk-coverage:first",
                                                                                  "risk-coverage:second"]
    np.testing.assert_array_equal(lines["risk-coverage:first"].get_ydata(), _test_curve(runs["ce"])[0].risk)
