"""Where `adacal plot` writes, and what it may replace there.

- **Default names.** One input: `<run>/plots/<kind>.png` for a run folder (or a file inside one), else
  `<input stem>-<kind>.png` beside the input. Several inputs (a comparison): `plots/compare-<kind>-<names>.png` in
  the current folder, so a comparison never lands on a single run's figure, nor inside the folder that holds the
  runs (where `adacal plot curves runs/*` would then take it for a run). The names are the
  inputs' run-folder names or file stems; when they repeat or run long, a hash of the inputs' paths stands in.
- **Replacing.** Every figure `adacal plot` writes records its kind in the file's metadata (PNG `Comment`, SVG
  `dc:description`, PDF `Subject`: "adacal plot <kind>"). An existing output is replaced only when it is a figure of
  the same kind (drawing a figure again updates it); any other file — another kind's figure, a figure from elsewhere,
  a file whose kind cannot be read — is refused unless `force`.
- **Temp files.** Figures are written to a temp file beside the target and renamed (`adacal.writing.write_file`:
  `.<name>.<writer's pid>.<8 random characters>.tmp`). A plot killed mid-write leaves its temp file behind, and the
  next figure saved into that folder deletes the figure temp files whose writer process is gone; those of live
  writers are left alone.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from adacal.errors import InputError
from adacal.runs import find_run_folder, require_run_folder
from adacal.writing import remove_dead_writers_temp_files


KIND_PREFIX = "adacal plot "
_MAX_NAMES_LENGTH = 80
_HEAD_BYTES = 64 * 1024
_KIND_PATTERNS = {
    # The chunk's 4-byte length first: the kind ends where the chunk does, not at the CRC bytes after it (which may
    # read as letters).
    "png": re.compile(rb"(?s)(.{4})tEXtComment\x00adacal plot ([a-z-]+)"),
    "svg": re.compile(rb"<dc:description>adacal plot ([a-z-]+)</dc:description>"),
    "pdf": re.compile(rb"/Subject \(adacal plot ([a-z-]+)\)"),
}
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def default_output(path: str | os.PathLike, kind: str) -> Path:
    """Where a figure of one input goes by default: `<run>/plots/<kind>.png` for a run folder, else
    `<stem>-<kind>.png` beside the input."""
    path = Path(path)
    if path.is_dir():
        return require_run_folder(path).plots / f"{kind}.png"
    return path.with_name(f"{path.stem}-{kind}.png")


def _input_name(path: Path) -> str:
    run = find_run_folder(path) if path.exists() else None
    name = run.root.name if run is not None else path.stem
    return re.sub(r"[^A-Za-z0-9._+]+", "_", name).strip("._") or "input"


def comparison_output(paths: Sequence[str | os.PathLike], kind: str) -> Path:
    """Where a figure comparing several inputs goes by default: `plots/compare-<kind>-<names>.png` in the current
    folder."""
    paths = [Path(p) for p in paths]
    resolved = [p.resolve() for p in paths]
    folder = Path("plots")
    names = [_input_name(p) for p in paths]
    joined = "-".join(names)
    if len(set(names)) == len(names) and len(joined) <= _MAX_NAMES_LENGTH:
        return folder / f"compare-{kind}-{joined}.png"
    digest = hashlib.sha256("\0".join(str(p) for p in resolved).encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return folder / f"compare-{kind}-{len(paths)}-inputs-{digest}.png"


def figure_kind(path: str | os.PathLike) -> str | None:
    """The kind ("reliability", "gamma", ...) that `adacal plot` recorded in the figure at `path`; None when the file
    is not a figure adacal plot wrote (or its metadata cannot be read)."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in _KIND_PATTERNS:
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
            size = os.fstat(handle.fileno()).st_size
            tail = b""
            if size > _HEAD_BYTES:
                handle.seek(max(_HEAD_BYTES, size - _HEAD_BYTES))
                tail = handle.read()
    except OSError:
        return None
    match = _KIND_PATTERNS[fmt].search(head) or _KIND_PATTERNS[fmt].search(tail)
    if match is None:
        return None
    if fmt == "png":
        text_length = int.from_bytes(match.group(1), "big") - len(b"Comment\x00" + KIND_PREFIX.encode("ascii"))
        return match.group(2)[:max(text_length, 0)].decode("ascii") or None
    return match.group(1).decode("ascii")


def check_replace(path: str | os.PathLike, kind: str, *, force: bool = False) -> None:
    """Refuse (InputError) to write a `kind` figure over an existing file that is not a `kind` figure, unless `force`.

    A directory is always refused; a path that exists but is neither a regular file nor a directory (a FIFO, a
    device) is left to the writer, and never opened here."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"Expected the output {path} to be a file, but it is a folder.")
    if force or not stat.S_ISREG(info.st_mode):
        return
    found = figure_kind(path)
    if found == kind:
        return
    what = f"a '{found}' figure" if found else "a file that adacal plot did not draw"
    raise InputError(f"{path} already exists and is {what}; give another --out, or --force to replace it.")


def clean_stale_temp_files(folder: str | os.PathLike) -> list[Path]:
    """Delete figure temp files in `folder` whose writer process is gone (a killed plot's leftovers); return them."""
    return remove_dead_writers_temp_files(folder, suffixes=FIGURE_SUFFIXES)
