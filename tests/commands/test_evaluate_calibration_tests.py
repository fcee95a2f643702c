"""`evaluate --tests` and `--decompose` (run_evaluate and the CLI): the report's `calibration_tests` and
`decomposition` blocks equal the library's functions, for class scores and top-label confidence files alike; off
by default; bad options refused in one line."""

import json

import numpy as np
import pytest

from adacal.cli import app
from adacal.commands.evaluate import run_evaluate
from adacal.metrics import prepare_predictions
from adacal.metrics.calibration_tests import calibration_tests
from adacal.metrics.decomposition import classwise_brier_decomposition, corp_decomposition
from cli_helpers import one_line_error, runner


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(12)
    folder = tmp_path_factory.mktemp("caltests")
    logits = rng.normal(size=(240, 3)) * 2
    labels = rng.integers(0, 3, 240)
    np.savez(folder / "preds.npz", logits=logits, labels=labels)
    conf = np.round(rng.uniform(0.4, 1.0, 200), 3)
    correct = (rng.random(200) < conf).astype(int)
    (folder / "answers.csv").write_text("confidence,correct\n" + "".join(f"{c},{k}\n" for c, k in zip(conf, correct)))
    return folder, logits, labels, conf, correct


def test_scores_report_holds_the_tests_and_decomposition(files):
    folder, logits, labels, _, _ = files
    report = run_evaluate(folder / "preds.npz", tests=True, test_resamples=99, seed=3, decompose=True).report
    results, config = report["results"], report["config"]
    assert config["test_resamples"] == 99 and config["decompose"] is True
    pred = prepare_predictions(logits, labels)
    expected = calibration_tests(pred.confidences, pred.correct, n_resamples=99, seed=3)
    assert list(results["calibration_tests"]) == ["ece_em", "ece_ew", "spiegelhalter", "ks", "kuiper"]
    for name, test in expected.items():
        assert results["calibration_tests"][name.replace("-", "_")] == test.to_dict()
    assert results["calibration_tests"]["ece_em"]["statistic"] == pytest.approx(results["metrics"]["ece_em"],
                                                                                abs=1e-12)
    decomposition = results["decomposition"]
    assert decomposition["brier_top"] == corp_decomposition(pred.confidences, pred.correct).to_dict()
    assert decomposition["brier"] == classwise_brier_decomposition(pred).to_dict()
    assert decomposition["brier"]["score"] == pytest.approx(results["metrics"]["brier"], abs=1e-12)
    assert decomposition["nll_correct"]["score"] == pytest.approx(
        corp_decomposition(pred.confidences, pred.correct, score="log-loss").score, abs=1e-15)


def test_confidence_file_gets_top_label_parts(files):
    folder, _, _, conf, correct = files
    results = run_evaluate(folder / "answers.csv", tests=True, test_resamples=49, decompose=True).report["results"]
    expected = calibration_tests(conf, correct, n_resamples=49, seed=0)
    assert results["calibration_tests"]["kuiper"] == expected["kuiper"].to_dict()
    assert results["calibration_tests"]["ece_ew"] == expected["ece-ew"].to_dict()
    assert set(results["decomposition"]) == {"brier_top", "nll_correct"}
    assert results["decomposition"]["brier_top"]["score"] == pytest.approx(results["metrics"]["brier_top"],
                                                                           abs=1e-12)


def test_off_by_default(files):
    report = run_evaluate(files[0] / "preds.npz").report
    assert "calibration_tests" not in report["results"] and "decomposition" not in report["results"]
    assert "test_resamples" not in report["config"] and "decompose" not in report["config"]


def test_cli_tables_and_json(files, tmp_path):
    folder = files[0]
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["evaluate", str(folder / "preds.npz"), "--tests", "--test-resamples", "49",
                                 "--decompose", "--json", str(out)])
    assert result.exit_code == 0, result.output
    for fragment in ("Calibration tests", "ECE-EM resampling", "Spiegelhalter Z", "Kuiper", "CORP decomposition",
                     "BRIER (per class)", "NLL-CORRECT"):
        assert fragment in result.stdout
    written = json.loads(out.read_text())
    assert written["results"]["calibration_tests"]["ece_em"]["resamples"] == 49


def test_cli_refuses_bad_resamples_before_reading(files):
    result = runner.invoke(app, ["evaluate", str(files[0] / "preds.npz"), "--tests", "--test-resamples", "0"])
    one_line_error(result, "--test-resamples", "positive integer")
