"""The one-pass row scan (adacal.metrics.rows): the same bits with any number of threads, every row range seen, and
each figure equal to the obvious whole-array numpy computation."""

from __future__ import annotations

import numpy as np
import pytest

from adacal.arrays import normalise_probs, rounding_tolerance, row_sums, within_rounding
from adacal.metrics import ece_em, ece_ew, top_label
from adacal.metrics import rows as rows_module
from adacal.cli import app
from adacal.errors import InputError
from adacal.metrics.rows import float32_sum_error, scan_rows, scan_threads


@pytest.fixture
def parallel_small(monkeypatch):
    """Threads from the first block on, so small arrays take the parallel path."""
    monkeypatch.setattr(rows_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(rows_module, "SCAN_BLOCK_BYTES", 512)


def _probs(n: int, k: int, dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (probs / probs.sum(axis=1, keepdims=True)).astype(dtype)


def _scan_with(monkeypatch, array, threads: int):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, str(threads))
    return scan_rows(array)


def _expected_top_probs(array: np.ndarray) -> np.ndarray:
    """The raw row maximum, divided by the float64 row sum unless that sum is 1 within rounding."""
    sums = row_sums(np.ascontiguousarray(array))
    maxima = array.max(axis=1).astype(np.float64)
    return np.where(within_rounding(sums, array.shape[1]), maxima, maxima / sums)


def _check_against_whole_array(scan, array: np.ndarray) -> None:
    sums = row_sums(np.ascontiguousarray(array))
    exact = float(np.abs(sums - 1.0).max())
    tolerance = rounding_tolerance(array.shape[1])
    assert scan.minimum == float(array.min())
    if exact <= tolerance:  # float32 rows shown within rounding by their float32 sums may report a bound
        assert exact <= scan.sum_deviation <= tolerance
    else:
        np.testing.assert_array_equal(scan.sum_deviation, exact)  # NaN too
    np.testing.assert_array_equal(scan.top, array.argmax(axis=1))
    np.testing.assert_array_equal(scan.top_probs, _expected_top_probs(array))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threaded_scan_equals_the_single_thread_scan_bit_for_bit(monkeypatch, parallel_small, dtype, threads):
    array = _probs(1001, 7, dtype)  # 1001 rows in blocks of 9: a ragged last block and uneven thread ranges
    array[5, :] = array[5, 0]  # a row of tied maxima
    single = _scan_with(monkeypatch, array, 1)
    several = _scan_with(monkeypatch, array, threads)
    for a, b in zip(single, several):
        np.testing.assert_array_equal(a, b)
    _check_against_whole_array(several, array)
    assert several.top[5] == 0  # tied maxima: the lowest index


@pytest.mark.parametrize("where", [0, 500, 1000])
def test_threaded_scan_sees_a_negative_entry_or_nan_in_any_thread_range(monkeypatch, parallel_small, where):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "4")
    array = _probs(1001, 7, np.float32)
    array[where, 3] = -1e-3
    assert scan_rows(array).minimum == pytest.approx(-1e-3)
    # the one row refuses the matrix (docs/inputs.md §2; it used to turn every row into logits), naming that row
    with pytest.raises(InputError, match=rf"1 of 1001 rows are not \(row {where} has the entry -0.001\)"):
        top_label(array)
    assert scan_rows(array, tolerance=1e-4).counts == (1001, 1000, 1000, 0)
    array[where, 3] = np.nan
    assert np.isnan(scan_rows(array).sum_deviation)
    with pytest.raises(Exception, match="finite"):
        ece_ew(array, np.zeros(1001, dtype=np.int64))


def test_threaded_scan_reads_strided_views(monkeypatch, parallel_small):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "3")
    wide = _probs(600, 14, np.float32)
    view = wide[::2, ::2]  # neither C- nor F-contiguous
    _check_against_whole_array(scan_rows(view), view)
    # probability rows read through strides (the float32 screen's path), and a column-major copy of them
    padded = np.zeros((600, 14), dtype=np.float32)
    padded[:, ::2] = _probs(600, 7, np.float32, seed=1)
    for probabilities in (padded[:, ::2], np.asfortranarray(padded[:, ::2])):
        scan = scan_rows(probabilities)
        _check_against_whole_array(scan, probabilities)
        np.testing.assert_array_equal(scan.top_probs, probabilities.max(axis=1))


