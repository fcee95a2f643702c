"""Selective-prediction metrics (adacal.metrics.selective): hand-worked figures with a tie, slow loop transcriptions of
the papers' definitions (Geifman & El-Yaniv 2017, Geifman et al. 2019, Traub et al. 2024) on random data with ties,
TorchUncertainty's `risk_coverage.py` formulas on tie-free data, invariants, the top-label path, the meter, the
bootstrap, names and their refusals, one sort for all of them, and `evaluate --metrics`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from adacal.cli import app
from adacal.errors import InputError
from adacal.metrics import (
    CalibrationMeter,
    bootstrap,
    compute_metrics,
    coverage_at_risk,
    prepare_confidences,
    prepare_predictions,
    resolve_metric_names,
    risk_at_coverage,
    risk_coverage_curve,
    top_label_metrics,
)
from adacal.metrics.calibration import display_name, is_fraction_metric, metric_key
from adacal.metrics.selective import oracle_aurc
from cli_helpers import one_line_error, runner

ALL = "aurc,e-aurc,augrc,auroc-correct,risk@80,risk@50,coverage@30,coverage@0,coverage@40"
# Confidences 0.9, 0.8, 0.8 (tied), 0.6, 0.5; right, right, wrong, right, wrong.
CONF = [0.9, 0.8, 0.8, 0.6, 0.5]
RIGHT = [1, 1, 0, 1, 0]
PROBS = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
LABELS = [0, 0, 0, 0, 1]  # row 2 predicts class 1 (wrong), row 4 predicts class 0 on the tie (wrong)


def test_hand_worked_five_samples_with_a_tie():
    """Thresholds 0.9, 0.8, 0.6, 0.5 accept 1, 3, 4, 5 samples with 0, 1, 1, 2 errors: coverage 0.2, 0.6, 0.8, 1;
    selective risk 0, 1/3, 1/4, 2/5; generalized risk 0, 0.2, 0.2, 0.4. The tied 0.8s are accepted together: the
    curve never passes through coverage 0.4."""
    curve = risk_coverage_curve(PROBS, LABELS)
    assert curve.coverage.tolist() == [0.2, 0.6, 0.8, 1.0]
    assert curve.risk.tolist() == pytest.approx([0, 1 / 3, 1 / 4, 2 / 5], abs=1e-15)
    m = compute_metrics(PROBS, LABELS, names=ALL)
    assert m["aurc"] == pytest.approx(0.2 * 0 + 0.4 / 3 + 0.2 / 4 + 0.2 * 2 / 5, abs=1e-15)
    assert m["e_aurc"] == pytest.approx(m["aurc"] - (1 / 4 + 2 / 5) / 5, abs=1e-15)  # oracle: 3 right first
    assert m["augrc"] == pytest.approx(0.4 * 0.1 + 0.2 * 0.2 + 0.2 * 0.3, abs=1e-15)  # trapezoids from (0, 0)
    assert m["auroc_correct"] == pytest.approx(4.5 / 6, abs=1e-15)  # 0.9: 2; 0.8: 0.5 + 1; 0.6: 1
    assert m["risk_at_80"] == pytest.approx(0.25) and m["risk_at_50"] == pytest.approx(1 / 3)  # 50 % -> 0.6
    assert m["coverage_at_30"] == 0.8 and m["coverage_at_0"] == 0.2 and m["coverage_at_40"] == 1.0
    assert risk_at_coverage(PROBS, LABELS, coverage=80) == pytest.approx(0.25)
    assert coverage_at_risk(PROBS, LABELS, risk=30) == 0.8


def test_coverage_at_risk_none_reaches_is_zero():
    # The most confident answer is wrong: no threshold has selective risk 0 ... or ≤ 10 %.
    m = top_label_metrics([0.9, 0.7, 0.6], [0, 1, 1], names="coverage@0,coverage@10,coverage@34")
    assert m == {"coverage_at_0": 0.0, "coverage_at_10": 0.0, "coverage_at_34": 1.0}


# ----- slow loop transcriptions of the papers' definitions ---------------------------------------------------------

def _slow_points(conf, right):
    """For each distinct confidence τ from the highest down: (accepted, errors) of {conf ≥ τ}, by loops."""
    points = []
    for tau in sorted(set(conf), reverse=True):
        accepted = errors = 0
        for c, r in zip(conf, right):
            if c >= tau:
                accepted += 1
                errors += 1 - r
        points.append((accepted, errors))
    return points


def slow_aurc(conf, right):
    """Geifman & El-Yaniv / Geifman et al.: AURC = (1/N) Σ_{i=1}^{N} risk at coverage i/N, where coverage i/N is
    reached by the smallest accepted set {conf ≥ τ} holding at least i samples (ties accepted together)."""
    n = len(conf)
    points = _slow_points(conf, right)
    total = 0.0
    for i in range(1, n + 1):
        accepted, errors = next(p for p in points if p[0] >= i)
        total += errors / accepted
    return total / n


def slow_oracle_aurc(right):
    """The oracle CSF of Geifman et al. 2019: every right answer strictly ranked above every wrong one."""
    order = sorted(range(len(right)), key=lambda k: -right[k])
    total, errors = 0.0, 0
    for i, k in enumerate(order, 1):
        errors += 1 - right[k]
        total += errors / i
    return total / len(right)


def slow_augrc(conf, right):
    """Traub et al. 2024: area under generalized risk (errors accepted / N) against coverage, trapezoids through
    (0, 0) and every threshold's point."""
    n = len(conf)
    area, last_c, last_g = 0.0, 0.0, 0.0
    for accepted, errors in _slow_points(conf, right):
        c, g = accepted / n, errors / n
        area += (c - last_c) * (g + last_g) / 2
        last_c, last_g = c, g
    return area


