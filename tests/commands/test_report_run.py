"""`adacal report` as a library call (`run_report`): the page is valid self-contained HTML with every section, the
figures are embedded PNGs with alt text, skipped sections say why, and report.json holds the numbers the
commands themselves give on the same input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from report_pages import (
    PAGE_HEADINGS, PNG_SIGNATURE, SECTION_TITLES, image_bytes, predictions_file, read_page,
)

BOOTSTRAP = 50


@pytest.fixture(scope="module")
def adafocal_run(tmp_path_factory, one_torch_thread):
    """An MLP trained one epoch with AdaFocal on 100 digits: a run folder with γ history."""
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        result = train(TrainConfig(dataset="digits", model="mlp", loss="adafocal", epochs=1, train_subset=100,
                                   out=str(tmp_path_factory.mktemp("runs")), device="cpu"))
    return result.run_dir


@pytest.fixture(scope="module")
def side_by_side(adafocal_run, tmp_path_factory, one_torch_thread):
    """One report of the run and a predictions file with val_ arrays, side by side."""
    from adacal.commands.report import run_report

    folder = tmp_path_factory.mktemp("report")
    preds = predictions_file(folder / "scores.npz")
    with one_torch_thread():
        run = run_report([adafocal_run, preds], out=folder / "page.html", quick=True, bootstrap=BOOTSTRAP,
                         method="temperature")
    return run, preds


def _sections(run, index):
    return json.loads(run.json.read_text())["results"]["inputs"][index]["sections"]


@pytest.mark.slow
def test_the_page_is_valid_self_contained_html_with_every_section(side_by_side):
    run, _ = side_by_side
    page = read_page(run.page)
    assert not page.errors and not page.open, (page.errors, page.open)
    assert page.headings["h2"] == list(PAGE_HEADINGS)
    assert len(page.headings["h3"]) == 2 * len(SECTION_TITLES)  # one column per input under every section
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    # run: reliability, calibrate, selective, curves, gamma; file: reliability, calibrate, selective
    assert len(images) == 8
    for attrs in images:
        assert attrs.get("alt") and len(attrs["alt"]) > 20
        data = image_bytes(attrs["src"])
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000
    assert not [tag for tag, _ in page.tags if tag in ("script", "link", "iframe", "object")]
    links = [attrs["href"] for tag, attrs in page.tags if tag == "a"]
    assert links and all(href.startswith("#") for href in links)  # nothing fetched, nothing outside the page
    ids = {attrs.get("id") for _, attrs in page.tags}
    assert all(href[1:] in ids for href in links)


@pytest.mark.slow
def test_skipped_sections_say_why_in_the_page_and_the_json(side_by_side):
    run, _ = side_by_side
    on_run, on_file = _sections(run, 0), _sections(run, 1)
    assert [key for key, entry in on_run.items() if entry["status"] == "skipped"] == ["ood", "shift"]
    assert [key for key, entry in on_file.items() if entry["status"] == "skipped"] == [
        "curves", "adafocal", "ood", "shift"]
    assert "Expected a run folder written by 'adacal train'" in on_file["curves"]["reason"]
    assert "needs a run folder" in on_file["shift"]["reason"]
    text = run.page.read_text()
    for entry in [*on_run.values(), *on_file.values()]:
        assert entry["command"].startswith(("adacal ", "python -c"))
        if entry["status"] == "skipped":
            assert entry["reason"] and entry["reason"] in text.replace("&#x27;", "'")
    assert len(run.skipped) == 6 and run.skipped[0].startswith(f"{run.report['results']['inputs'][0]['label']}: ")


@pytest.mark.slow
def test_the_json_holds_what_evaluate_and_calibrate_give_on_the_same_input(side_by_side, adafocal_run, tmp_path):
    from adacal.commands.calibrate import run_calibrate
    from adacal.commands.evaluate import run_evaluate
    from adacal.commands.report_sections import SELECTIVE_METRICS
    from adacal.reports import to_jsonable

    run, preds = side_by_side
    report = json.loads(run.json.read_text())
    assert {"schema_version", "adacal_version", "created", "config", "results"} <= set(report)
    assert report["kind"] == "report" and report["config"]["bootstrap"] == BOOTSTRAP
    for index, path in enumerate((adafocal_run, preds)):
        sections = _sections(run, index)
        evaluated = run_evaluate(path, bootstrap=BOOTSTRAP).report["results"]
        assert sections["evaluate"]["numbers"]["metrics"] == to_jsonable(evaluated["metrics"])
        assert sections["evaluate"]["numbers"]["bootstrap"] == to_jsonable(evaluated["bootstrap"])
        selective = run_evaluate(path, metrics=SELECTIVE_METRICS, bootstrap=BOOTSTRAP).report["results"]
        assert sections["selective"]["numbers"]["metrics"] == to_jsonable(selective["metrics"])
        calibrated = run_calibrate(path, method="temperature", json_path=tmp_path / f"calibrate{index}.json")
        ours = sections["calibrate"]["numbers"]
        assert ours["best"] == calibrated.best == "temperature"
        assert ours["results"]["calibrators"] == to_jsonable(calibrated.results["calibrators"])
        assert ours["results"]["selection"] == to_jsonable(calibrated.results["selection"])


@pytest.mark.slow
def test_the_figures_numbers_are_those_of_the_predictions(side_by_side):
    """The reliability bins and the risk–coverage curve, recomputed from the file's own arrays with numpy."""
    run, preds = side_by_side
    sections = _sections(run, 1)
    with np.load(preds) as arrays:
        logits, labels = arrays["test_logits"], arrays["test_labels"]
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    confidence, correct = probs.max(1), probs.argmax(1) == labels
    panel = sections["reliability"]["numbers"]["panels"][0]
    edges = np.array(panel["edges"])
    assert np.allclose(edges, np.linspace(0, 1, 16))
    index = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, 14)
    counts = np.bincount(index, minlength=15)
    assert panel["counts"] == counts.tolist()
    full = counts > 0
    accuracy = np.bincount(index, weights=correct, minlength=15)[full] / counts[full]
    assert np.allclose(np.array(panel["accuracy"])[full], accuracy)
    assert np.all(np.array(panel["bands"]["lower"])[full] <= np.array(panel["bands"]["upper"])[full])
    curve = sections["selective"]["numbers"]["curves"][0]
    ranked = correct[np.argsort(-confidence, kind="stable")]
    risk_at_all = 1.0 - ranked.mean()
    assert curve["coverage"][-1] == 1.0 and np.isclose(curve["risk"][-1], risk_at_all)
    # AURC: the mean selective risk over coverages k/N (ties in confidence are absent from continuous scores)
    aurc = np.mean(np.cumsum(~ranked) / np.arange(1, len(ranked) + 1))
    assert np.isclose(curve["aurc"], aurc) and np.isclose(sections["selective"]["numbers"]["metrics"]["aurc"], aurc)


