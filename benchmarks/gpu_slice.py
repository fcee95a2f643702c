"""One slice of GPU time, prepared: CUDA tests, trainer speed, and the next cells of the GPU quality grid.

GPU time comes in slices (15 minutes now and then; one command at most 10 minutes; a 64 MiB tree goes there; at most
8 files of 16 MiB come back). This script makes one command of a slice count:

    python benchmarks/gpu_slice.py prepare                 # here: the data pack, the transfer's size, the command
    bash benchmarks/gpu_slice.sh "$OUT"                    # there (the device tool's run, carry ["runs/gpu-slice"])
    python benchmarks/gpu_slice.py collect FILES_AT        # here: result files into benchmarks/results/...
    python benchmarks/gpu_slice.py run --out DIR --size cpu-smoke   # the whole path on the CPU in about a minute

`run`, within --budget-minutes (9) of wall time:
1. unpacks the CIFAR-10 pack (runs/gpu-slice/cifar10.pack.npz, made by `prepare` with pack_cifar10.py) and logs the
   SHA-256 of the arrays, so every slice is seen to train on the same images;
2. runs the CUDA tests (tests/training/test_cuda_path.py, test_gpu_path.py; skipped with a note without CUDA);
3. times the trainer against a bare loop and AdaFocal's epoch against CE's (bench_trainer.py on the device);
4. trains the next missing cells of the GPU quality grid (quality_cifar10.py --protocol gpu), --jobs at a time as
   separate processes on the one GPU, seed by seed. A cell starts if its estimated time ends before the deadline, or
   (--partial, on for the full size) if a third of it fits; at the deadline the cells still running are interrupted
   (adacal saves their state) and their run folders (config, history, last checkpoint) travel back to resume in the
   next slice (runs/gpu-slice/resume/);
5. packs into --out: slice.log (everything printed, also when a step fails), results.tar.gz (one small result file
   per finished cell, with each cell's log and slice.json), resume-<k>.tar.gz (at most 15 MiB each) and
   bench_trainer_<device>.json — at most 8 files.

The log gives every epoch's measured time, the epochs per slice they imply, and whether CE ended over-confident
(validation-fitted T ≥ 1.3), so the next slice can correct the protocol's estimate (quality_cifar10.py's docstring).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from slice_transfer import (  # noqa: E402,F401  (the files of a slice, here and there; re-exported)
    GPU_RUNS, MAX_FILES, PACK, RESUME_DIR, SLICE_DIR, TRANSFER_LIMIT, collect, pack_tar, prepare, restore_resume,
    resume_members, split_members, transfer_size,
)

CUDA_TESTS = ("tests/training/test_cuda_path.py", "tests/training/test_gpu_path.py")
T_OVER_CONFIDENT = 1.3

# size -> how the slice runs: the grid's command line, the processes, the speed benchmark's options, time estimates
SIZES: dict[str, dict[str, Any]] = {
    "full": {"device": "cuda", "grid": ["--protocol", "gpu"], "jobs": 5, "threads": 2, "budget_minutes": 9.0,
             # one seed of the five losses with --jobs 5: see quality_cifar10.py's docstring for the arithmetic
             "cell_seconds": 440.0, "tests_seconds": 150.0, "bench_seconds": 150.0,
             "seeds": "0,1,2", "bench": [], "pack_margin_seconds": 30.0, "partial": True},
    "cpu-smoke": {"device": "cpu", "grid": ["--protocol", "gpu", "--epochs", "1", "--train-subset", "64",
                                            "--val-size", "60", "--test-subset", "100", "--losses", "ce,adafocal"],
                  "jobs": 2, "threads": 1, "budget_minutes": 5.0, "cell_seconds": 60.0, "tests_seconds": 120.0,
                  "bench_seconds": 120.0, "pack_margin_seconds": 5.0,
                  "seeds": "0", "bench": ["--batch-size", "16", "--rounds", "1", "--batches", "1", "--train-size",
                                          "32", "--val-size", "32", "--skip", "launches"], "partial": False},
}


# ------------------------------------------------------------------------------------------------ logging


class Log:
    """Lines to stdout and to <out>/slice.log at once (flushed: a killed command still leaves its log)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = path.open("a", encoding="utf-8")
        self.started = time.monotonic()

    def __call__(self, text: str = "") -> None:
        stamp = f"[{time.monotonic() - self.started:6.1f}s] "
        for line in str(text).splitlines() or [""]:
            print(stamp + line, flush=True)
            self.handle.write(stamp + line + "\n")
        self.handle.flush()

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def run_step(log: Log, command: list[str], *, timeout: float, env: dict[str, str] | None = None) -> int:
    """Run `command` from the repository root, its output into the log line by line; killed after `timeout` s."""
    import threading

    log(f"$ {' '.join(command)}  (timeout {timeout:.0f}s)")
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                               start_new_session=True)

    def forward() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log("  | " + line.rstrip("\n"))

    reader = threading.Thread(target=forward, daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        reader.join(timeout=5)
        log(f"  killed after {timeout:.0f}s")
        return 124
    reader.join(timeout=5)
    log(f"  exit {process.returncode}")
    return int(process.returncode)


# ------------------------------------------------------------------------------------------------ data


def make_smoke_source(folder: Path, *, train: int = 200, test: int = 100) -> Path:
    """A tiny CIFAR-shaped prepared-array file of random images (the smoke size needs no real data)."""
    rng = np.random.default_rng(0)
    path = folder / "smoke_source.npz"
    np.savez(path, train_x=rng.integers(0, 256, (train, 32, 32, 3), dtype=np.uint8), train_y=np.arange(train) % 10,
             test_x=rng.integers(0, 256, (test, 32, 32, 3), dtype=np.uint8), test_y=np.arange(test) % 10,
             classes=np.array([f"c{i}" for i in range(10)]))
    return path


def arrays_digest(path: Path) -> str:
    """SHA-256 over the images and labels of a prepared-array file (what the runs train on)."""
    digest = hashlib.sha256()
    with np.load(path, allow_pickle=False) as npz:
        for key in ("train_x", "train_y", "test_x", "test_y"):
            digest.update(key.encode())
            digest.update(np.ascontiguousarray(npz[key]).tobytes())
    return digest.hexdigest()


def unpack_data(log: Log, pack: Path, data_dir: Path) -> str:
    import pack_cifar10

    started = time.monotonic()
    counts = pack_cifar10.unpack(pack, data_dir / "cifar10.npz")
    digest = arrays_digest(data_dir / "cifar10.npz")
    log(f"data: {pack.name} ({pack.stat().st_size / 2**20:.1f} MiB) -> {counts['train']} train / {counts['test']} "
        f"test images in {time.monotonic() - started:.1f}s; arrays sha256 {digest[:16]}")
    return digest


# ------------------------------------------------------------------------------------------------ the grid


@dataclass
class Running:
    cell: Any
    process: subprocess.Popen
    log_path: Path
    started: float
    estimate: float


@dataclass
class GridReport:
    finished: list[dict[str, Any]] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    not_started: list[str] = field(default_factory=list)


def cell_slug(cell: Any) -> str:
    return f"{cell.name}-{cell.arm}-seed{cell.seed}"


def list_cells(grid_argv: list[str]) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """(the benchmark, cells done, cells missing in grid order: seed by seed) for a quality_cifar10.py command line."""
    import quality_cifar10
    import quality_common as qc

    benchmark = quality_cifar10.grid(grid_argv)
    args = benchmark["args"]
    runs_dir, out = Path(args.runs_dir), Path(args.out)
    cells = [qc.Cell(name=name, arm=arm, seed=seed, config=benchmark["make_config"](name, arm, seed),
                     folder=out / benchmark["folder_name"](name, arm, seed),
                     result=qc.result_path(runs_dir, name, arm, seed))
             for seed in qc.parse_ints(args.seeds, "--seeds") for arm in qc.parse_arms(args.arms)
             for name in qc.parse_losses(args.losses)]
    done, missing = qc.collect(cells)
    return benchmark, done, missing


def epochs_done(cell: Any) -> int:
    """Epochs an unfinished run folder of `cell` already holds (a resumed cell trains only the rest)."""
    best = 0
    for history in Path(cell.folder).glob("*/history.jsonl"):
        try:
            best = max(best, sum(1 for line in history.read_text().splitlines() if line.strip()))
        except OSError:
            continue
    return best


def run_grid(log: Log, *, grid_argv: list[str], jobs: int, threads: int, deadline: float, cell_seconds: float,
             logs_dir: Path, partial: bool = False) -> GridReport:
    """Train the missing cells, `jobs` at a time, each in its own process. A cell starts when its estimate ends
    before `deadline` (time.monotonic()) or, with `partial`, when at least a third of it (and a minute) fits: its
    state comes back and it resumes in the next slice. At the deadline the running ones are interrupted (SIGINT:
    adacal saves their state) and killed if still there 20 s later."""
    benchmark, done, missing = list_cells(grid_argv)
    epochs = int(benchmark["args"].epochs)
    log(f"grid: {benchmark['title']}: {len(done)} cells done, {len(missing)} missing: "
        + ", ".join(cell_slug(c) for c in missing))
    report = GridReport()
    queue, running = list(missing), []
    measured: list[float] = []  # wall seconds of whole cells finished in this slice
    logs_dir.mkdir(parents=True, exist_ok=True)
    while queue or running:
        while queue and len(running) < jobs:
            cell = queue[0]
            full = max(measured) if measured else cell_seconds
            remaining = 1.0 - epochs_done(cell) / epochs
            estimate = 0.1 * full + 0.9 * full * remaining
            left = deadline - time.monotonic()
            if estimate > left and not (partial and left >= max(60.0, estimate / 3)):
                break
            queue.pop(0)
            log_path = logs_dir / f"{cell_slug(cell)}.log"
            command = [sys.executable, str(BENCHMARKS / "quality_cifar10.py"), *grid_argv, "--losses", cell.name,
                       "--seeds", str(cell.seed), "--arms", cell.arm, "--jobs", "1", "--threads", str(threads),
                       "--no-summary"]
            handle = log_path.open("w", encoding="utf-8")
            process = subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
            handle.close()
            running.append(Running(cell, process, log_path, time.monotonic(), estimate))
            log(f"started {cell_slug(cell)} (estimate {estimate:.0f}s; {epochs_done(cell)} of {epochs} epochs done "
                f"before)")
        if not running:
            break
        time.sleep(1.0)
        for job in list(running):
            if job.process.poll() is None:
                continue
            running.remove(job)
            seconds = time.monotonic() - job.started
            slug = cell_slug(job.cell)
            if job.process.returncode == 0 and job.cell.result.is_file():
                if epochs_done(job.cell) in (0, epochs) and not _resumed(job.log_path):
                    measured.append(seconds)
                report.finished.append({"cell": slug, "seconds": round(seconds, 1), **epoch_times(job.log_path)})
                log(f"finished {slug} in {seconds:.0f}s: {describe_result(job.cell.result)}")
            else:
                report.failed.append(slug)
                log(f"FAILED {slug} (exit {job.process.returncode}); its log's end:")
                log("\n".join("  | " + line for line in _tail(job.log_path, 15)))
        if time.monotonic() >= deadline and running:
            log(f"deadline: interrupting {', '.join(cell_slug(j.cell) for j in running)}")
            for job in running:
                job.process.send_signal(signal.SIGINT)
            stop = time.monotonic() + 20
            for job in running:
                try:
                    job.process.wait(timeout=max(0.1, stop - time.monotonic()))
                except subprocess.TimeoutExpired:
                    job.process.kill()
                    job.process.wait()
                report.interrupted.append(cell_slug(job.cell))
                log(f"interrupted {cell_slug(job.cell)} after {time.monotonic() - job.started:.0f}s, "
                    f"{epochs_done(job.cell)} of {epochs} epochs saved")
            running = []
    report.not_started = [cell_slug(c) for c in queue]
    if queue:
        log(f"not started (too little of them would fit before the deadline): {', '.join(report.not_started)}")
    return report


def _resumed(log_path: Path) -> bool:
    return "resuming unfinished run" in log_path.read_text(errors="replace")


def _tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


_EPOCH_LINE = re.compile(r"\] epoch +(\d+)/(\d+) +([\d.]+)s")


def epoch_times(log_path: Path) -> dict[str, Any]:
    """The epoch times a cell's log printed (quality_training.EpochPrinter's lines)."""
    seconds = [float(m.group(3)) for m in _EPOCH_LINE.finditer(log_path.read_text(errors="replace"))]
    return {"epoch_seconds": seconds, "epoch_seconds_median": statistics.median(seconds) if seconds else None}


def describe_result(path: Path) -> str:
    from quality_files import read_result

    entry = read_result(path) or {}
    try:
        pre, fit = entry["test_pre"], entry["ts_ece_em"]
        return (f"test error {100 * pre['error']:.2f}%, ECE-EM {100 * pre['ece_em']:.2f}% -> "
                f"{100 * fit['test']['ece_em']:.2f}% at T={fit['temperature']:.1f}, final train accuracy "
                f"{100 * entry['final_train']['accuracy']:.1f}%")
    except (KeyError, TypeError):
        return "(no figures)"


def assess(log: Log, report: GridReport, *, runs_dir: Path, budget_seconds: float, jobs: int, epochs: int) -> None:
    """What the slice measured, for the next one: epoch times and the epochs a slice holds; CE's over-confidence."""
    medians = [f["epoch_seconds_median"] for f in report.finished if f.get("epoch_seconds_median")]
    if medians:
        epoch = statistics.median(medians)
        fits = int((budget_seconds - 60) // epoch)
        log(f"measured: median epoch {epoch:.1f}s with up to {jobs} runs sharing the device (per cell: "
            + ", ".join(f"{f['cell']} {f['epoch_seconds_median']:.1f}s" for f in report.finished
                        if f.get("epoch_seconds_median")) + f"); a {budget_seconds / 60:g}-minute slice holds about "
            f"{fits} epochs of {jobs} such runs (protocol: {epochs})")
    from quality_files import read_result

    for path in sorted(runs_dir.glob("ce-*-seed*.json")):
        entry = read_result(path)
        if not entry:
            continue
        t = entry["ts_ece_em"]["temperature"]
        verdict = ("over-confident, the paper's regime" if t >= T_OVER_CONFIDENT else
                   f"below {T_OVER_CONFIDENT}: not over-confident enough, lengthen the schedule")
        log(f"{path.stem}: validation-fitted T = {t:.2f} ({verdict}); final train accuracy "
            f"{100 * entry['final_train']['accuracy']:.1f}%")


def write_outputs(log: Log, out: Path, *, work: Path, runs_dir: Path, before: dict[str, str], report: GridReport,
                  folders: dict[str, Path], summary: dict[str, Any]) -> None:
    """results.tar.gz (new result files, cell logs, slice.json) and resume-<k>.tar.gz into `out`."""
    new = [p for p in sorted(runs_dir.glob("*")) if p.is_file() and before.get(p.name) != _digest(p)]
    (work / "slice.json").write_text(json.dumps(summary, indent=2, default=str))
    members = [(p, f"results/{p.name}") for p in new]
    members += [(p, f"logs/{p.name}") for p in sorted((work / "logs").glob("*.log"))]
    members.append((work / "slice.json", "slice.json"))
    size = pack_tar(out / "results.tar.gz", members)
    log(f"wrote results.tar.gz ({size / 1024:.0f} KiB): {len(new)} result file(s) "
        f"({', '.join(p.name for p in new) or 'none'}), {len(members) - len(new) - 1} cell log(s), slice.json")
    # every cell not finished that holds a checkpoint goes back: interrupted now, or restored and not reached
    unfinished = report.interrupted + report.not_started + report.failed
    parts = split_members(resume_members(work / "runs", unfinished, folders))
    for k, part in enumerate(parts[: MAX_FILES - 4], start=1):
        size = pack_tar(out / f"resume-{k}.tar.gz", part)
        log(f"wrote resume-{k}.tar.gz ({size / 2**20:.1f} MiB): {len(part)} file(s) to resume from")
    if len(parts) > MAX_FILES - 4:
        log(f"warning: {len(parts) - (MAX_FILES - 4)} resume part(s) left out (at most {MAX_FILES} files come back)")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------------ run


def run(args: argparse.Namespace) -> int:
    size = SIZES[args.size]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "slice.log")
    budget = 60.0 * (args.budget_minutes if args.budget_minutes is not None else size["budget_minutes"])
    deadline = time.monotonic() + budget - size["pack_margin_seconds"]
    skip = {s.strip() for s in (args.skip or "").split(",") if s.strip()}
    work = Path(args.work or (out / "work" if args.size != "full" else "/tmp/adacal-gpu-slice")).resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    import torch

    device = size["device"]
    cuda = torch.cuda.is_available()
    log(f"gpu_slice run --size {args.size}: budget {budget / 60:.1f} min, torch {torch.__version__}, "
        + (f"GPU {torch.cuda.get_device_name(0)}" if cuda else "no CUDA device") + f"; work {work}; out {out}")
    if device == "cuda" and not cuda:
        log("Error: --size full trains on CUDA and torch sees no CUDA device (use --size cpu-smoke on a CPU).")
        return 2
    summary: dict[str, Any] = {"size": args.size, "device": device, "gpu": torch.cuda.get_device_name(0) if cuda
                               else None, "torch": torch.__version__, "steps": {}}
    status = 0

    # 1. data
    pack = Path(args.pack) if args.pack else (PACK if args.size == "full" else None)
    if pack is None:
        import pack_cifar10

        pack = work / "smoke.pack.npz"
        pack_cifar10.pack_sheets(make_smoke_source(work), pack)
    if not pack.is_file():
        log(f"Error: no data pack at {pack}: run `python benchmarks/gpu_slice.py prepare` here first.")
        return 2
    summary["data_sha256"] = unpack_data(log, pack, work / "data")

    # 2. the CUDA tests
    if "tests" in skip:
        log("CUDA tests: skipped (--skip tests)")
    elif not cuda:
        log("CUDA tests: skipped (no CUDA device here); they run in every slice on a GPU")
        summary["steps"]["tests"] = "skipped: no CUDA device"
    else:
        code = run_step(log, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CUDA_TESTS],
                        timeout=min(size["tests_seconds"], max(10.0, deadline - time.monotonic())))
        summary["steps"]["tests"] = code
        status = status or code

    # 3. the speed benchmark
    if "bench" in skip:
        log("speed benchmark: skipped (--skip bench)")
    else:
        bench_out = out / f"bench_trainer_{device}.json"
        code = run_step(log, [sys.executable, str(BENCHMARKS / "bench_trainer.py"), "--device", device,
                              "--data-dir", str(work / "data"), "--out", str(bench_out), *size["bench"]],
                        timeout=min(size["bench_seconds"], max(10.0, deadline - time.monotonic())))
        summary["steps"]["bench"] = code
        status = status or code

    # 4. the grid
    runs_dir = work / "results"
    committed = Path(args.runs_dir) if args.runs_dir else (GPU_RUNS if args.size == "full" else None)
    if committed is not None and committed.is_dir():
        shutil.copytree(committed, runs_dir)
    runs_dir.mkdir(exist_ok=True)
    before = {p.name: _digest(p) for p in runs_dir.glob("*") if p.is_file()}
    resumed = restore_resume(log, Path(args.resume) if args.resume else (RESUME_DIR if args.size == "full" else None),
                             work / "runs")
    grid_argv = [*size["grid"], *args.grid_args, "--device", device, "--data-dir", str(work / "data"),
                 "--runs-dir", str(runs_dir), "--out", str(work / "runs"), "--seeds", args.seeds or size["seeds"]]
    jobs = args.jobs or size["jobs"]
    report = GridReport()
    folders: dict[str, Path] = {}
    benchmark, done, missing = list_cells(grid_argv)
    folders = {cell_slug(c): Path(c.folder) for c in missing}
    if "grid" in skip:
        log("grid: skipped (--skip grid)")
        report.not_started = list(folders)
    else:
        try:
            report = run_grid(log, grid_argv=grid_argv, jobs=jobs, threads=args.threads or size["threads"],
                              deadline=deadline, cell_seconds=args.cell_seconds or size["cell_seconds"],
                              logs_dir=work / "logs", partial=size["partial"] if args.partial is None else args.partial)
        except Exception as error:  # the log and whatever finished must still come back
            log(f"grid stopped by {type(error).__name__}: {error}")
            status = status or 1
        assess(log, report, runs_dir=runs_dir, budget_seconds=budget, jobs=jobs, epochs=int(benchmark["args"].epochs))
        status = status or (1 if report.failed else 0)
    summary["steps"]["grid"] = {"finished": report.finished, "interrupted": report.interrupted,
                                "failed": report.failed, "not_started": report.not_started,
                                "resumed_from_earlier_slice": resumed}

    # 5. what comes back
    summary["wall_seconds"] = round(log.elapsed(), 1)
    write_outputs(log, out, work=work, runs_dir=runs_dir, before=before, report=report, folders=folders,
                  summary=summary)
    files = sorted(p for p in out.iterdir() if p.is_file())
    log(f"done in {log.elapsed():.0f}s: {len(files)} file(s) in {out}: "
        + ", ".join(f"{p.name} ({p.stat().st_size / 1024:.0f} KiB)" for p in files))
    if args.size != "full":
        shutil.rmtree(work, ignore_errors=True)
    return status


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="the slice's command (on the GPU machine, or --size cpu-smoke here)")
    runner.add_argument("--out", required=True, help="where the files that come back go ($OUT)")
    runner.add_argument("--size", choices=tuple(SIZES), default="full",
                        help="full: the GPU protocol on CUDA; cpu-smoke: every step on the CPU on tiny random data")
    runner.add_argument("--budget-minutes", type=float, default=None, help="wall time of the whole command (9)")
    runner.add_argument("--jobs", type=int, default=None, help="cells trained at once (5)")
    runner.add_argument("--threads", type=int, default=None, help="torch threads per cell (2)")
    runner.add_argument("--seeds", default=None, help="the grid's seeds, done in this order (0,1,2; 0 for cpu-smoke)")
    runner.add_argument("--cell-seconds", type=float, default=None,
                        help="estimated wall time of one whole cell with --jobs running (440 s on a GPU)")
    runner.add_argument("--partial", action=argparse.BooleanOptionalAction, default=None,
                        help="start a cell that cannot finish when a third of it fits (its state resumes next slice; "
                             "default on for full, off for cpu-smoke)")
    runner.add_argument("--skip", default="", help="comma-separated steps to leave out: tests, bench, grid")
    runner.add_argument("--pack", default=None, help=f"the CIFAR-10 pack (default {_rel(PACK)})")
    runner.add_argument("--resume", default=None, help=f"folder of resume parts (default {_rel(RESUME_DIR)})")
    runner.add_argument("--runs-dir", default=None,
                        help=f"the committed result files: cells there with the current key are not trained again "
                             f"(default {_rel(GPU_RUNS)}; none for cpu-smoke)")
    runner.add_argument("--work", default=None, help="scratch folder (default /tmp/adacal-gpu-slice; <out>/work for "
                                                     "cpu-smoke)")
    runner.add_argument("grid_args", nargs="*", help="more quality_cifar10.py options, after --")
    collector = commands.add_parser("collect", help="here, after a slice: file what came back")
    collector.add_argument("files", help="the folder the slice's files came back to")
    collector.add_argument("--runs-dir", default=str(GPU_RUNS), help="where the result files go")
    collector.add_argument("--slice-dir", default=str(SLICE_DIR), help="where the resume state and logs go")
    collector.add_argument("--bench-dir", default=str(ROOT / "benchmarks" / "results"),
                           help="where bench_trainer_cuda.json goes")
    preparer = commands.add_parser("prepare", help="here, before a slice: the pack and the transfer's size")
    preparer.add_argument("--source", default=str(ROOT.parent / "shared" / "data" / "cifar10.npz"))
    args = parser.parse_args(argv)
    return {"run": run, "collect": collect, "prepare": prepare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