def test_metrics_do_not_depend_on_the_thread_count(monkeypatch, parallel_small):
    probs = _probs(3000, 10, np.float32, seed=3)
    labels = np.random.default_rng(4).integers(0, 10, 3000)
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "1")
    expected = (ece_ew(probs, labels), ece_em(probs, labels))
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "4")
    assert (ece_ew(probs, labels), ece_em(probs, labels)) == expected


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3), ("64", 8)])
def test_thread_count_follows_the_environment_variable(monkeypatch, value, expected):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, value)
    assert scan_threads() == expected


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_thread_setting_means_the_cpu_count(monkeypatch, value):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, value)
    assert 1 <= scan_threads() <= 8


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "2 threads", "2_0", "٢"])
def test_an_unusable_thread_setting_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(rows_module.THREADS_VARIABLE, value)
    with pytest.raises(InputError, match=rf"Expected ADACAL_NUM_THREADS to be a positive integer .*got {value!r}"):
        scan_threads()
    with pytest.raises(InputError, match="ADACAL_NUM_THREADS"):
        ece_ew(np.full((4, 2), 0.5), np.array([0, 1, 0, 1]))


def test_the_cli_refuses_an_unusable_thread_setting_in_one_line(tmp_path):
    from cli_helpers import one_line_error, runner

    path = tmp_path / "preds.npz"
    np.savez(path, probs=np.full((4, 2), 0.5), labels=np.array([0, 1, 0, 1]))
    result = runner.invoke(app, ["evaluate", str(path)], env={rows_module.THREADS_VARIABLE: "two"})
    one_line_error(result, "ADACAL_NUM_THREADS")


def _scan_in_child(array, queue):
    queue.put(scan_rows(array).top_probs.sum())


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_scans_with_threads_of_its_own(monkeypatch, parallel_small):
    import multiprocessing

    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "2")
    array = _probs(1001, 7, np.float64)
    expected = scan_rows(array).top_probs.sum()  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_scan_in_child, args=(array, queue))
    child.start()
    try:
        assert queue.get(timeout=60) == expected
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


class _LatePool:
    """A pool whose threads start only when their result is asked for: after the caller has scanned every block."""

    def submit(self, function, *args):
        from concurrent.futures import Future

        def result(timeout=None):
            found = function(*args)
            assert found == (np.inf, 0.0), "the late thread found blocks the caller had left"
            return found

        future = Future()
        future.result = result
        return future


class _StartedFirstPool:
    """A pool whose thread runs to completion at once: it scans every block before the caller starts."""

    def submit(self, function, *args):
        from concurrent.futures import Future

        future = Future()
        future.set_result(function(*args))
        return future


@pytest.mark.parametrize("pool", [_LatePool, _StartedFirstPool])
def test_blocks_are_shared_out_whichever_thread_comes_first(monkeypatch, parallel_small, pool):
    """Blocks go to whichever thread is free: a pool thread that starts late finds none left and the caller's
    scan covers every row; one that starts first takes them all and the caller finds none. Either way the result
    is the single-thread scan, bit for bit (NaN and the minimum included)."""
    array = _probs(1001, 7, np.float64)
    array[700, 2] = -0.25
    single = _scan_with(monkeypatch, array, 1)
    monkeypatch.setattr(rows_module, "_executor", pool)
    several = _scan_with(monkeypatch, array, 2)
    for a, b in zip(single, several):
        np.testing.assert_array_equal(a, b)
    array[3, 0] = np.nan
    assert np.isnan(_scan_with(monkeypatch, array, 2).sum_deviation)


@pytest.mark.parametrize("threads", [1, 3])
def test_rows_off_one_by_more_than_rounding_are_divided_by_their_sums(monkeypatch, parallel_small, threads):
    """Rows within rounding of 1 keep their raw maximum (tied rows stay tied); rows further off, e.g. float16
    probabilities or truncated ones, are renormalised; a NaN row sum in any thread's range is reported as NaN."""
    array = _probs(1001, 7, np.float64)
    array[10] = [0.7, 0.2, 0.1, 0, 0, 0, 0]  # sums to 1 within float64 rounding (not exactly)
    array[20] = [0.35, 0.1, 0.05, 0, 0, 0, 0]  # sums to 0.5
    scan = _scan_with(monkeypatch, array, threads)
    _check_against_whole_array(scan, array)
    assert scan.top_probs[10] == 0.7
    assert scan.top_probs[20] == pytest.approx(0.7, abs=1e-15)
    assert scan.sum_deviation == pytest.approx(0.5)
    for where in (0, 500, 1000):
        broken = array.copy()
        broken[where, 1] = np.nan
        assert np.isnan(_scan_with(monkeypatch, broken, threads).sum_deviation)


