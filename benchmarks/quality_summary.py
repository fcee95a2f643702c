"""The quality benchmarks' summaries, rebuilt from the result files alone: mean ± std over seeds per loss and arm
(`summarise`), the tables (`table_rows`, `text_table`, `markdown_table`, `per_bin_table`), the paper's figures beside
them (`paper_rows`) and the figures (`draw_figures`). Metrics are fractions; tables show %.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from quality_analysis import flat_figures
from quality_protocol import DISPLAY, LOSS_SPECS, repo_relative


# ------------------------------------------------------------------------------------------------ summaries


def mean_std(values: list[Any]) -> dict[str, Any]:
    """Mean and sample standard deviation (ddof = 1; None for one value) of the finite values."""
    values = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    std = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def summarise(entries: list[dict[str, Any]], losses: list[str], arms: list[str]) -> list[dict[str, Any]]:
    """One row per (loss, arm) with results: seeds and mean ± std of every figure. Runs of other options (another
    key for the same cell) never get here: `collect` keeps only the files holding the current key."""
    rows = []
    for arm in arms:
        for loss in losses:
            chosen = sorted((e for e in entries if e["loss"] == loss and e["arm"] == arm), key=lambda e: e["seed"])
            if not chosen:
                continue
            flats = [flat_figures(e) for e in chosen]
            keys = list(dict.fromkeys(k for f in flats for k in f))
            devices = [device_of(e) for e in chosen]
            figures = {k: mean_std([f.get(k) for f in flats]) for k in keys}
            if len(set(devices)) > 1:  # a mean of CPU and GPU times means nothing: per device only
                figures.pop("train_seconds", None)
            rows.append({"loss": loss, "arm": arm, "seeds": [e["seed"] for e in chosen], "devices": devices,
                         "figures": figures,
                         # a GPU run takes a small fraction of a CPU run's time: times are only averaged per device
                         "train_seconds_by_device": {
                             d: mean_std([f.get("train_seconds") for f, e in zip(flats, devices) if e == d])
                             for d in dict.fromkeys(devices)}})
    return rows


def device_of(entry: dict[str, Any]) -> str:
    """Where a result's run trained, as training times are grouped: the GPU's name for a CUDA run (cuda and cuda:0 on
    the same card are one group, two kinds of card are two), 'cpu', or 'mixed' for a run resumed on another device.
    Results written before the device was recorded ran on the CPU, the only device the grid ran on then."""
    machine = entry.get("machine") or {}
    device = str(machine.get("device") or "cpu")
    if device.startswith("cuda"):
        return str(machine.get("gpu") or "cuda")
    return device


def _time_cell(row: dict[str, Any]) -> str:
    by_device = row.get("train_seconds_by_device") or {}
    if not by_device or list(by_device) == ["cpu"]:
        return _cell(row["figures"].get("train_seconds"), 1.0, 0)
    return " · ".join(f"{_cell(stat, 1.0, 0)} ({device})" for device, stat in by_device.items())


def _cell(stat: dict[str, Any] | None, scale: float = 100.0, digits: int = 2) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    text = f"{scale * stat['mean']:.{digits}f}"
    if stat.get("std") is not None:
        text += f" ± {scale * stat['std']:.{digits}f}"
    return text


TABLE_COLUMNS = (("error", "error", 100.0, 2), ("nll", "NLL", 1.0, 3), ("ece_em", "ECE-EM", 100.0, 2),
                 ("ece_ew", "ECE-EW", 100.0, 2), ("ece_debias", "ECE-debias", 100.0, 2),
                 ("ece_sweep_em", "ECE-sweep-EM", 100.0, 2), ("t_ece_em", "T (grid ECE-EM)", 1.0, 2),
                 ("ece_em_ts_ece_em", "ECE-EM post-T grid", 100.0, 2),
                 ("ece_debias_ts_ece_em", "ECE-debias post-T grid", 100.0, 2), ("t_nll", "T (NLL)", 1.0, 2),
                 ("ece_em_ts_nll", "ECE-EM post-T NLL", 100.0, 2), ("nll_ts_nll", "NLL post-T NLL", 1.0, 3))
OOD_COLUMNS = (("ood_auroc", "OOD AUROC", 100.0, 2), ("ood_auroc_ts_ece_em", "OOD AUROC post-T grid", 100.0, 2))


def table_rows(summary: list[dict[str, Any]], *, with_ood: bool) -> tuple[list[str], list[list[str]]]:
    columns = TABLE_COLUMNS + (OOD_COLUMNS if with_ood else ())
    header = ["loss", "arm", "seeds"] + [title for _, title, _, _ in columns] + ["train s/run"]
    rows = []
    for row in summary:
        f = row["figures"]
        rows.append([DISPLAY.get(row["loss"], row["loss"]), row["arm"], ",".join(map(str, row["seeds"]))]
                    + [_cell(f.get(key), scale, digits) for key, _, scale, digits in columns]
                    + [_time_cell(row)])
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def per_bin_table(bins: dict[str, Any]) -> str:
    """AdaFocal's last update per validation bin: edges, C_val, A_val, E_val (%), γ after the update."""
    header = ["bin", "lower", "upper", "n", "C_val %", "A_val %", "E_val %", "γ"]
    rows = []
    edges = bins["edges"]
    for i, (c, a, e, g, n) in enumerate(zip(bins["val_confidence"], bins["val_accuracy"], bins["e_val"],
                                            bins["gammas_after_update"], bins["counts"])):
        rows.append([str(i), f"{edges[i]:.3f}", f"{edges[i + 1]:.3f}", str(n), f"{100 * c:.1f}", f"{100 * a:.1f}",
                     f"{100 * e:+.1f}", f"{g:+.2f}"])
    return text_table(header, rows)