@pytest.mark.slow
def test_conformal_sets_recomputed_from_their_quantile(side_by_side):
    """thr at α = 0.1: the quantile is the ⌈(n+1)(1−α)⌉-th smallest 1 − p_y of the validation set, and the coverage
    is the share of test rows whose 1 − p_y is at most it."""
    run, preds = side_by_side
    thr = _sections(run, 1)["conformal"]["numbers"]["scores"]["thr"]
    with np.load(preds) as arrays:
        val_logits, val_labels = arrays["val_logits"], arrays["val_labels"]
        test_logits, test_labels = arrays["test_logits"], arrays["test_labels"]

    def softmax(logits):
        e = np.exp(logits - logits.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    val_scores = np.sort(1.0 - softmax(val_logits)[np.arange(len(val_labels)), val_labels])
    rank = int(np.ceil((len(val_scores) + 1) * 0.9))
    assert np.isclose(thr["predictor"]["quantile"], val_scores[rank - 1])
    test_scores = 1.0 - softmax(test_logits)[np.arange(len(test_labels)), test_labels]
    assert np.isclose(thr["coverage"]["coverage"], np.mean(test_scores <= val_scores[rank - 1]))


@pytest.mark.slow
def test_the_adafocal_section_holds_the_runs_gammas(side_by_side, adafocal_run):
    run, _ = side_by_side
    numbers = _sections(run, 0)["adafocal"]["numbers"]
    records = [json.loads(line) for line in (adafocal_run / "history.jsonl").read_text().splitlines()]
    updates = [update for record in records for update in record["adafocal"]["updates"]]
    assert numbers["gammas"] == [update["gammas"] for update in updates]
    assert _sections(run, 0)["adafocal"]["command"].endswith("--bins 0,4,7,10,14")


def test_a_file_without_validation_skips_calibration_and_conformal_saying_why(tmp_path):
    from adacal.commands.report import run_report

    preds = predictions_file(tmp_path / "test_only.npz", n=120, val=False)
    run = run_report([preds], bootstrap=0, quick=True, method="temperature")
    assert run.page == tmp_path / "test_only-report.html" and run.json == tmp_path / "test_only-report.json"
    sections = _sections(run, 0)
    for key in ("calibrate", "conformal"):
        assert sections[key]["status"] == "skipped"
        assert "val" in sections[key]["reason"].lower()
    assert sections["evaluate"]["status"] == "done" and sections["evaluate"]["numbers"]["bootstrap"] is None
    assert "--val" in sections["calibrate"]["command"] or "calibrate" in sections["calibrate"]["command"]


@pytest.mark.slow
def test_val_file_pairs_with_a_test_file_and_all_calibrators_compare(tmp_path):
    from adacal.commands.calibrate import run_calibrate
    from adacal.commands.report import run_report
    from adacal.reports import to_jsonable

    both = predictions_file(tmp_path / "both.npz", n=100)
    with np.load(both) as arrays:
        np.savez(tmp_path / "val.npz", logits=arrays["val_logits"], labels=arrays["val_labels"])
        np.savez(tmp_path / "test.npz", logits=arrays["test_logits"], labels=arrays["test_labels"])
    run = run_report([tmp_path / "test.npz"], val=tmp_path / "val.npz", bootstrap=0, quick=True,
                     out=tmp_path / "r.html")
    numbers = _sections(run, 0)["calibrate"]["numbers"]
    expected = run_calibrate(tmp_path / "test.npz", val=tmp_path / "val.npz", method="all",
                             json_path=tmp_path / "c.json")
    assert numbers["best"] == expected.best and numbers["methods"] == expected.methods
    assert numbers["results"]["selection"] == to_jsonable(expected.results["selection"])
    assert "--val" in _sections(run, 0)["calibrate"]["command"]


@pytest.mark.parametrize("call, fragment", [
    (lambda p, t: dict(inputs=[t / "missing"]), "no such file or folder"),
    (lambda p, t: dict(inputs=[p], out=t / "page.txt"), "Expected --out to be an .html file"),
    (lambda p, t: dict(inputs=[p, t / "other.npz"], val=p), "Expected --val with one INPUT"),
    (lambda p, t: dict(inputs=[p, p]), "Expected each INPUT once"),
    (lambda p, t: dict(inputs=[t], val=p), "Expected --val only with a predictions file"),
    (lambda p, t: dict(inputs=[p], method="tempreature"), "tempreature"),
    (lambda p, t: dict(inputs=[p], bootstrap=-1), "--bootstrap"),
    (lambda p, t: dict(inputs=[]), "at least one INPUT"),
])
def test_bad_input_is_one_input_error_before_anything_is_written(tmp_path, call, fragment):
    from adacal.commands.report import run_report
    from adacal.errors import InputError

    preds = predictions_file(tmp_path / "p.npz", n=30)
    predictions_file(tmp_path / "other.npz", n=30)
    before = sorted(tmp_path.iterdir())
    kwargs = call(preds, tmp_path)
    with pytest.raises(InputError, match=fragment.replace(".", r"\.")) as caught:
        run_report(kwargs.pop("inputs"), **kwargs)
    assert "\n" not in str(caught.value)
    assert sorted(tmp_path.iterdir()) == before


def test_a_page_it_did_not_write_is_kept_unless_force(tmp_path):
    from adacal.commands.report import run_report
    from adacal.errors import InputError

    preds = predictions_file(tmp_path / "p.npz", n=60, val=False)
    mine = tmp_path / "notes.html"
    mine.write_text("<html>my notes</html>")
    with pytest.raises(InputError, match="adacal report did not write it"):
        run_report([preds], out=mine, bootstrap=0, quick=True)
    assert mine.read_text() == "<html>my notes</html>"
    run_report([preds], out=mine, bootstrap=0, quick=True, force=True)
    run_report([preds], out=mine, bootstrap=0, quick=True)  # its own page: replaced without --force
    assert "adacal report" in mine.read_text()


def test_top_label_pairs_get_metrics_and_selective_prediction_and_say_why_the_rest_is_skipped(tmp_path):
    """An LLM evaluation's (confidence, correct) JSONL: evaluate's top-label metrics and the risk–coverage curve;
    the sections that need every class's scores are skipped, saying so."""
    from adacal.commands.evaluate import run_evaluate
    from adacal.commands.report import run_report
    from adacal.reports import to_jsonable

    rng = np.random.default_rng(1)
    confidence = rng.uniform(0.3, 1.0, 150)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"confidence": float(c), "correct": bool(rng.random() < c)}) + "\n"
                               for c in confidence))
    run = run_report([answers], bootstrap=0, quick=True)
    sections = _sections(run, 0)
    assert sections["evaluate"]["numbers"]["metrics"] == to_jsonable(
        run_evaluate(answers).report["results"]["metrics"])
    assert "auroc_correct" in sections["evaluate"]["numbers"]["metrics"]
    assert sections["selective"]["status"] == "done"
    assert sections["reliability"]["status"] == "done"  # the diagram of the pairs, as `plot reliability` draws it
    for key in ("calibrate", "conformal"):
        assert sections[key]["status"] == "skipped" and "top-label" in sections[key]["reason"]


