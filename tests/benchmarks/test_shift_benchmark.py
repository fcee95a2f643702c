"""benchmarks/shift_cifar10.py: the summary over seeds and the paired comparison with temperature-scaled CE, worked by
hand on made-up result files; the summary rebuilt from result files alone (--summary-only)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


shift_cifar10 = _load("shift_cifar10")


def _results(clean: float, by_severity: dict[int, float], *, post_scale: float, temperature: float) -> dict:
    """Shift results whose ECE-EM is `clean` on the clean set and the given mean per severity (two corruptions at
    mean ± 0.01); after T every value times `post_scale`."""
    from adacal.shift import by_severity as summary

    def metrics(value):
        return {"error": 0.2, "nll": 0.5, "ece_em": value, "ece_ew": value, "ece_debias": value}

    sets = []
    for severity, mean in by_severity.items():
        for corruption, delta in (("fog", -0.01), ("contrast", 0.01)):
            sets.append({"corruption": corruption, "severity": severity, "source": "generated", "n": 10,
                         "pre": metrics(mean + delta), "post": metrics((mean + delta) * post_scale)})
    return {"dataset": "cifar10", "n": 10, "temperature": temperature, "temperature_source": "fitted",
            "clean": {"n": 10, "pre": metrics(clean), "post": metrics(clean * post_scale)}, "sets": sets,
            "by_severity": summary(sets, sorted(by_severity)), "sources": {"generated": ["contrast", "fog"]}}


def _entries():
    ce = [_results(0.06, {1: 0.10, 5: 0.30}, post_scale=0.5, temperature=1.4),
          _results(0.08, {1: 0.12, 5: 0.34}, post_scale=0.5, temperature=1.5)]
    ada = [_results(0.02, {1: 0.04, 5: 0.12}, post_scale=1.0, temperature=1.0),
           _results(0.02, {1: 0.06, 5: 0.16}, post_scale=1.0, temperature=1.0)]
    return ([{"loss": "ce", "seed": s, "results": r} for s, r in enumerate(ce)]
            + [{"loss": "adafocal", "seed": s, "results": r} for s, r in enumerate(ada)])


def test_summary_is_the_mean_over_corruptions_then_over_seeds():
    summary = shift_cifar10.summarise(_entries(), ["ce", "adafocal"])
    ce = summary["per_loss"]["ce"]
    assert ce["seeds"] == [0, 1] and ce["temperature"]["mean"] == pytest.approx(1.45)
    assert ce["ece_em_pre"]["0"]["mean"] == pytest.approx(0.07) and ce["ece_em_pre"]["5"]["mean"] == pytest.approx(0.32)
    assert ce["ece_em_pre"]["5"]["std"] == pytest.approx(0.04 / 2 ** 0.5)  # 0.30 and 0.34
    assert ce["ece_em_post"]["5"]["mean"] == pytest.approx(0.16)


def test_adafocal_is_compared_with_temperature_scaled_ce_seed_by_seed():
    paired = shift_cifar10.summarise(_entries(), ["ce", "adafocal"])["ece_em_paired_with_ce_post_t"]
    as_trained = paired["adafocal_pre_minus_ce_post"]
    # severity 5: seed 0 0.12 - 0.15, seed 1 0.16 - 0.17; clean: 0.02 - 0.03, 0.02 - 0.04
    assert as_trained["5"]["values"] == pytest.approx([-0.03, -0.01])
    assert as_trained["5"]["mean"] == pytest.approx(-0.02)
    assert as_trained["0"]["values"] == pytest.approx([-0.01, -0.02])


def test_the_paired_table_prints_points_with_their_sign(capsys):
    shift_cifar10.print_paired_table(shift_cifar10.summarise(_entries(), ["ce", "adafocal"]))
    lines = capsys.readouterr().out.splitlines()
    as_trained = next(line for line in lines if "as trained" in line)
    # clean: -0.01, -0.02 → -1.50 ± 0.71 points; severity 5: -0.03, -0.01 → -2.00 ± 1.41
    assert as_trained.startswith("| AdaFocal as trained − CE + T | 2 | -1.50 ± 0.71 |")
    assert as_trained.endswith("| -2.00 ± 1.41 |")
    after_t = next(line for line in lines if "AdaFocal + T" in line)
    # after T AdaFocal is unchanged (post_scale 1): severity 5 0.12 - 0.15, 0.16 - 0.17 again
    assert after_t.endswith("| -2.00 ± 1.41 |")


def test_a_variant_with_no_seed_paired_with_ce_is_left_out_of_the_paired_table(capsys):
    entries = _entries() + [{"loss": "adafocal-g0-lam3", "seed": 7, "results": _entries()[2]["results"]}]
    shift_cifar10.print_paired_table(shift_cifar10.summarise(entries, ["ce", "adafocal", "adafocal-g0-lam3"]))
    out = capsys.readouterr().out
    assert "AdaFocal as trained" in out and "λ3" not in out  # seed 7 has no CE run to pair with


def test_summary_only_rebuilds_from_the_result_files(tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    args = shift_cifar10.build_parser().parse_args([])
    key = shift_cifar10.shift_key(args)
    for entry in _entries():
        record = {"schema": shift_cifar10.RESULT_SCHEMA, "key": key, **entry}
        (runs / f"{entry['loss']}-seed{entry['seed']}.json").write_text(json.dumps(record))
    (runs / "ce-seed9.json").write_text(json.dumps({"schema": shift_cifar10.RESULT_SCHEMA, "key": "other"}))
    code = shift_cifar10.main(["--summary-only", "--losses", "ce,adafocal", "--seeds", "0,1,9", "--runs-dir",
                               str(runs), "--results", str(tmp_path / "summary.json"), "--plots",
                               str(tmp_path / "plots")])
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["runs"]) == 4  # the file of another key is not counted
    assert (tmp_path / "plots" / "shift_cifar10_ece_em.png").is_file()
    assert "AdaFocal" in capsys.readouterr().out