# ------------------------------------------------------------------------------------------------ figures


# AdaFocal γ-dynamics figure: five of the 15 bins, low to high confidence, to keep the PNG small (the JSON has every
# bin; `adacal plot gamma RUN` draws all of them).
GAMMA_PLOT_BINS = (0, 4, 7, 10, 14)


def draw_figures(entries: list[dict[str, Any]], losses: list[str], arms: list[str], folder: Path, *, slug: str,
                 title: str) -> dict[str, str]:
    """From the result files alone, per arm: reliability diagrams side by side (test, before temperature scaling,
    equal-width and equal-mass bins; the lowest seed every shown loss has), validation curves with mean ± std bands
    over seeds, and AdaFocal's γ dynamics (lowest seed). PNG at dpi 100 in `folder`; returns {figure: path}."""
    from adacal.metrics.binning import BinStatistics
    from adacal.plots import gamma_dynamics, reliability_diagram, save_figure, training_curves
    from adacal.plots.reliability_diagrams import ReliabilityPanel

    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}

    def save(fig: Any, name: str) -> None:
        path = folder / f"quality_{slug}_{name}.png"
        save_figure(fig, path, dpi=100)
        written[name] = repo_relative(path)

    for arm in arms:
        mine = [e for e in entries if e["arm"] == arm]
        shown = [loss for loss in losses if any(e["loss"] == loss for e in mine)]
        if not shown:
            continue
        seeds = sorted(set.intersection(*({e["seed"] for e in mine if e["loss"] == loss} for loss in shown)))
        if seeds:
            seed = seeds[0]
            chosen = [next(e for e in mine if e["loss"] == loss and e["seed"] == seed) for loss in shown]
            for binning in ("equal-width", "equal-mass"):
                panels = []
                for e in chosen:
                    b = e["reliability_test_pre"][binning]
                    stats = BinStatistics(edges=np.asarray(b["edges"]), counts=np.asarray(b["counts"]),
                                          mean_confidence=np.asarray(b["mean_confidence"]),
                                          accuracy=np.asarray(b["accuracy"]))
                    # Titles headline the test metrics `adacal evaluate` printed for the run, whichever bars are drawn.
                    panels.append(ReliabilityPanel(label=DISPLAY[e["loss"]], stats=stats, binning=binning,
                                                   ece_em=e["test_pre"].get("ece_em"),
                                                   ece_ew=e["test_pre"].get("ece_ew")))
                save(reliability_diagram(panels, title=f"{title}, {arm} arm, seed {seed}: test set before temperature "
                                                       f"scaling ({binning} bins)"),
                     f"reliability_{binning.replace('-', '_')}_{arm.replace('-', '_')}")
        histories = {DISPLAY[loss]: [e["history"] for e in sorted(mine, key=lambda e: e["seed"]) if e["loss"] == loss]
                     for loss in shown}
        save(training_curves(histories, split="val", losses={DISPLAY[loss]: LOSS_SPECS[loss][0] for loss in shown},
                             title=f"{title}, {arm} arm: validation curves"), f"curves_{arm.replace('-', '_')}")
        ada = sorted((e for e in mine if e["loss"] == "adafocal" and "adafocal_final_bins" in e),
                     key=lambda e: e["seed"])
        if ada:
            save(gamma_dynamics(ada[0]["history"], GAMMA_PLOT_BINS,
                                title=f"AdaFocal, {title}, {arm} arm, seed {ada[0]['seed']}: E_val and γ per bin"),
                 f"adafocal_gamma_{arm.replace('-', '_')}")
    import matplotlib.pyplot as plt

    plt.close("all")
    return written