def _rows_summing_to(targets: np.ndarray, k: int, seed: int) -> np.ndarray:
    """float32 probability rows whose float64 sums are the `targets` (to within one float32 step of the first entry)."""
    rows = _probs(targets.size, k, np.float32, seed)
    for row, target in zip(rows, targets):
        row[0] = np.float32(float(row[0]) + target - float(row.astype(np.float64).sum()))
    return rows


@pytest.mark.parametrize("k", [3, 10, 100])
@pytest.mark.parametrize("threads", [1, 3])
def test_float32_rows_near_the_rounding_tolerance_are_decided_by_their_float64_sums(monkeypatch, parallel_small,
                                                                                   k, threads):
    """float32 blocks are screened by their float32 sums; rows whose float64 sums lie just inside or just outside the
    tolerance, in blocks with and without such rows, get what the whole-array rule gives, and the screen does skip
    the float64 sums of blocks that are all well within rounding."""
    tolerance = rounding_tolerance(k)
    offsets = np.array([0.0, 0.3, 0.45, 0.55, 0.9, 0.99, 1.01, 1.1, 2.0, 30.0])
    near = np.concatenate([1.0 + offsets * tolerance, 1.0 - offsets * tolerance])
    rng = np.random.default_rng(k)
    targets = np.ones(400)
    targets[:200] = np.where(rng.random(200) < 0.2, rng.choice(near, 200), 1.0)  # the last 200 rows sum to 1
    array = _rows_summing_to(targets, k, seed=k)
    deviation = np.abs(row_sums(array) - 1.0)
    assert ((deviation > tolerance) & (deviation < 1.1 * tolerance)).any()  # just outside
    assert ((deviation <= tolerance) & (deviation > 0.9 * tolerance)).any()  # just inside
    float64_sums = []
    monkeypatch.setattr(rows_module, "block_row_sums",
                        lambda block, out: float64_sums.append(1) or row_sums(block, out))
    scan = _scan_with(monkeypatch, array, threads)
    _check_against_whole_array(scan, array)
    blocks = -(-array.shape[0] // max(1, rows_module.SCAN_BLOCK_BYTES // (4 * k)))
    assert 0 < len(float64_sums) < blocks  # some blocks decided by their float32 sums alone, some not
    np.testing.assert_array_equal(scan.top_probs, normalise_probs(array).max(axis=1))
    clean = array[200:]  # every block decided by its float32 sums: the deviation is a bound, never below the truth
    assert np.abs(row_sums(clean) - 1.0).max() > 0
    _check_against_whole_array(_scan_with(monkeypatch, clean, threads), clean)


@pytest.mark.parametrize("k", [2, 10, 100, 1000])
def test_float32_sum_error_bounds_the_worst_order_of_additions(k):
    """A row of one entry 1 and K − 1 entries of half a float32 step of 1: added one by one in float32 each is lost,
    so the float32 sum (1) is short by (K − 1) · 2^-25 of the float64 sum, about half the bound; a bound four times
    smaller would not hold. Random rows summed in any order stay within it too."""
    row = np.full(k, 2.0**-25, dtype=np.float32)
    row[0] = 1.0
    sequential = float(np.cumsum(row, dtype=np.float32)[-1])
    exact = float(row.astype(np.float64).sum())
    assert sequential == 1.0 and exact - sequential == (k - 1) * 2.0**-25
    bound = float32_sum_error(k) * sequential
    assert exact - sequential <= bound and not exact - sequential <= bound / 4
    rng = np.random.default_rng(k)
    for _ in range(20):
        values = rng.dirichlet(np.full(k, 0.3)).astype(np.float32)
        for ordered in (values, np.sort(values), np.sort(values)[::-1]):
            in_float32 = float(np.cumsum(ordered, dtype=np.float32)[-1])
            assert abs(float(row_sums(ordered[None])[0]) - in_float32) <= float32_sum_error(k) * in_float32


@pytest.mark.parametrize("k", [3, 10, 100, 2000])
def test_float32_probabilities_and_their_float64_copy_give_the_same_figures(k):
    """The rounding rule is the same for every dtype: float32 softmax rows (sums 1 ± ~1e-7, far outside float64's
    rounding) are used as given, so every metric of the float32 matrix equals that of its float64 copy bit for bit
    (K = 2000: past the float32 screen, the float64 sums decide alone)."""
    from adacal.metrics import METRICS

    probs = _probs(3000, k, np.float32, seed=k)
    labels = np.random.default_rng(k).integers(0, k, 3000)
    assert np.abs(row_sums(probs) - 1.0).max() > 10 * k * np.finfo(np.float64).eps
    wide = probs.astype(np.float64)
    np.testing.assert_array_equal(top_label(probs).confidences, probs.max(axis=1))
    for name in ("ece-ew", "ece-em", "ece-debias", "ece-sweep-em", "classwise-ece", "nll", "brier"):
        assert METRICS.get(name)(probs, labels) == METRICS.get(name)(wide, labels), name


def test_normalising_probabilities_twice_changes_nothing():
    """Rows divided by their sums then sum to 1 within float64 rounding, far inside the tolerance: a second pass (a
    calibrator's output read by the metrics) keeps them as they are."""
    rng = np.random.default_rng(2)
    rounded = np.round(rng.dirichlet(np.ones(7), size=500), 3)  # rows off 1 by up to ~3e-3
    once = normalise_probs(rounded)
    assert not np.array_equal(once, rounded)
    np.testing.assert_array_equal(normalise_probs(once), once)


def test_an_empty_matrix_scans_to_nothing():
    scan = scan_rows(np.empty((0, 3), dtype=np.float32))
    assert scan.top.shape == scan.top_probs.shape == (0,)
    assert scan.sum_deviation == 0.0


def test_sort_keys_carry_each_hit_in_their_lowest_bit():
    """The cumulative hits read from the keys' lowest byte equal a plain cumsum of the hits in confidence order."""
    from adacal.metrics.binning import sorted_with_cumulative_hits

    rng = np.random.default_rng(5)
    confidences = rng.choice([0.1, 0.25, 0.5, 0.7, 0.99], size=5000) + rng.normal(0, 1e-3, 5000).clip(0, None)
    hits = rng.random(5000) < 0.6
    ordered, cum = sorted_with_cumulative_hits(confidences, hits)
    order = np.argsort(confidences, kind="stable")
    np.testing.assert_array_equal(ordered, confidences[order])
    ends = np.flatnonzero(np.diff(np.append(ordered, np.inf)) > 0) + 1  # the end of every group of tied values
    np.testing.assert_array_equal(cum[ends], np.cumsum(hits[order])[ends - 1])
    assert cum[0] == 0


def test_train_refuses_an_unusable_thread_setting_before_any_work(tmp_path, monkeypatch):
    from adacal.training import TrainConfig, train

    monkeypatch.setenv(rows_module.THREADS_VARIABLE, "auto")
    with pytest.raises(InputError, match="ADACAL_NUM_THREADS"):
        train(TrainConfig(dataset="digits", device="cpu", epochs=1, out=str(tmp_path / "runs")))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("seed", "k"), enumerate([2, 3, 7, 16, 100, 900]))
