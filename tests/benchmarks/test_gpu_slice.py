"""benchmarks/gpu_slice.py, the one prepared command of a GPU slice: its whole path on the CPU (`--size cpu-smoke`, on
a tiny generated pack: no real data, no GPU), the deadline that keeps cells from starting too late, the resume state
an interrupted cell sends back, `collect` here afterwards, and the transfer's size."""

from __future__ import annotations

import importlib
import json
import sys
import tarfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


gpu_slice = _load("gpu_slice")


def _names(archive: Path) -> list[str]:
    with tarfile.open(archive, "r:gz") as tar:
        return tar.getnames()


@pytest.mark.slow
def test_the_cpu_smoke_size_runs_every_step_and_returns_what_collect_files(tmp_path):
    out = tmp_path / "out"
    status = gpu_slice.main(["run", "--out", str(out), "--size", "cpu-smoke"])
    log = (out / "slice.log").read_text()
    assert status == 0, log
    files = sorted(p for p in out.iterdir())
    assert all(p.is_file() for p in files) and len(files) <= gpu_slice.MAX_FILES
    assert all(p.stat().st_size < 16 * 2**20 for p in files)
    assert "CUDA tests: skipped (no CUDA device here)" in log or torch.cuda.is_available()
    assert "arrays sha256" in log and "measured: median epoch" in log and "validation-fitted T" in log
    bench = json.loads((out / "bench_trainer_cpu.json").read_text())
    assert {"throughput", "adafocal_overhead"} <= set(bench["results"])
    names = _names(out / "results.tar.gz")
    assert {"results/ce-mean-seed0.json", "results/adafocal-mean-seed0.json", "slice.json"} <= set(names)
    assert not (out / "work").exists()  # the scratch folder stays behind on the machine, not in what comes back

    runs_dir, slice_dir = tmp_path / "runs", tmp_path / "slice"
    assert gpu_slice.main(["collect", str(out), "--runs-dir", str(runs_dir), "--slice-dir", str(slice_dir),
                           "--bench-dir", str(tmp_path / "bench")]) == 0
    from quality_files import read_result

    entry = read_result(runs_dir / "adafocal-mean-seed0.json")
    assert entry["options"]["train_subset"] == 64.0 and entry["machine"]["device"] == "cpu"
    assert (slice_dir / "logs" / "slice.json").is_file() and not (slice_dir / "resume").exists()
    assert not (tmp_path / "bench").exists()  # a CPU smoke run's speed figures are not filed


def test_no_cell_starts_that_would_end_after_the_deadline(tmp_path):
    out = tmp_path / "out"
    status = gpu_slice.main(["run", "--out", str(out), "--size", "cpu-smoke", "--skip", "tests,bench",
                             "--budget-minutes", "0.5", "--cell-seconds", "600"])
    log = (out / "slice.log").read_text()
    assert status == 0, log
    assert "not started (too little of them would fit before the deadline): ce-mean-seed0, adafocal-mean-seed0" in log
    with tarfile.open(out / "results.tar.gz", "r:gz") as tar:
        summary = json.load(tar.extractfile("slice.json"))
    assert summary["steps"]["grid"]["not_started"] == ["ce-mean-seed0", "adafocal-mean-seed0"]


def _run_folder(runs: Path, cell: str) -> Path:
    run = runs / f"cifar10-resnet20-{cell}-s0" / "run-20260101-000000"
    (run / "checkpoints").mkdir(parents=True)
    for name, size in (("config.json", 10), ("history.jsonl", 10), ("checkpoints/last.pt", 3000),
                       ("checkpoints/interrupted.pt", 3000), ("predictions.npz", 10)):
        (run / name).write_bytes(b"x" * size)
    return run


def test_an_interrupted_cell_travels_back_as_its_last_checkpoint_and_resumes_from_it(tmp_path):
    runs = tmp_path / "runs"
    folders = {f"{cell}-mean-seed0": _run_folder(runs, cell).parent for cell in ("ce", "flsd-53", "adafocal")}
    members = gpu_slice.resume_members(runs, ["ce-mean-seed0"], folders)
    assert sorted(name for _, name in members) == sorted(
        f"cifar10-resnet20-ce-s0/run-20260101-000000/{n}" for n in ("config.json", "history.jsonl",
                                                                   "checkpoints/last.pt"))
    everything = gpu_slice.resume_members(runs, list(folders), folders)
    parts = gpu_slice.split_members(everything, limit=4000)  # one run (3,020 bytes) a part
    assert [len(part) for part in parts] == [3, 3, 3]
    assert all(len({name.split("/")[0] for _, name in part}) == 1 for part in parts)
    folder = tmp_path / "resume"
    folder.mkdir()
    gpu_slice.pack_tar(folder / "resume-1.tar.gz", members)
    log = gpu_slice.Log(tmp_path / "log.txt")
    restored = gpu_slice.restore_resume(log, folder, tmp_path / "elsewhere")
    assert restored == ["cifar10-resnet20-ce-s0/run-20260101-000000"]
    assert (tmp_path / "elsewhere" / "cifar10-resnet20-ce-s0" / "run-20260101-000000" / "checkpoints" /
            "last.pt").read_bytes() == b"x" * 3000


def test_collect_keeps_the_last_resume_state_when_a_slice_did_not_finish(tmp_path, capsys):
    slice_dir = tmp_path / "slice"
    (slice_dir / "resume").mkdir(parents=True)
    (slice_dir / "resume" / "resume-1.tar.gz").write_bytes(b"kept")
    (tmp_path / "came_back").mkdir()
    (tmp_path / "came_back" / "slice.log").write_text("killed")
    assert gpu_slice.main(["collect", str(tmp_path / "came_back"), "--runs-dir", str(tmp_path / "runs"),
                           "--slice-dir", str(slice_dir), "--bench-dir", str(tmp_path / "bench")]) == 2
    assert "did not get to its end" in capsys.readouterr().err
    assert (slice_dir / "resume" / "resume-1.tar.gz").read_bytes() == b"kept"


def test_the_tree_leaves_room_for_the_pack_and_the_resume_state_in_one_transfer():
    """The 64 MiB a slice carries: the tree, the CIFAR-10 pack (~31 MiB) and up to 5 runs' checkpoints (~12 MiB)."""
    import shutil

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to list what travels")
    tree = gpu_slice.transfer_size([])
    assert tree + 31 * 2**20 + 12 * 2**20 < gpu_slice.TRANSFER_LIMIT, f"the tree alone is {tree / 2**20:.1f} MiB"
