"""`adacal report` on an image model's run: the shift section is what `adacal shift` gives on the same run, the OOD
section's AUROCs are those of the softmax entropy of the logits each set gave (checked with scikit-learn), every set
goes through the model once for both sections, and the headline table holds the sections' own figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tiny_runs import tiny_cifar_run


@pytest.fixture(scope="module")
def image_report(tmp_path_factory, one_torch_thread):
    """A --quick report of the tiny CIFAR-shaped resnet20 run, counting the images its model scores."""
    from adacal.commands.report import run_report
    from adacal.training import inference

    data, runs = tmp_path_factory.mktemp("tiny-cifar"), tmp_path_factory.mktemp("runs")
    cache = tmp_path_factory.mktemp("cache")
    with one_torch_thread(), pytest.MonkeyPatch.context() as patch:
        patch.setenv("ADACAL_CACHE", str(cache))
        run_dir, _ = tiny_cifar_run(data, runs)
        scored: list[int] = []
        original = inference.CheckpointModel.predict

        def counting(self, split, **kwargs):
            scored.append(len(split))
            return original(self, split, **kwargs)

        patch.setattr(inference.CheckpointModel, "predict", counting)
        report = run_report([run_dir], out=tmp_path_factory.mktemp("page") / "page.html", quick=True, bootstrap=0,
                            method="temperature", device="cpu")
    return report, run_dir, scored, cache


def _sections(report):
    return json.loads(report.json.read_text())["results"]["inputs"][0]["sections"]


@pytest.mark.slow
def test_shift_section_is_what_adacal_shift_gives_and_each_set_is_scored_once(image_report, one_torch_thread):
    from adacal.commands.shift import run_shift

    report, run_dir, scored, cache = image_report
    section = _sections(report)["shift"]
    assert section["status"] == "done", section["reason"]
    assert not list(run_dir.glob("shift*.json"))  # the report writes into no run folder
    with one_torch_thread():
        alone = run_shift(run_dir, limit=500, seed=0, device="cpu", download=False, write=False, keep_logits=True,
                          cache_dir=cache)
    sets = section["numbers"]["results"]["sets"]
    assert [(e["corruption"], e["severity"]) for e in sets] == [(e["corruption"], e["severity"])
                                                               for e in alone.results["sets"]]
    for mine, theirs in zip(sets, alone.results["sets"]):
        for stage in ("pre", "post"):
            assert mine[stage]["ece_em"] == pytest.approx(theirs[stage]["ece_em"], abs=1e-12)
    # The clean test logits come from the run's saved predictions; each shifted set went through the model once,
    # although both the shift and the OOD sections read it.
    assert len(scored) == len(sets) and set(scored) == {40}
    assert "adacal shift" in section["command"] and "--limit 500" in section["command"]


@pytest.mark.slow
def test_ood_aurocs_are_the_entropy_aurocs_of_each_sets_logits(image_report, one_torch_thread):
    from sklearn.metrics import roc_auc_score

    from adacal.commands.shift import run_shift

    report, run_dir, _, cache = image_report
    section = _sections(report)["ood"]
    assert section["status"] == "done", section["reason"]
    with one_torch_thread():
        alone = run_shift(run_dir, limit=500, seed=0, device="cpu", download=False, write=False, keep_logits=True,
                          cache_dir=cache)
    temperature = alone.results["temperature"]

    def entropy(logits):
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        return -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=1)

    clean = alone.logits["clean"].astype(np.float64)
    for name, entry in section["numbers"]["sets"].items():
        out = alone.logits[name].astype(np.float64)
        for stage, t in (("pre", 1.0), ("post", temperature)):
            scores = np.concatenate([entropy(clean / t), entropy(out / t)])
            truth = np.r_[np.zeros(len(clean)), np.ones(len(out))]  # OOD is the positive class
            assert entry[stage]["auroc"] == pytest.approx(roc_auc_score(truth, scores), abs=1e-9)
    severity5 = [entry["pre"]["auroc"] for name, entry in section["numbers"]["sets"].items() if name.endswith(" s5")]
    assert section["numbers"]["by_severity"]["5"]["pre"]["median"] == pytest.approx(np.median(severity5))


@pytest.mark.slow
def test_headline_holds_the_sections_figures(image_report):
    report, _, _, _ = image_report
    sections = _sections(report)
    row = report.report["results"]["headline"][0]
    assert row["error"] == sections["evaluate"]["numbers"]["metrics"]["error"]
    assert row["ECE-EM at severity 5"] == sections["shift"]["numbers"]["results"]["by_severity"]["5"]["pre"][
        "ece_em"]["median"]
    assert row["OOD AUROC at severity 5"] == sections["ood"]["numbers"]["by_severity"]["5"]["pre"]["median"]
    assert row["selected calibrator"] == sections["calibrate"]["numbers"]["best"] == "temperature"
    page = report.page.read_text()
    # reliability, calibrate, selective, curves, shift boxes, OOD ROC (a CE run: no γ figure)
    assert "<h2>Headline figures</h2>" in page and page.count("<img") == 6


@pytest.mark.slow
def test_a_moved_data_folder_is_read_from_data_dir(image_report, tmp_path, monkeypatch, one_torch_thread):
    """The data folder the run's checkpoint records moved: without --data-dir the shift and OOD sections are skipped
    with the reason (the default folder has no CIFAR-10 either); with it, they are the figures the folder gave before
    the move, and the sections' commands name it."""
    import shutil
    from pathlib import Path

    from adacal.commands.report import run_report

    report, run_dir, _, cache = image_report
    before = _sections(report)
    recorded = Path(before["shift"]["numbers"]["config"]["data_dir"])
    moved = tmp_path / "moved data"
    monkeypatch.setenv("ADACAL_DATA", str(tmp_path / "empty-default"))
    monkeypatch.setenv("ADACAL_CACHE", str(cache))
    shutil.move(recorded, moved)
    try:
        with one_torch_thread():
            lost = run_report([run_dir], out=tmp_path / "lost.html", quick=True, bootstrap=0, method="temperature",
                              device="cpu")
            found = run_report([run_dir], out=tmp_path / "found.html", quick=True, bootstrap=0,
                               method="temperature", device="cpu", data_dir=moved)
    finally:
        shutil.move(moved, recorded)
    lost_sections = _sections(lost)
    for key in ("shift", "ood"):
        assert lost_sections[key]["status"] == "skipped"
        assert str(recorded) in lost_sections[key]["reason"] and "no longer exists" in lost_sections[key]["reason"]
    after = _sections(found)
    assert after["shift"]["status"] == after["ood"]["status"] == "done"
    assert after["shift"]["numbers"]["config"]["data_dir"] == str(moved)
    sets = [section["shift"]["numbers"]["results"]["sets"] for section in (after, before)]
    for mine, theirs in zip(*sets):
        assert mine["pre"]["ece_em"] == pytest.approx(theirs["pre"]["ece_em"], abs=1e-12)
    assert after["ood"]["numbers"]["by_severity"] == before["ood"]["numbers"]["by_severity"]
    quoted = "'" + str(moved) + "'"
    assert f"--data-dir {quoted}" in after["shift"]["command"] and f"--data-dir {quoted}" in after["ood"]["command"]
    assert found.report["config"]["data_dir"] == str(moved)
    import html

    page = found.page.read_text()
    assert f"--data-dir {quoted}" in page or html.escape(f"--data-dir {quoted}") in page


def test_data_dir_is_checked_before_anything_is_read(tmp_path):
    from adacal.commands.report import run_report
    from adacal.errors import InputError

    predictions = tmp_path / "preds.npz"
    np.savez(predictions, logits=np.zeros((4, 3)), labels=np.arange(4) % 3)
    with pytest.raises(InputError, match="--data-dir.*no such folder"):
        run_report([tmp_path], out=tmp_path / "r.html", data_dir=tmp_path / "absent")
    with pytest.raises(InputError, match="--data-dir with a run folder"):
        run_report([predictions], out=tmp_path / "r.html", data_dir=tmp_path)
    assert not (tmp_path / "r.html").exists()
