"""What travels between here and a GPU slice's machine: data and resume state there, files back, and their filing.

- `prepare` (here, before a slice): makes the CIFAR-10 pack when missing and checks that the tree plus what is
  carried (runs/gpu-slice) fits the 64 MiB a slice takes.
- On the machine, benchmarks/gpu_slice.py packs what comes back: `pack_tar`, and the state of interrupted cells
  (`resume_members`, in parts of at most 15 MiB by `split_members`), which the next slice unpacks (`restore_resume`).
- `collect` (here, after a slice): result files into the GPU grid's folder, the speed figures into
  benchmarks/results/, the resume parts into runs/gpu-slice/resume/ (replacing the last slice's), cell logs into
  runs/gpu-slice/logs/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

SLICE_DIR = ROOT / "runs" / "gpu-slice"  # ignored by git (runs/); what a slice carries there and back
PACK = SLICE_DIR / "cifar10.pack.npz"
RESUME_DIR = SLICE_DIR / "resume"
GPU_RUNS = ROOT / "benchmarks" / "results" / "quality_runs" / "cifar10-gpu"  # the GPU grid's committed result files
TRANSFER_LIMIT = 64 * 2**20
PART_LIMIT = 15 * 2**20  # a returned file may hold 16 MiB
MAX_FILES = 8
RUN_COMMAND = 'bash benchmarks/gpu_slice.sh "$OUT"'
RUN_CARRY = ["runs/gpu-slice"]
RUN_TIMEOUT_S = 590


def pack_tar(target: Path, members: list[tuple[Path, str]]) -> int:
    """A gzip'd tar of (file, name in the archive) pairs; returns its size."""
    with tarfile.open(target, "w:gz") as archive:
        for path, name in members:
            archive.add(path, arcname=name)
    return target.stat().st_size


def resume_members(runs_out: Path, cells: list[str], folders: dict[str, Path]) -> list[tuple[Path, str]]:
    """What an interrupted cell needs to resume elsewhere: each run folder's config.json, history.jsonl and
    checkpoints/last.pt (not interrupted.pt: resuming from last.pt repeats at most the epoch cut short)."""
    members = []
    for slug in cells:
        folder = folders[slug]
        for run in sorted(p for p in folder.glob("*") if (p / "checkpoints" / "last.pt").is_file()):
            for name in ("config.json", "history.jsonl", "checkpoints/last.pt"):
                path = run / name
                if path.is_file():
                    members.append((path, str(path.relative_to(runs_out))))
    return members


def split_members(members: list[tuple[Path, str]], limit: int = PART_LIMIT) -> list[list[tuple[Path, str]]]:
    """Members grouped into parts of at most `limit` bytes (before compression), a run folder's files never split
    (a run larger than `limit` gets a part of its own)."""
    runs: dict[str, list[tuple[Path, str]]] = {}
    for path, name in members:
        runs.setdefault("/".join(name.split("/")[:2]), []).append((path, name))
    parts: list[list[tuple[Path, str]]] = []
    size = 0
    for files in runs.values():
        length = sum(path.stat().st_size for path, _ in files)
        if not parts or size + length > limit:
            parts.append([])
            size = 0
        parts[-1].extend(files)
        size += length
    return parts


def restore_resume(log: Any, folder: Path | None, runs_out: Path) -> list[str]:
    """Unpack the resume parts a previous slice sent back into the runs folder; returns the run folders restored."""
    if folder is None or not folder.is_dir():
        return []
    restored: set[str] = set()
    runs_out.mkdir(parents=True, exist_ok=True)
    for part in sorted(folder.glob("resume-*.tar.gz")):
        with tarfile.open(part, "r:gz") as archive:
            archive.extractall(runs_out, filter="data")
            restored.update("/".join(name.split("/")[:2]) for name in archive.getnames())
    if restored:
        log(f"resuming {len(restored)} run folder(s) from an earlier slice: {', '.join(sorted(restored))}")
    return sorted(restored)


