"""`adacal report` at the command line: files written and named, skipped sections listed on stderr, bad input one
line with nothing written."""

from __future__ import annotations

import pytest

from adacal.cli import app
from cli_helpers import one_line_error, runner, snapshot
from report_pages import predictions_file, read_page


def test_report_of_a_predictions_file_writes_the_page_and_its_json(tmp_path):
    preds = predictions_file(tmp_path / "scores.npz", n=90)
    result = runner.invoke(app, ["report", str(preds), "--quick", "--bootstrap", "0", "--method", "temperature",
                                 "--out", str(tmp_path / "out" / "page.html")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"Wrote {tmp_path / 'out' / 'page.html'}",
                                          f"Wrote {tmp_path / 'out' / 'page.json'}"]
    skipped = result.stderr.splitlines()
    assert [line.split(": ")[1] for line in skipped] == [
        "Training curves", "AdaFocal γ dynamics", "Out-of-distribution detection", "Calibration under dataset shift"]
    assert all(line.startswith("Skipped scores.npz: ") for line in skipped)
    assert "Post-hoc calibration" in read_page(tmp_path / "out" / "page.html").headings["h2"]
    shown = " ".join(read_page(tmp_path / "out" / "page.html").text)
    assert f"adacal report {preds} --quick --bootstrap 0 --method temperature" in shown  # the page's own command


@pytest.mark.parametrize("argv, fragment", [
    (["missing.npz"], "no such file or folder"),
    (["{preds}", "--out", "{tmp}/page.pdf"], "Expected --out to be an .html file"),
    (["{preds}", "--method", "plat"], "Did you mean 'platt'"),
    (["{preds}", "--bootstrap", "-3"], "--bootstrap"),
    (["{preds}", "{preds}"], "Expected each INPUT once"),
    (["{preds}", "--val", "{tmp}/nothing.npz"], "Expected --val to be a predictions file"),
    (["{preds}", "--data-dir", "{tmp}/no-data"], "Expected --data-dir to be the folder"),
    (["{preds}", "--data-dir", "{tmp}"], "Expected --data-dir with a run folder"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    preds = predictions_file(tmp_path / "p.npz", n=30)
    before = snapshot(tmp_path)
    args = [part.format(preds=preds, tmp=tmp_path) for part in argv]
    one_line_error(runner.invoke(app, ["report", *args]), fragment)
    assert snapshot(tmp_path) == before


def test_help_names_the_command_and_its_example():
    result = runner.invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "adacal report runs/ce runs/adafocal" in text and "--val" in text and "--quick" in text