def slow_risk_at(conf, right, percent):
    n = len(conf)
    for accepted, errors in _slow_points(conf, right):
        if accepted / n >= percent / 100 - 1e-12:
            return errors / accepted
    raise AssertionError


def slow_coverage_at(conf, right, percent):
    best = 0.0
    for accepted, errors in _slow_points(conf, right):
        if errors / accepted <= percent / 100 + 1e-12:
            best = max(best, accepted / len(conf))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_kernels_agree_with_loop_transcriptions_on_random_data_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    conf = np.round(rng.uniform(0.3, 1.0, size=n), 1 + seed % 3)  # rounded: many ties
    right = (rng.uniform(size=n) < conf).astype(int)
    if right.all() or not right.any():
        right[0] = 1 - right[0]
    m = top_label_metrics(conf, right, names="aurc,e-aurc,augrc,auroc-correct,risk@80,risk@33,coverage@10,"
                                               "coverage@25")
    c, r = conf.tolist(), right.tolist()
    assert m["aurc"] == pytest.approx(slow_aurc(c, r), abs=1e-12)
    assert m["e_aurc"] == pytest.approx(slow_aurc(c, r) - slow_oracle_aurc(r), abs=1e-12)
    assert m["augrc"] == pytest.approx(slow_augrc(c, r), abs=1e-12)
    assert m["auroc_correct"] == pytest.approx(roc_auc_score(right, conf), abs=1e-12)
    assert m["risk_at_80"] == pytest.approx(slow_risk_at(c, r, 80), abs=1e-12)
    assert m["risk_at_33"] == pytest.approx(slow_risk_at(c, r, 33), abs=1e-12)
    assert m["coverage_at_10"] == pytest.approx(slow_coverage_at(c, r, 10), abs=1e-12)
    assert m["coverage_at_25"] == pytest.approx(slow_coverage_at(c, r, 25), abs=1e-12)
    assert oracle_aurc(n, int(right.sum())) == pytest.approx(slow_oracle_aurc(r), abs=1e-12)


# ----- TorchUncertainty's risk_coverage.py, its formulas transcribed (tie-free data, where its argsort is exact) ---

def _tu_error_rates(conf, errors):
    order = np.argsort(-conf, kind="stable")
    return np.cumsum(errors[order]) / np.arange(1, conf.size + 1)


def _trapezoid(x, y):
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


def test_torch_uncertainty_formulas_on_tie_free_data():
    """TorchUncertainty: AURC = trapezoid of the selective risk over coverage 1/N … 1, divided by 1 − 1/N; AUGRC the
    same of risk × coverage; RiskAtxCov = error_rates[ceil(N c) − 1]; CovAtxRisk the largest coverage with risk ≤ x.
    Here AURC is the papers' mean (1/N) Σ r_i, so AURC = (TU·(N − 1) + (r_1 + r_N) / 2) / N exactly, and AUGRC
    starts its trapezoids at (0, 0): AUGRC = TU·(N − 1)/N + g_1 / (2N)."""
    rng = np.random.default_rng(7)
    n = 500
    conf = rng.permutation(np.linspace(0.2, 0.99, n))  # distinct
    errors = (rng.uniform(size=n) > conf).astype(float)
    r = _tu_error_rates(conf, errors)
    cov = np.arange(1, n + 1) / n
    tu_aurc = _trapezoid(cov, r) / (1 - 1 / n)
    tu_augrc = _trapezoid(cov, r * cov) / (1 - 1 / n)
    m = top_label_metrics(conf, 1 - errors, names="aurc,augrc,risk@80,risk@37.3,coverage@20")
    assert m["aurc"] == pytest.approx((tu_aurc * (n - 1) + (r[0] + r[-1]) / 2) / n, abs=1e-12)
    assert m["augrc"] == pytest.approx(tu_augrc * (n - 1) / n + r[0] / n / (2 * n), abs=1e-12)
    assert abs(m["aurc"] - tu_aurc) < 2 / n  # the two integrations differ by O(1/N)
    assert m["risk_at_80"] == r[int(np.ceil(n * 0.8)) - 1]
    assert m["risk_at_37_3"] == r[int(np.ceil(n * 0.373)) - 1]
    assert m["coverage_at_20"] == cov[np.flatnonzero(r <= 0.2)[-1]]


