"""`adacal train` data-parallel on two CPU processes: what `torchrun --nproc_per_node=2` sets up, forked from this
process (gloo, one run folder, the same γ on both ranks), and a batch-norm model whose ranks end with the same weights
and whose gathered predictions are those of the checkpoint."""

import json
import multiprocessing
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


def _only_run(out: Path) -> Path:
    runs = list(out.iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def _history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ddp_rank(rank: int, port: int, out: Path) -> None:
    """One rank, with the environment torchrun gives it."""
    from adacal.training import TrainConfig, train

    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    result = train(TrainConfig(dataset="digits", device="cpu", epochs=1, train_subset=256, batch_size=32,
                               out=str(out / "runs")))
    (out / f"rank{rank}.json").write_text(
        json.dumps({"gammas": result.gammas, "run_dir": str(result.run_dir), "metrics": result.test_metrics})
    )


def _run_two_ranks(target, out: Path) -> None:
    """Fork two ranks of `target(rank, port, out)` (torch is already imported, which keeps it to seconds); both must
    exit cleanly within two minutes."""
    context = multiprocessing.get_context("fork")
    port = _free_port()
    processes = [context.Process(target=target, args=(rank, port, out)) for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    for process in processes:
        if process.is_alive():
            process.kill()
    assert [p.exitcode for p in processes] == [0, 0]


def test_data_parallel_training_on_two_cpu_processes(tmp_path):
    """What `torchrun --nproc_per_node=2 -m adacal train` sets up: two ranks, gloo, one run folder, the same γ.

    The ranks are forked from this process (torch already imported), which keeps the test to seconds.
    """
    _run_two_ranks(_ddp_rank, tmp_path)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["gammas"] == ranks[1]["gammas"] and len(ranks[0]["gammas"]) == 15
    assert ranks[0]["metrics"] == ranks[1]["metrics"] and ranks[0]["run_dir"] == ranks[1]["run_dir"]
    run = _only_run(tmp_path / "runs")
    history = _history(run)
    assert len(history) == 1 and sum(history[0]["adafocal"]["train_counts"]) == 256  # both ranks' samples
    assert history[0]["adafocal"]["updates"][0]["gammas"] == ranks[0]["gammas"]
    assert (run / "evaluate.json").is_file() and (run / "checkpoints" / "last.pt").is_file()


class _BatchNormMLP(torch.nn.Module):
    """A digits model with batch norm, whose running statistics each DDP rank updates from its own batches."""

    def __init__(self, num_classes: int = 10, features: int = 64):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(
            torch.nn.Linear(features, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(), torch.nn.Linear(32, num_classes)
        )

    def forward(self, inputs):
        return self.body(inputs)


def _ddp_batch_norm_rank(rank: int, port: int, out: Path) -> None:
    """One rank training _BatchNormMLP; it writes the weights and buffers it ends with."""
    import adacal.models
    from adacal.training import TrainConfig, train

    built = []
    adacal.models.build_model = lambda name, **_: built.append(_BatchNormMLP()) or built[-1]  # forked child only
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    train(TrainConfig(dataset="digits", device="cpu", epochs=2, train_subset=256, batch_size=32, out=str(out / "runs")))
    state = {key: value.tolist() for key, value in built[0].state_dict().items()}
    (out / f"rank{rank}.json").write_text(json.dumps(state))


def test_data_parallel_ranks_hold_one_model_and_predictions_are_the_checkpoints(tmp_path):
    """Gradients are averaged (both ranks end with the same weights), and the gathered validation and test logits are
    those of the checkpointed model: each rank scores its shard with rank 0's batch-norm statistics, not its own."""
    _run_two_ranks(_ddp_batch_norm_rank, tmp_path)
    states = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert states[0] == states[1]

    run = _only_run(tmp_path / "runs")
    model = _BatchNormMLP()
    model.load_state_dict(torch.load(run / "checkpoints" / "last.pt", weights_only=True)["model_state"])
    model.eval()
    from adacal.data import load_dataset

    data = load_dataset("digits", train_subset=256)
    with torch.no_grad(), np.load(run / "predictions.npz") as arrays:
        for split in ("val", "test"):
            expected = model(getattr(data, split).inputs).numpy()
            np.testing.assert_allclose(arrays[f"{split}_logits"], expected, rtol=1e-5, atol=1e-5)
