"""The later losses' own papers beside the CIFAR-10 table: each figure as the paper's CE → loss, and the relative
change of ECE-EW from CE there and in adacal's table, worked by hand."""

from __future__ import annotations

from benchmark_scripts import load_benchmark_script

qs = load_benchmark_script("quality_summary")


def _row(loss: str, ece_ew: float) -> dict:
    return {"loss": loss, "arm": "mean", "figures": {"ece_ew": {"mean": ece_ew, "std": 0.0, "n": 3}}}


def test_relative_changes_are_those_of_the_papers_table_and_of_ours():
    papers = {"mbls": {"source": "s", "ce": {"error": 6.80, "ece_ew_pre": 5.85, "ece_em_pre": 5.84},
                       "loss": {"error": 4.75, "ece_ew_pre": 1.16, "ece_em_pre": 3.18}}}
    summary = [_row("ce", 0.0600), _row("mbls", 0.0450), {**_row("mbls", 0.01), "arm": "sum-clip"}]
    header, (row,) = qs.later_paper_rows(papers, summary)
    cell = dict(zip(header, row))
    assert cell["loss"] == "MbLS"
    assert cell["error (paper: CE → loss)"] == "6.80 → 4.75"
    assert cell["AECE (paper: CE → loss)"] == "5.84 → 3.18"
    assert cell["ECE-EW post-T (paper: CE → loss)"] == "–"  # the paper gives none
    assert cell["ECE-EW vs CE, paper"] == "-80 %"  # (1.16 − 5.85) / 5.85 = −0.802
    assert cell["ECE-EW vs CE, here"] == "-25 %"  # (4.50 − 6.00) / 6.00, the mean arm only


def test_a_loss_not_trained_here_or_without_figures_shows_dashes():
    papers = {"cals": {"source": "none", "ce": {}, "loss": {}}}
    header, (row,) = qs.later_paper_rows(papers, [_row("ce", 0.06)])
    assert row[1:] == ["–"] * (len(header) - 1)


def test_every_loss_published_after_adafocal_in_the_table_has_its_papers_entry():
    later = {"dual-focal-5", "mbls", "acls", "cals", "mdca", "confidence-penalty"}
    assert set(qs.LATER_PAPERS_CIFAR10) == later
    for loss, paper in qs.LATER_PAPERS_CIFAR10.items():
        assert paper["source"] and set(paper["ce"]) == set(paper["loss"]), loss