# ----- invariants --------------------------------------------------------------------------------------------------

def test_invariants():
    rng = np.random.default_rng(3)
    n = 2000
    right = rng.uniform(size=n) < 0.7
    perfect = np.where(right, rng.uniform(0.6, 1.0, n), rng.uniform(0.1, 0.5, n))  # distinct, right above wrong
    m = top_label_metrics(perfect, right, names="e-aurc,auroc-correct,aurc")
    assert abs(m["e_aurc"]) < 1e-15 and m["auroc_correct"] == 1.0
    error = 1 - right.mean()  # the exact oracle is the continuous limit r + (1 − r) ln(1 − r) plus about r / (2N)
    gap = m["aurc"] - (error + (1 - error) * np.log(1 - error))
    assert 0 < gap < 1 / n

    everything = top_label_metrics(perfect, np.ones(n), names="aurc,augrc,e-aurc,risk@50,coverage@0")
    assert everything == {"aurc": 0.0, "augrc": 0.0, "e_aurc": 0.0, "risk_at_50": 0.0, "coverage_at_0": 1.0}

    good = np.where(right, rng.uniform(0.4, 1.0, n), rng.uniform(0.1, 0.7, n))
    reversed_ = top_label_metrics(1.0 - good, right, names="aurc")["aurc"]
    forward = top_label_metrics(good, right, names="aurc,augrc,e-aurc")
    assert reversed_ > forward["aurc"] and forward["augrc"] <= forward["aurc"] and forward["e_aurc"] >= 0
    # The oracle AUGRC is exactly error² / 2 (trapezoids from (0, 0)).
    assert top_label_metrics(perfect, right, names="augrc")["augrc"] == pytest.approx(error**2 / 2, abs=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_augrc_never_exceeds_aurc_and_shuffling_changes_nothing(seed):
    rng = np.random.default_rng(seed)
    conf = np.round(rng.uniform(size=400), 2)
    right = rng.uniform(size=400) < 0.6
    m = top_label_metrics(conf, right, names="aurc,augrc,e-aurc")
    assert m["augrc"] <= m["aurc"] + 1e-15
    perm = rng.permutation(400)
    assert top_label_metrics(conf[perm], right[perm], names="aurc,augrc,e-aurc") == pytest.approx(m, abs=1e-15)


# ----- the same figures from (N, K) scores, top-label pairs, the meter, the bootstrap -------------------------------

def test_top_label_pairs_give_the_figures_of_the_scores_they_came_from():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(600, 5))
    logits[:, 0] = np.round(logits[:, 0], 1)
    labels = rng.integers(0, 5, size=600)
    probs = np.round(np.exp(logits) / np.exp(logits).sum(1, keepdims=True), 3)  # rounding makes tied rows
    probs /= probs.sum(1, keepdims=True)
    pred = prepare_predictions(probs, labels)
    names = "aurc,e-aurc,augrc,auroc-correct,risk@90,coverage@50"
    from_scores = compute_metrics(probs, labels, names=names)
    assert top_label_metrics(pred.confidences, pred.hits, names=names) == from_scores
    meter = CalibrationMeter(names=names)
    for start in range(0, 600, 128):
        meter.update(probs[start:start + 128], labels[start:start + 128])
    assert meter.compute() == pytest.approx(from_scores, abs=1e-15)


def test_bootstrap_intervals_bracket_and_are_seeded():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(300, 3))
    labels = rng.integers(0, 3, size=300)
    logits[np.arange(300), labels] += 1.0
    a = bootstrap(logits, labels, "aurc,risk@80,auroc-correct", n_resamples=60, seed=1)
    b = bootstrap(logits, labels, "aurc,risk@80,auroc-correct", n_resamples=60, seed=1)
    point = compute_metrics(logits, labels, names="aurc,risk@80,auroc-correct")
    assert a == b and set(a) == set(point)
    for key, value in point.items():
        assert a[key]["low"] <= value <= a[key]["high"] and a[key]["std"] > 0


