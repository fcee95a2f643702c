"""CalibrationMeter: a subset of names on torch tensors, reset, errors, and synchronisation across two real processes
on the gloo backend. (Streaming equals the batch metrics for every metric, kind of scores and case: the shared harness,
test_metric_references.py.)"""

import json
import socket

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.metrics import CalibrationMeter, compute_metrics
from metric_tester import meter_logits


def batches(n, sizes):
    start = 0
    for size in sizes:
        yield slice(start, min(start + size, n))
        start += size


def test_torch_tensors_subset_of_names_and_reset():
    logits, labels = meter_logits(240, 5, 1)
    meter = CalibrationMeter(names="ece-em,nll,classwise-ece", n_bins=7)
    tensor, target = torch.from_numpy(logits).float(), torch.from_numpy(labels)
    for rows in batches(len(labels), [64, 64, 64, 48]):
        meter.update(tensor[rows], target[rows])
    expected = compute_metrics(tensor.numpy(), labels, n_bins=7, names=["ece-em", "nll", "classwise-ece"])
    got = meter.compute()
    assert list(got) == ["ece_em", "nll", "classwise_ece"]
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9)
    assert meter.n_samples == len(labels)
    meter.reset()
    assert meter.n_samples == 0
    with pytest.raises(InputError, match="at least one sample"):
        meter.compute()
    meter.update(logits[:30], labels[:30])
    assert meter.compute()["ece_em"] == pytest.approx(compute_metrics(logits[:30], labels[:30], n_bins=7)["ece_em"])


def test_mixed_kinds_and_class_counts_are_refused():
    logits, labels = meter_logits(240, 5, 0)
    meter = CalibrationMeter()
    meter.update(logits[:10], labels[:10])
    meter.update(softmax(logits[10:20]), labels[10:20])
    with pytest.raises(InputError, match="same kind of scores"):
        meter.compute()
    with pytest.raises(InputError, match="5 classes"):
        meter.update(np.zeros((3, 4)), np.zeros(3, dtype=int))