def collect(args: argparse.Namespace) -> int:
    """Here, after a slice: result files into --runs-dir, the speed figures into benchmarks/results/, the resume
    parts into runs/gpu-slice/resume/ (replacing the last slice's), cell logs into runs/gpu-slice/logs/."""
    from quality_files import RESULT_SCHEMA, SIDE_SUFFIX

    source = Path(args.files)
    results = source / "results.tar.gz"
    if not results.is_file():
        print(f"Error: {source} holds no results.tar.gz: the slice did not get to its end (read its slice.log); "
              f"nothing collected, the resume state of the last slice is kept.", file=sys.stderr)
        return 2
    runs_dir, slice_dir = Path(args.runs_dir), Path(args.slice_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(results, "r:gz") as archive:
        for member in archive.getmembers():
            name = Path(member.name)
            data = archive.extractfile(member).read() if member.isfile() else None
            if data is None:
                continue
            if name.parts[0] == "results" and (name.name.endswith(".json") or name.name.endswith(SIDE_SUFFIX)):
                if name.name.endswith(".json") and json.loads(data).get("schema") != RESULT_SCHEMA:
                    continue
                (runs_dir / name.name).write_bytes(data)
                written.append(name.name)
            elif name.parts[0] in ("logs", "slice.json"):
                target = slice_dir / "logs" / name.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    print(f"{len(written)} result file(s) into {_rel(runs_dir)}: {', '.join(written) or 'none'}")
    bench = source / "bench_trainer_cuda.json"  # a CPU smoke run's figures are not filed
    if bench.is_file():
        target = Path(args.bench_dir) / bench.name
        shutil.copyfile(bench, target)
        print(f"GPU speed figures: {_rel(target)}")
    resume = slice_dir / "resume"
    shutil.rmtree(resume, ignore_errors=True)
    parts = sorted(source.glob("resume-*.tar.gz"))
    if parts:
        resume.mkdir(parents=True)
        for part in parts:
            shutil.copyfile(part, resume / part.name)
    print(f"resume state for the next slice: {len(parts)} part(s) in {_rel(resume)}")
    print("next: python benchmarks/quality_cifar10.py --protocol gpu --summary-only   (then commit the new files)")
    return 0


def transfer_size(extra: list[Path]) -> int:
    """Bytes the device tool would send: tracked and untracked-not-ignored files, plus `extra` (carried paths)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    total = sum((ROOT / name.decode()).stat().st_size for name in listed if name and (ROOT / name.decode()).is_file())
    for path in extra:
        total += sum(p.stat().st_size for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file())
    return total


def prepare(args: argparse.Namespace) -> int:
    """Here, before a slice: make the pack when missing, and check that the tree and what is carried fit."""
    import pack_cifar10

    if not PACK.is_file():
        source = Path(args.source)
        if not source.is_file():
            print(f"Error: no pack at {_rel(PACK)} and no CIFAR-10 at {source} to make it from (--source).",
                  file=sys.stderr)
            return 2
        figures = pack_cifar10.pack_sheets(source, PACK)
        print(f"wrote {_rel(PACK)}: {figures['bytes'] / 2**20:.1f} MiB, {figures['psnr_db']:.1f} dB PSNR")
    total = transfer_size([SLICE_DIR])
    print(f"transfer: {total / 2**20:.1f} MiB of {TRANSFER_LIMIT / 2**20:.0f} (tree + {_rel(SLICE_DIR)})")
    if total > TRANSFER_LIMIT - 2**20:
        print("Error: that does not fit one transfer: remove what is not needed under runs/gpu-slice, or keep fewer "
              "resume parts.", file=sys.stderr)
        return 2
    print(f"run (device tool): command {RUN_COMMAND!r}, carry {json.dumps(RUN_CARRY)}, timeout_s {RUN_TIMEOUT_S}")
    print("then: python benchmarks/gpu_slice.py collect FILES_AT")
    return 0


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