def test_float32_scan_equals_the_whole_array_rule_on_mixed_rows(monkeypatch, parallel_small, seed, k):
    """Random float32 matrices mixing softmax rows, rows nudged to just inside / outside the rounding tolerance,
    truncated rows, rows with a negative entry, huge entries whose float32 sum overflows, and uniform rows: whatever
    blocks the screen can or cannot decide, the scan gives the whole-array rule's top class and probability."""
    rng = np.random.default_rng(seed)
    n = 300
    array = _probs(n, k, np.float32, seed)
    tolerance = rounding_tolerance(k)
    kind = rng.integers(0, 8, size=n)
    nudged = kind == 1
    array[nudged] = _rows_summing_to(1.0 + rng.uniform(-2, 2, nudged.sum()) * tolerance, k, seed + 100)
    array[kind == 2] *= np.float32(0.999)  # truncated probabilities
    array[kind == 3, 0] = -np.float32(rng.uniform(1e-6, 1.0))  # a negative entry
    array[kind == 4, -1] = np.float32(3e38)  # the float32 sum overflows, the float64 one does not
    array[kind == 5] = np.float32(1.0 / k)  # tied maxima everywhere
    for threads in (1, 3):
        scan = _scan_with(monkeypatch, array, threads)
        _check_against_whole_array(scan, array)