# ------------------------------------------------------------------------------------------------ the paper's figures
# Ghosh, Schaaf & Gormley, NeurIPS 2022 (paper/adafocal.tex): means over 5 seeds, in %. ECE-EM post-T uses T fitted on
# validation ECE-EM (Table "adaptive ECE"); ECE-debias / ECE-sweep-EM post-T use T fitted on validation ECE-EW (their
# appendix tables); OOD is CIFAR-10 → CIFAR-10-C Gaussian 5 with ResNet-110 (no ResNet-50 entry), post-T with T on
# ECE-EW.

PAPER_CIFAR10_RESNET50: dict[str, dict[str, float]] = {
    "ce": {"error": 4.95, "ece_em_pre": 4.24, "ece_em_post": 2.11, "temperature": 2.52, "ece_debias_pre": 4.05,
           "ece_debias_post": 1.70, "ece_sweep_em_pre": 4.05, "ece_sweep_em_post": 1.43,
           "ood_auroc_pre": 77.53, "ood_auroc_post": 75.16},
    "focal-3": {"ood_auroc_pre": 80.11, "ood_auroc_post": 79.78},
    "flsd-53": {"error": 4.98, "ece_em_pre": 1.63, "ece_em_post": 1.42, "temperature": 1.08, "ece_debias_pre": 1.62,
                "ece_debias_post": 1.62, "ece_sweep_em_pre": 1.54, "ece_sweep_em_post": 1.54,
                "ood_auroc_pre": 82.06, "ood_auroc_post": 81.38},
    "adafocal": {"error": 5.30, "ece_em_pre": 0.66, "ece_em_post": 0.44, "temperature": 1.06, "ece_debias_pre": 0.47,
                 "ece_debias_post": 0.82, "ece_sweep_em_pre": 0.04, "ece_sweep_em_post": 0.70, "ood_auroc_pre": 84.96},
    "brier": {"error": 5.00, "ece_em_pre": 1.78, "ece_em_post": 1.24, "temperature": 1.11,
              "ood_auroc_pre": 84.09, "ood_auroc_post": 83.86},
    "ls-0.05": {"error": 5.29, "ece_em_pre": 3.86, "ece_em_post": 2.97, "temperature": 0.92,
                "ood_auroc_pre": 72.17, "ood_auroc_post": 72.18},
    "mmce": {"error": 4.99, "ece_em_pre": 4.52, "ece_em_post": 2.12, "temperature": 2.65,
             "ood_auroc_pre": 71.96, "ood_auroc_post": 70.02},
}
PAPER_20NG_CNN: dict[str, dict[str, float]] = {
    "ce": {"error": 26.68, "ece_em_pre": 18.57, "ece_em_post": 4.08, "temperature": 3.78, "ece_debias_pre": 18.36,
           "ece_debias_post": 5.23, "ece_sweep_em_pre": 18.38, "ece_sweep_em_post": 5.53},
    "flsd-53": {"error": 27.98, "ece_em_pre": 8.86, "ece_em_post": 2.13, "temperature": 1.58, "ece_debias_pre": 8.94,
                "ece_debias_post": 0.94, "ece_sweep_em_pre": 8.95, "ece_sweep_em_post": 2.13},
    "adafocal": {"error": 28.53, "ece_em_pre": 2.62, "ece_em_post": 2.46, "temperature": 1.10, "ece_debias_pre": 1.84,
                 "ece_debias_post": 1.84, "ece_sweep_em_pre": 2.22, "ece_sweep_em_post": 2.22},
    "brier": {"error": 27.06, "ece_em_pre": 13.52, "ece_em_post": 3.13, "temperature": 2.33},
    "ls-0.05": {"error": 26.03, "ece_em_pre": 4.36, "ece_em_post": 2.62, "temperature": 1.12},
    "mmce": {"error": 27.23, "ece_em_pre": 15.23, "ece_em_post": 6.45, "temperature": 2.21},
}
PAPER_COLUMNS = (("error", "error"), ("ece_em_pre", "ECE-EM"), ("ece_debias_pre", "ECE-debias"),
                 ("ece_sweep_em_pre", "ECE-sweep-EM"), ("temperature", "T"), ("ece_em_post", "ECE-EM post-T"),
                 ("ece_debias_post", "ECE-debias post-T*"), ("ece_sweep_em_post", "ECE-sweep-EM post-T*"),
                 ("ood_auroc_pre", "OOD AUROC†"), ("ood_auroc_post", "OOD AUROC post-T†"))


def paper_rows(
    paper: dict[str, dict[str, float]], losses: list[str], *, with_ood: bool
) -> tuple[list[str], list[list[str]]]:
    columns = [c for c in PAPER_COLUMNS if with_ood or not c[0].startswith("ood")]
    header = ["loss (paper)"] + [title for _, title in columns]
    rows = []
    for loss in losses:
        figures = paper.get(loss)
        if not figures:
            continue
        rows.append([DISPLAY[loss]] + [("–" if key not in figures else
                                        f"{figures[key]:.2f}" if key != "temperature" else f"{figures[key]:.2f}")
                                       for key, _ in columns])
    return header, rows


