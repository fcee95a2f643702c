"""The metrics, `prepare_predictions` and the meter decide the kind of scores by the per-row rule of docs/inputs.md
§2 (issue #39): one changed entry, row or value of an in-memory array keeps its reading or raises `InputError` (a
`ValueError`) naming `scores_kind=`, never a silently different figure; `scores_kind=` settles it; the meter
decides once for the stream."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.metrics import (
    CalibrationMeter,
    bootstrap,
    brier,
    classwise_ece,
    compute_metrics,
    ece_debias,
    ece_em,
    ece_ew,
    entropy_score,
    mce,
    nll,
    prepare_predictions,
    reliability,
    smooth_ece,
    top_label,
)
from adacal.metrics.rows import scan_rows
from adacal.scores_kind import RowCounts, count_from_sums, count_rows, decide_scores_kind, row_masks

RNG = np.random.default_rng(39)


def _softmax_rows(n, k=10, scale=2.0, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=scale, size=(n, k))
    labels = np.array([rng.choice(k, p=row) for row in softmax(logits)])  # calibrated: small ECE
    return logits, softmax(logits), labels


PERTURB = {
    "entry -1e-12": lambda p, r: p.__setitem__((r, 3), -1e-12),
    "all-zero row": lambda p, r: p.__setitem__(r, 0.0),
    "halved row": lambda p, r: p.__setitem__(r, p[r] / 2),
    "row x100": lambda p, r: p.__setitem__(r, p[r] * 100),
}


@pytest.mark.parametrize("n", [2, 3, 40, 300, 5000])
@pytest.mark.parametrize("how", sorted(PERTURB))
def test_one_changed_row_among_probabilities_is_refused_everywhere_not_read_as_logits(n, how):
    _, probs, labels = _softmax_rows(n, seed=n)
    row = n // 2
    broken = probs.copy()
    PERTURB[how](broken, row)
    calls = [lambda s: compute_metrics(s, labels), lambda s: ece_em(s, labels), lambda s: nll(s, labels),
             lambda s: top_label(s, labels), lambda s: prepare_predictions(s, labels),
             lambda s: bootstrap(s, labels, "ece-em", n_resamples=2), lambda s: smooth_ece(s, labels),
             lambda s: reliability(s, labels), lambda s: entropy_score(s), lambda s: decide_scores_kind(s)]
    for call in calls:
        with pytest.raises(InputError, match=rf"row {row} .*scores_kind='logits'") as raised:
            call(broken)
        assert isinstance(raised.value, ValueError) and "\n" not in str(raised.value)
    # the meter refuses the stream at compute(), naming the batch that holds the row
    meter = CalibrationMeter(names="ece-em")
    for start in range(0, n, 64):
        meter.update(broken[start:start + 64], labels[start:start + 64])
    with pytest.raises(InputError, match=rf"batches {row // 64}\b.*scores_kind='logits'"):
        meter.compute()


def test_the_issues_example_reads_its_figure_or_refuses():
    """299 softmax rows and one all-zero row: ECE-EM read the whole matrix as logits (30.9 % in the issue's case)
    instead of its 9.2 %; now refused, and with the row renormalised (or dropped) the probabilities' own figure."""
    logits, probs, labels = _softmax_rows(300, scale=1.5, seed=1)
    broken = probs.copy()
    broken[17] = 0.0
    with pytest.raises(InputError, match=r"1 of 300 rows are not \(row 17 is all zeros\)"):
        ece_em(broken, labels)
    as_logits = ece_em(broken, labels, scores_kind="logits")  # what the old reading computed, now only on request
    assert abs(as_logits - ece_em(probs, labels)) > 0.05  # a different figure, which is why auto refuses
    fixed = broken.copy()
    fixed[17] = 0.1
    assert ece_em(fixed, labels) == ece_em(fixed, labels, scores_kind="probs")


def test_binary_probabilities_with_one_stray_value_are_refused():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    stray = p.copy()
    stray[123] = -1e-9
    for call in (lambda s: ece_em(s, y), lambda s: compute_metrics(s, y), lambda s: decide_scores_kind(s)):
        with pytest.raises(InputError, match=r"only 1 of 400 values lie outside \(value -1e-09 at row 123\).*"
                                             r"scores_kind='probs' or scores_kind='logits'"):
            call(stray)
    # settled by the option: as probabilities the stray value is refused by name; as decision scores it is read so
    with pytest.raises(InputError, match="1 values are not"):
        ece_em(stray, y, scores_kind="probs")
    decision = np.stack([np.zeros(400), stray], axis=1)
    assert ece_em(stray, y, scores_kind="logits") == ece_em(decision, y)
    meter = CalibrationMeter(names="ece-em")
    meter.update(stray[:200], y[:200])
    meter.update(stray[200:], y[200:])
    with pytest.raises(InputError, match="only 1 of 400 values lie outside"):
        meter.compute()
    # clean probabilities and clean decision scores read as before
    assert ece_em(p, y) == ece_em(np.stack([1 - p, p], axis=1), y)
    s = rng.normal(scale=3, size=400)
    assert ece_em(s, y) == ece_em(np.stack([np.zeros(400), s], axis=1), y)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_clean_probabilities_and_logits_read_as_before(dtype):
    logits, probs, labels = _softmax_rows(500, k=7, seed=3)
    assert prepare_predictions(probs.astype(dtype), labels).assumed == "probs"
    assert prepare_predictions(logits.astype(dtype), labels).assumed == "logits"
    # logits with a few probability-looking rows by chance (at most 1 %) are still logits
    chance = logits.copy()
    chance[:5] = softmax(chance[:5])
    assert prepare_predictions(chance, labels).assumed == "logits"
    # two columns [0, s]: a binary model's decision scores, even where s happens to be 1
    s = np.r_[1.0, RNG.normal(size=99)]
    assert prepare_predictions(np.stack([np.zeros(100), s], axis=1), labels[:100] % 2).assumed == "logits"


def test_scores_kind_settles_and_probs_is_checked_row_by_row():
    logits, probs, labels = _softmax_rows(200, k=4, seed=4)
    nonneg = np.abs(logits) / 10  # non-negative logits whose rows sum near 1 would be refused in auto
    assert compute_metrics(probs, labels, scores_kind="probs") == compute_metrics(probs, labels)
    assert compute_metrics(logits, labels, scores_kind="logits") == compute_metrics(logits, labels)
    # "logits" means logits whatever the values: probabilities taken as logits give their softmax's figures
    assert nll(probs, labels, scores_kind="logits") == nll(np.log(softmax(probs)), labels, scores_kind="logits")
    with pytest.raises(InputError, match=r"as scores_kind='probs' says.*\(200 of 200 rows are not"):
        brier(logits, labels, scores_kind="probs")
    for metric in (ece_ew, mce, classwise_ece, ece_debias, smooth_ece):
        assert metric(nonneg, labels, scores_kind="logits") == metric(nonneg - nonneg.max(axis=1, keepdims=True),
                                                                       labels)
    with pytest.raises(InputError, match="scores_kind to be one of auto, logits, probs, got 'prob'"):
        ece_em(probs, labels, scores_kind="prob")
    meter = CalibrationMeter(scores_kind="probs")
    with pytest.raises(InputError, match="as scores_kind='probs' says"):
        meter.update(logits[:10], labels[:10])


def test_row_counts_of_the_scan_equal_the_whole_array_rule():
    """The row scan counts the kinds block by block (threads, float32's screen) as the whole-array masks do."""
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        probs = softmax(rng.normal(size=(3000, 5))).astype(dtype)
        mixed = probs.copy()
        mixed[::7] = rng.normal(size=(len(mixed[::7]), 5))  # logits
        mixed[1::11] = np.round(mixed[1::11], 2)  # near
        mixed[2::13] *= 100  # percentages
        mixed[3::17, 0] = -1e-7  # near, not probability
        for array in (probs, mixed, rng.normal(size=(3000, 5)).astype(dtype)):
            sums = np.einsum("ij->i", array, dtype=np.float64)
            probability, near, percent = row_masks(array, sums, 1e-4)
            expected = (len(array), probability.sum(), (near | probability).sum(), percent.sum())
            assert scan_rows(array, tolerance=1e-4).counts == expected
            assert count_from_sums(array, sums, 1e-4, minimum=float(array.min())) == expected
            assert count_rows(array, 1e-4) == expected
    assert RowCounts(2, 1, 1, 0).plus(RowCounts(3, 0, 2, 1)) == (5, 1, 3, 1)


def _stream(meter, scores, labels, sizes):
    start = 0
    for size in sizes:
        meter.update(scores[start:start + size], labels[start:start + size])
        start += size


def test_the_meter_decides_once_for_the_stream_and_equals_one_shot_metrics():
    logits, probs, labels = _softmax_rows(1000, k=3, seed=6)
    for scores in (logits, probs, torch.from_numpy(logits).float()):
        meter = CalibrationMeter()
        _stream(meter, scores, labels, [1, 2, 97, 300, 600])
        expected = compute_metrics(scores, labels)
        got = meter.compute()
        for key in expected:
            assert got[key] == pytest.approx(expected[key], abs=1e-12), key
    # logits whose first batches happen to be probability rows (batch size 1 and 2) are read as logits: the meter
    # kept those batches' scores and reads them again, exactly as compute_metrics reads the concatenation
    chance = logits.copy()
    chance[:3] = softmax(chance[:3])
    meter = CalibrationMeter()
    _stream(meter, chance, labels, [1, 2, 997])
    expected = compute_metrics(chance, labels)
    assert prepare_predictions(chance, labels).assumed == "logits"
    for key, value in meter.compute().items():
        assert value == pytest.approx(expected[key], abs=1e-12), key
    # ... and so with a late batch of probability rows (read as logits straight away: the stream has logits)
    late = logits.copy()
    late[-2:] = softmax(late[-2:])
    meter = CalibrationMeter()
    _stream(meter, late, labels, [998, 2])
    expected = compute_metrics(late, labels)
    for key, value in meter.compute().items():
        assert value == pytest.approx(expected[key], abs=1e-12), key


def test_the_meter_refuses_batches_it_can_no_longer_read_again(monkeypatch):
    import adacal.metrics.meter as meter_module

    logits, probs, labels = _softmax_rows(1000, k=3, seed=7)
    mixed = logits.copy()
    mixed[:8] = probs[:8]  # 0.8 % of the rows: logits by the rule
    monkeypatch.setattr(meter_module, "RAW_BUDGET", 12)  # room for 4 rows of 3 classes
    meter = CalibrationMeter()
    _stream(meter, mixed, labels, [4, 4, 992])
    with pytest.raises(InputError, match=r"batches 1 could not be: pass CalibrationMeter\(scores_kind='logits'\)"):
        meter.compute()
    settled = CalibrationMeter(scores_kind="logits")
    _stream(settled, mixed, labels, [4, 4, 992])
    expected = compute_metrics(mixed, labels)
    for key, value in settled.compute().items():
        assert value == pytest.approx(expected[key], abs=1e-12), key


def _free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stream_worker(rank, world, port, out_dir):
    import json

    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        logits, probs, labels = _softmax_rows(400, k=3, seed=8)
        scores = logits.copy()
        scores[:2] = probs[:2]  # rank 0's first batch: two probability rows, by chance; the stream is logits
        mine = slice(0, 150) if rank == 0 else slice(150, None)
        meter = CalibrationMeter(names="ece-em,nll,classwise-ece")
        _stream(meter, scores[mine], labels[mine], [2, 148] if rank == 0 else [250])
        result = meter.compute()
        refused = CalibrationMeter(names="ece-em")  # rank 1 alone holds a row that refuses the whole stream
        refused.update(probs[mine] if rank == 0 else np.r_[probs[150:399], [[0.0, 0.0, 0.0]]], labels[mine])
        try:
            refused.compute()
            result["_refused"] = ""
        except InputError as error:
            result["_refused"] = str(error)
        with open(f"{out_dir}/rank{rank}.json", "w") as handle:
            json.dump(result, handle)
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_decide_the_kind_of_the_whole_stream(tmp_path):
    import json

    import torch.multiprocessing as mp

    mp.spawn(_stream_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    logits, probs, labels = _softmax_rows(400, k=3, seed=8)
    scores = logits.copy()
    scores[:2] = probs[:2]
    expected = compute_metrics(scores, labels, names="ece-em,nll,classwise-ece")
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (rank, key)
        assert "only 399 of 400 rows are probability rows" in got["_refused"], got["_refused"]