def test_an_empty_batch_adds_nothing_but_is_still_checked():
    logits, labels = meter_logits(120, 5, 2)
    meter = CalibrationMeter(names="ece-em,nll,classwise-ece")
    meter.update(torch.zeros(0, 5), torch.zeros(0, dtype=torch.int64))  # an uneven last batch's empty share
    meter.update(logits[:60], labels[:60])
    meter.update(np.empty((0, 5)), np.empty(0, dtype=int))
    meter.update(logits[60:], labels[60:])
    assert meter.n_samples == 120
    expected = compute_metrics(logits, labels, names=["ece-em", "nll", "classwise-ece"])
    for key, value in meter.compute().items():
        assert value == pytest.approx(expected[key], abs=1e-9)
    with pytest.raises(InputError, match="5 classes"):
        meter.update(np.empty((0, 4)), np.empty(0, dtype=int))
    with pytest.raises(InputError, match="0 entries"):
        meter.update(np.empty((0, 5)), np.zeros(2, dtype=int))
    # A 1-D empty batch has no class count: it must not fix one (a binary model's would be 2) for the batches after
    any_k = CalibrationMeter(names="ece-em")
    any_k.update(np.zeros(0), np.zeros(0, dtype=int))
    any_k.update(logits, labels)
    assert any_k.compute()["ece_em"] == pytest.approx(expected["ece_em"], abs=1e-12)
    with pytest.raises(InputError, match="labels"):
        CalibrationMeter().update(logits, None)
    only_empty = CalibrationMeter()
    only_empty.update(np.empty((0, 3)), np.empty(0, dtype=int))
    with pytest.raises(InputError, match="at least one sample"):
        only_empty.compute()


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_worker(rank, world, port, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        logits, labels = meter_logits(173, 5, 5)
        mine = slice(0, 61) if rank == 0 else slice(61, None)  # uneven shards
        meter = CalibrationMeter(n_bins=10)
        local_logits, local_labels = torch.from_numpy(logits[mine]), torch.from_numpy(labels[mine])
        half = local_logits.shape[0] // 2
        meter.update(local_logits[:half], local_labels[:half])
        meter.update(local_logits[half:], local_labels[half:])
        result = meter.compute()
        unsynced = CalibrationMeter(n_bins=10, sync=False)
        unsynced.update(local_logits, local_labels)
        result["_local_n"] = unsynced.n_samples
        result["_local_ece_em"] = unsynced.compute()["ece_em"]
        with open(f"{out_dir}/rank{rank}.json", "w") as handle:
            json.dump(result, handle)
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_both_compute_the_global_metrics(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    logits, labels = meter_logits(173, 5, 5)
    expected = compute_metrics(logits, labels, n_bins=10)
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (rank, key)
    # each rank alone describes only its shard
    rank0 = json.loads((tmp_path / "rank0.json").read_text())
    assert rank0["_local_n"] == 61
    assert rank0["_local_ece_em"] == pytest.approx(compute_metrics(logits[:61], labels[:61], n_bins=10)["ece_em"])


# A binary model's decision scores: the first batches happen to lie in [0, 1], the later ones do not.
_BINARY_RNG = np.random.default_rng(21)
BINARY_SCORES = np.concatenate([_BINARY_RNG.uniform(0.0, 1.0, 90), 2.5 * _BINARY_RNG.standard_normal(110)])
BINARY_LABELS = (_BINARY_RNG.random(200) < 1 / (1 + np.exp(-BINARY_SCORES))).astype(np.int64)


@pytest.mark.parametrize("scores", [BINARY_SCORES, BINARY_SCORES[:, None], BINARY_SCORES[:90]],
                         ids=["1-D", "one column", "all in [0, 1]"])
def test_binary_batches_are_read_as_compute_metrics_reads_them_together(scores):
    """Batch by batch the first batches would pass for probabilities; compute_metrics on the concatenation reads
    every score as a decision score (some lie outside [0, 1]), and so does the meter. When all lie in [0, 1], both
    read probabilities."""
    labels = BINARY_LABELS[: len(scores)]
    meter = CalibrationMeter(n_bins=10)
    for rows in batches(len(labels), [30, 30, 30, 50, 60]):
        meter.update(torch.from_numpy(scores[rows]), labels[rows])
    expected = compute_metrics(scores, labels, n_bins=10)
    got = meter.compute()
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    # compute() leaves the meter as it was: more batches, then compute() again.
    meter.update(scores[:20], labels[:20])
    again = compute_metrics(np.concatenate([scores, scores[:20]]), np.concatenate([labels, labels[:20]]), n_bins=10)
    assert meter.compute()["ece_em"] == pytest.approx(again["ece_em"], abs=1e-12)


def test_binary_batches_mixed_with_probability_rows_are_still_refused():
    meter = CalibrationMeter()
    meter.update(BINARY_SCORES[90:], BINARY_LABELS[90:])  # decision scores: logits
    meter.update(np.array([[0.3, 0.7], [0.9, 0.1]]), np.array([1, 0]))  # probabilities
    with pytest.raises(InputError, match="same kind of scores"):
        meter.compute()


def _binary_rank_worker(rank, world, port, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        mine = slice(0, 90) if rank == 0 else slice(90, None)  # rank 0 sees only scores in [0, 1]
        meter = CalibrationMeter(n_bins=10, names="ece-em,nll,classwise-ece")
        meter.update(BINARY_SCORES[mine], BINARY_LABELS[mine])
        with open(f"{out_dir}/rank{rank}.json", "w") as handle:
            json.dump(meter.compute(), handle)
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_read_a_binary_models_scores_alike(tmp_path):
    """Rank 0's shard lies in [0, 1], rank 1's does not: both ranks read every score as a decision score."""
    import torch.multiprocessing as mp

    mp.spawn(_binary_rank_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    expected = compute_metrics(BINARY_SCORES, BINARY_LABELS, n_bins=10, names=["ece-em", "nll", "classwise-ece"])
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (rank, key)


def test_binary_batches_survive_the_caller_reusing_its_buffers():
    """A training loop refills one scores buffer and one labels buffer per batch: the meter keeps its own copies."""
    meter = CalibrationMeter(names="ece-ew")
    scores, labels = np.empty(100), np.empty(100, dtype=np.int64)
    for rows in (slice(0, 100), slice(100, 200)):
        scores[:] = BINARY_SCORES[rows]
        labels[:] = BINARY_LABELS[rows]
        meter.update(scores, labels)
    assert meter.compute()["ece_ew"] == pytest.approx(compute_metrics(BINARY_SCORES, BINARY_LABELS)["ece_ew"],
                                                      abs=1e-12)