# ------------------------------------------------------------------------------------- the later losses' own papers
# Each loss published after AdaFocal, as its own paper reports it on CIFAR-10 with ResNet-50 (350 / 200 epochs on the
# whole training set), in %, with cross-entropy's row of the same table: ECE-EW with 15 equal-width bins, AECE with
# 15 equal-mass bins (adacal's ECE-EM), post-T with T fitted on validation. Read from the tables the authors published
# (their posters and project pages; the PDFs' tables are the same figures as far as two cross-checks show). A
# different scale from adacal's table: compare the change from CE, not the levels.
# Cross-entropy's row of MbLS's CIFAR-10 ResNet-50 table, which ACLS's table reuses with MbLS's other rows.
_MBLS_TABLE_CE = {"error": 6.80, "ece_ew_pre": 5.85, "ece_em_pre": 5.84}
LATER_PAPERS_CIFAR10: dict[str, dict[str, Any]] = {
    "dual-focal-5": {
        "source": "Tao, Dong & Xu, ICML 2023, Table 1 (the authors' poster); no error reported; γ = 5 for ResNet-50 "
                  "(the authors' reply in Linwei94/ICML2023-DualFocalLoss#1)",
        "ce": {"ece_ew_pre": 4.35, "ece_ew_post": 1.35, "temperature": 2.5},
        "loss": {"ece_ew_pre": 0.46, "ece_ew_post": 0.46, "temperature": 1.0}},
    "mbls": {
        "source": "Liu, Ben Ayed, Galdran & Dolz, CVPR 2022, the CIFAR-10 table (the authors' poster, by-liu/MbLS); "
                  "m = 10, λ = 0.1; no post-T figures",
        "ce": _MBLS_TABLE_CE,
        "loss": {"error": 4.75, "ece_ew_pre": 1.16, "ece_em_pre": 3.18}},
    "acls": {
        "source": "Park et al., ICCV 2023, the CIFAR-10 table (the project page; its CE and older rows are MbLS's)",
        "ce": _MBLS_TABLE_CE,
        "loss": {"error": 4.60, "ece_ew_pre": 1.12, "ece_em_pre": 2.87}},
    "confidence-penalty": {
        "source": "not in Pereyra et al. 2017 as far as we found: MbLS's table (column ECP, β = 0.1), reused by ACLS",
        "ce": _MBLS_TABLE_CE,
        "loss": {"error": 5.25, "ece_ew_pre": 3.01, "ece_em_pre": 2.99}},
    "mdca": {
        "source": "MDCA's own CIFAR-10 figures not found (its repository holds no table): ACLS's rerun in MbLS's "
                  "setting (base loss and β not stated)",
        "ce": _MBLS_TABLE_CE,
        "loss": {"error": 5.16, "ece_ew_pre": 6.86, "ece_em_pre": 6.73}},
    "cals": {"source": "no CIFAR-10 experiment in Liu et al., CVPR 2023 (ImageNet, ImageNet-LT, Tiny-ImageNet, VOC, "
                       "20 Newsgroups); adacal uses the authors' defaults", "ce": {}, "loss": {}},
}
LATER_PAPER_COLUMNS = (("error", "error"), ("ece_ew_pre", "ECE-EW"), ("ece_em_pre", "AECE"),
                       ("ece_ew_post", "ECE-EW post-T"))


def later_paper_rows(papers: dict[str, dict[str, Any]], summary: list[dict[str, Any]], *, arm: str = "mean"
                     ) -> tuple[list[str], list[list[str]]]:
    """Each later loss's own paper beside this table: every figure as CE → loss from the paper's one table, and the
    relative change of ECE-EW from CE there and here (`summary`'s means, `arm`), the one comparison the two scales
    share."""
    means = {row["loss"]: row["figures"] for row in summary if row["arm"] == arm}

    def relative(before: Any, after: Any) -> str:
        if not before or after is None:
            return "–"
        change = round(100 * (after - before) / before)
        return f"{change:+d} %" if change else "0 %"

    header = ["loss", *(title + " (paper: CE → loss)" for _, title in LATER_PAPER_COLUMNS),
              "ECE-EW vs CE, paper", "ECE-EW vs CE, here"]
    rows = []
    for loss, paper in papers.items():
        ce, mine = paper["ce"], paper["loss"]
        cells = [f"{ce[key]:.2f} → {mine[key]:.2f}" if key in ce and key in mine else "–"
                 for key, _ in LATER_PAPER_COLUMNS]
        here = [(means.get(name) or {}).get("ece_ew") or {} for name in ("ce", loss)]
        rows.append([DISPLAY[loss], *cells, relative(ce.get("ece_ew_pre"), mine.get("ece_ew_pre")),
                     relative(here[0].get("mean"), here[1].get("mean"))])
    return header, rows