@pytest.mark.slow
def test_the_headline_table_compares_the_inputs_with_their_sections_figures(side_by_side):
    run, _ = side_by_side
    rows = run.report["results"]["headline"]
    assert [row["label"] for row in rows] == [entry["label"] for entry in run.report["results"]["inputs"]]
    for index, row in enumerate(rows):
        sections = _sections(run, index)
        assert not any(key.endswith("%") for key in row)  # report.json holds fractions: no "%" in its keys
        assert row["ECE-EM"] == sections["evaluate"]["numbers"]["metrics"]["ece_em"]
        assert row["AURC"] == sections["selective"]["numbers"]["metrics"]["aurc"]
        assert row["APS set size (α = 0.1)"] == sections["conformal"]["numbers"]["scores"]["aps"]["coverage"][
            "mean_set_size"]
        assert row["OOD AUROC at severity 5"] is None  # skipped sections leave a dash, never a figure
    page = read_page(run.page)
    assert page.headings["h2"][0] == "Headline figures"


def test_a_binary_input_names_its_brier_and_ece_conventions_in_the_page_and_the_json(tmp_path):
    from sklearn.metrics import brier_score_loss

    from adacal.commands.report import run_report

    preds = predictions_file(tmp_path / "binary.npz", n=150, num_classes=2, val=False)
    run = run_report([preds], bootstrap=0, quick=True, method="temperature")
    evaluate = _sections(run, 0)["evaluate"]
    numbers = evaluate["numbers"]
    assert set(numbers["conventions"]) >= {"brier", "brier_positive", "ece_positive_em"}
    with np.load(preds) as arrays:
        z = arrays["test_logits"]
        p1 = np.exp(z[:, 1]) / np.exp(z).sum(axis=1)
        expected = brier_score_loss(arrays["test_labels"], p1)
    assert numbers["metrics"]["brier_positive"] == pytest.approx(expected, rel=1e-9)
    assert numbers["metrics"]["brier"] == pytest.approx(2 * expected, rel=1e-9)
    page = run.page.read_text()
    assert "multi-class sum" in page and "Brier-Positive" in page
    # A three-class input names the Brier convention alone.
    three = run_report([predictions_file(tmp_path / "three.npz", n=90, val=False)], bootstrap=0, quick=True,
                       method="temperature")
    assert "multi-class sum" in three.page.read_text() and "Brier-Positive" not in three.page.read_text()