def test_bootstrap_of_auroc_correct_leaves_out_resamples_where_it_is_undefined():
    """30 answers, one wrong: about a third of the resamples hold no wrong answer. They are left out of the AUROC's
    interval (not refused), and the other resamples are the same rows as the other metrics'."""
    conf = np.linspace(0.5, 0.99, 30)
    probs = np.column_stack([conf, 1 - conf])
    labels = np.zeros(30, dtype=int)
    labels[10] = 1
    intervals = bootstrap(probs, labels, "auroc-correct,aurc", n_resamples=200, seed=3)
    assert list(intervals) == ["auroc_correct", "aurc"]
    rng = np.random.default_rng(3)
    right = labels == 0
    aucs, aurcs = [], []
    for _ in range(200):
        index = np.sort(rng.integers(0, 30, size=30))
        aurcs.append(slow_aurc(conf[index].tolist(), right[index].astype(int).tolist()))
        if not right[index].all():
            aucs.append(roc_auc_score(right[index], conf[index]))
    assert 100 < len(aucs) < 180
    assert intervals["auroc_correct"]["low"] == pytest.approx(np.quantile(aucs, 0.025), abs=1e-12)
    assert intervals["aurc"]["high"] == pytest.approx(np.quantile(aurcs, 0.975), abs=1e-12)


# ----- names -------------------------------------------------------------------------------------------------------

def test_names_spellings_and_keys():
    assert resolve_metric_names("AURC,e_aurc,risk@80,Risk-at-80,risk_at_99.5,coverage@5,coverage@0.5%") == (
        "aurc", "e-aurc", "risk@80", "risk@99.5", "coverage@5", "coverage@0.5%")
    assert [metric_key(n) for n in ("risk@80", "risk@99.5", "coverage@0.5%", "e-aurc")] == [
        "risk_at_80", "risk_at_99_5", "coverage_at_0_5pct", "e_aurc"]
    for key in ("risk_at_80", "risk_at_99_5", "coverage_at_0_5pct"):  # report keys read back to themselves
        assert metric_key(key) == key
    assert [display_name(n) for n in ("risk_at_80", "e_aurc", "augrc", "auroc-correct")] == [
        "Risk@80", "E-AURC", "AUGRC", "AUROC-CORRECT"]
    assert is_fraction_metric("coverage@5") and is_fraction_metric("AURC") and not is_fraction_metric("nll")
    assert "aurc" not in resolve_metric_names(None)  # by name only: the default report is unchanged


@pytest.mark.parametrize("name, fragment", [
    ("risk@0", "(0, 100]"), ("risk@150", "(0, 100]"), ("risk@abc", "'abc'"), ("risk@", "''"),
    ("coverage@-1", "[0, 100]"), ("risk@0.8", "fraction"), ("coverage@0.05", "fraction"),
])
def test_bad_parameters_are_one_line_errors(name, fragment):
    for resolve in (resolve_metric_names, lambda n: top_label_metrics([0.9], [1], names=n)):
        with pytest.raises(InputError, match="Expected the") as info:
            resolve(name)
        assert fragment in str(info.value) and "\n" not in str(info.value)


def test_auroc_correct_undefined_with_one_class():
    with pytest.raises(InputError, match="both correct and wrong"):
        compute_metrics([[0.9, 0.1], [0.7, 0.3]], [0, 0], names="auroc-correct")
    assert top_label_metrics([0.9, 0.7], [1, 1], names="auroc-correct,aurc") == {"aurc": 0.0}


# ----- one sort for all of them ------------------------------------------------------------------------------------

def test_one_sort_for_every_selective_metric_and_the_equal_mass_ece(monkeypatch):
    """N = 10^6: the confidences are sorted once (the equal-mass ECE's sort, shared); the kernels call no sort."""
    import adacal.metrics.prepared as prepared

    rng = np.random.default_rng(0)
    n = 10**6
    pred = prepare_confidences(np.round(rng.uniform(size=n), 4), rng.uniform(size=n) < 0.8)
    calls = []
    original = prepared.sorted_with_cumulative_hits
    monkeypatch.setattr(prepared, "sorted_with_cumulative_hits", lambda *a: calls.append(1) or original(*a))
    _ = pred.sorted_confidences
    assert len(calls) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("a selective kernel sorted")

    for name in ("sort", "argsort", "lexsort", "unique", "partition", "argpartition"):
        monkeypatch.setattr(np, name, refuse)
    from adacal.metrics.calibration import compute_prepared

    names = resolve_metric_names(ALL)
    values = compute_prepared(pred, (*names, "ece-em"), 15)
    assert len(calls) == 1 and all(np.isfinite(v) for v in values.values())


# ----- evaluate --metrics ------------------------------------------------------------------------------------------

def test_evaluate_shows_selective_metrics_in_percent(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=120)
    logits = rng.normal(size=(120, 4))
    logits[np.arange(120), labels] += 1.5
    path, out = tmp_path / "preds.npz", tmp_path / "r.json"
    np.savez(path, logits=logits, labels=labels)
    result = runner.invoke(app, ["evaluate", str(path), "--metrics", "aurc,augrc,risk@80,coverage@5,auroc-correct",
                                 "--bootstrap", "20", "--json", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())["results"]["metrics"]
    assert list(metrics) == ["aurc", "augrc", "risk_at_80", "coverage_at_5", "auroc_correct"]
    expected = compute_metrics(logits, labels, names="aurc,risk@80")
    row = next(line for line in result.stdout.splitlines() if "Risk@80" in line)
    assert f"{100 * expected['risk_at_80']:.2f}" in row and "%" in row
    assert f"{100 * expected['aurc']:.2f}" in next(line for line in result.stdout.splitlines() if "AURC " in line)
    one_line_error(runner.invoke(app, ["evaluate", str(path), "--metrics", "risk@0.8"]), "risk@80", "fraction")


def test_evaluate_top_label_file_reports_parameterised_metrics(tmp_path):
    path, out = tmp_path / "answers.jsonl", tmp_path / "r.json"
    path.write_text("".join(json.dumps({"confidence": c, "correct": bool(r)}) + "\n" for c, r in zip(CONF, RIGHT)))
    result = runner.invoke(app, ["evaluate", str(path), "--metrics", "risk@80,aurc,coverage@30", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["config"]["metrics"] == ["risk@80", "aurc", "coverage@30"]
    assert report["results"]["metrics"] == pytest.approx({"risk_at_80": 0.25, "aurc": 0.7900 / 3,
                                                          "coverage_at_30": 0.8}, abs=1e-12)
    assert "Risk@80" in result.stdout and "Coverage@30" in result.stdout
    one_line_error(runner.invoke(app, ["evaluate", str(path), "--metrics", "risk"]), "risk@80")


def test_quiet_line_and_selection_metric(tmp_path):
    from adacal.calibrators.compare import check_selection

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, size=90)
    logits = rng.normal(size=(90, 3))
    logits[np.arange(90), labels] += 1.5
    path = tmp_path / "p.npz"
    np.savez(path, logits=logits, labels=labels)
    result = runner.invoke(app, ["evaluate", str(path), "--metrics", "risk@80,aurc", "-q"])
    risk = compute_metrics(logits, labels, names="risk@80")["risk_at_80"]
    assert result.exit_code == 0 and result.stdout.startswith(f"Risk@80 {100 * risk:.2f}%"), result.output
    assert check_selection("aurc", 5) == "aurc" and check_selection("risk@90", 5) == "risk@90"  # lower is better
    for name in ("auroc-correct", "coverage@5"):  # the selection takes the lowest value: refused
        with pytest.raises(InputError, match="lower is better"):
            check_selection(name, 5)


def test_decimal_percentages_meet_their_exact_boundaries():
    """risk@65.4% on 1000 samples accepts exactly 654 (65.4 × 1000 is 65400.00000000001 in floats), and
    coverage@R compares e / n ≤ R % exactly; checked against rational arithmetic for every tenth of a percent."""
    from fractions import Fraction
    from math import ceil

    n = 1000  # a tenth of a percent of 1000 is a whole sample: every boundary is met exactly
    conf = np.linspace(0.99, 0.01, n)  # distinct, descending: the top i samples are accepted at the i-th
    right = np.ones(n, dtype=bool)
    right[[0, 3, 9, 27, 60, 250, 251, 499, 700, 999]] = False
    errors = np.cumsum(~right)
    names = [f"risk@{p / 10:g}%" for p in range(3, 1001, 7)] + [f"coverage@{p / 10:g}%" for p in range(0, 1001, 7)]
    m = top_label_metrics(conf, right, names=",".join(names))
    for name in names:
        family, text = name.rstrip("%").split("@")
        p = Fraction(text)
        if family == "risk":
            i = ceil(p * n / 100)
            assert m[metric_key(name)] == errors[i - 1] / i, name
        else:
            ok = [i for i in range(1, n + 1) if Fraction(int(errors[i - 1]), i) <= p / 100]
            assert m[metric_key(name)] == (ok[-1] / n if ok else 0.0), name
