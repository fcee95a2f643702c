"""adacal.reports: atomic writes (old file kept, no temp files left), the report envelope, run folders."""

import json
import math
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal import __version__
from adacal import reports
from adacal.errors import InputError
from adacal.reports import (
    SCHEMA_VERSION,
    atomic_torch_save,
    file_sha256,
    make_report,
    new_run_dir,
    to_jsonable,
    write_json,
)
from adacal.sources.documents import read_json, read_report
from adacal.writing import write_file


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_write_json_roundtrip_and_no_temp_files(tmp_path):
    target = tmp_path / "sub" / "report.json"
    write_json(target, {"a": np.float32(0.5), "b": np.arange(3), "c": float("nan")})
    assert json.loads(target.read_text()) == {"a": 0.5, "b": [0, 1, 2], "c": None}
    assert listing(target.parent) == ["report.json"]


def test_failed_serialisation_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    write_json(target, {"version": "old"})

    def broken(*args, **kwargs):
        raise RuntimeError("serialisation failed")

    monkeypatch.setattr(reports.json, "dumps", broken)
    with pytest.raises(RuntimeError, match="serialisation failed"):
        write_json(target, {"version": "new"})
    assert json.loads(target.read_text()) == {"version": "old"}
    assert listing(tmp_path) == ["report.json"]


@pytest.mark.parametrize("error, expected",
                         [(OSError(28, "No space left on device"), InputError),
                          (KeyboardInterrupt(), KeyboardInterrupt)])
def test_failed_rename_keeps_the_old_file_and_removes_the_temp(tmp_path, monkeypatch, error, expected):
    target = tmp_path / "report.json"
    write_json(target, {"version": "old"})

    def broken(src, dst):
        raise error

    monkeypatch.setattr(reports.os, "replace", broken)
    with pytest.raises(expected) as info:
        write_json(target, {"version": "new"})
    if expected is InputError:
        assert "Cannot write" in str(info.value) and "No space left" in str(info.value)
    assert json.loads(target.read_text()) == {"version": "old"}
    assert listing(tmp_path) == ["report.json"]


def test_failure_while_writing_removes_the_temp(tmp_path):
    def write(handle):
        handle.write("partial")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        write_file(tmp_path / "x.txt", write)
    assert listing(tmp_path) == []


def test_unwritable_folder_is_an_input_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(InputError, match="Cannot write"):
        write_json(blocker / "report.json", {})


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX permissions")
def test_atomic_files_get_the_permissions_of_a_plain_open(tmp_path):
    """Not the 0o600 of the temp file: a report or checkpoint is as readable as any file the user writes."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    for write in (lambda p: write_json(p, {}), lambda p: atomic_torch_save({}, p)):
        target = tmp_path / "atomic"
        write(target)
        assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
        target.unlink()


def test_atomic_torch_save_roundtrip(tmp_path):
    target = tmp_path / "state.pt"
    atomic_torch_save({"w": torch.ones(2)}, target)
    assert torch.load(target, weights_only=True)["w"].tolist() == [1.0, 1.0]
    assert listing(tmp_path) == ["state.pt"]


def test_to_jsonable_types():
    value = to_jsonable({1: (np.int64(3), torch.tensor([1.5]), float("inf"), Path("a") / "b")})
    assert value == {"1": [3, [1.5], None, str(Path("a") / "b")]}
    assert to_jsonable(np.bool_(True)) is True


def test_make_report_envelope(tmp_path):
    source = tmp_path / "preds.npz"
    source.write_bytes(b"abc")
    report = make_report("evaluate", config={"n_bins": 15}, results={"x": 1}, input_path=source)
    assert report["schema_version"] == SCHEMA_VERSION
    assert report["kind"] == "evaluate" and report["adacal_version"] == __version__
    assert report["created"].endswith("+00:00")
    assert report["input"] == {"path": str(source), "sha256": file_sha256(source)}
    assert file_sha256(source) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    assert list(report)[-2:] == ["config", "results"]
    assert "input" not in make_report("evaluate", config={}, results={})


def test_read_report_checks_envelope_and_kind(tmp_path):
    path = tmp_path / "report.json"
    write_json(path, make_report("evaluate", config={}, results={"metrics": {"ece_em": 0.1}}))
    assert read_report(path, kind="evaluate")["results"] == {"metrics": {"ece_em": 0.1}}
    with pytest.raises(InputError, match=r"Expected .*report.json to be a report of kind 'calibrate', got one of kind "
                                         r"'evaluate'\."):
        read_report(path, kind="calibrate")
    write_json(path, {"results": {}})
    with pytest.raises(InputError, match="no schema_version/results"):
        read_report(path)
    write_json(path, {"schema_version": 99, "results": {}})
    with pytest.raises(InputError, match="schema_version 1, got 99"):
        read_report(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="could not be parsed"):
        read_report(path)
    with pytest.raises(InputError, match="does not exist"):
        read_json(tmp_path / "missing.json")


def test_new_run_dir_never_reuses(tmp_path):
    first = new_run_dir(tmp_path / "runs", "exp")
    second = new_run_dir(tmp_path / "runs", "exp")
    (tmp_path / "runs" / "exp-3").mkdir()
    third = new_run_dir(tmp_path / "runs", "exp")
    assert [first.name, second.name, third.name] == ["exp", "exp-2", "exp-4"]
    assert all(p.is_dir() for p in (first, second, third))


def test_new_run_dir_under_a_file_is_an_input_error(tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("")
    with pytest.raises(InputError, match="Cannot create the output folder"):
        new_run_dir(blocker, "exp")


def test_json_has_no_nan_literals(tmp_path):
    path = tmp_path / "r.json"
    write_json(path, {"x": [math.nan, 1.0]})
    assert "NaN" not in path.read_text()


# ------------------------------------------------------------------------------------------ the one writer (write side)


def test_temp_files_of_dead_writers_are_cleaned_and_live_ones_kept(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "figure.png"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        stale = tmp_path / f".figure.png.{dead.pid}.abcd1234.tmp"  # a writer SIGKILLed mid-write
        busy = tmp_path / f".figure.png.{live.pid}.efgh5678.tmp"  # another process writing right now
        other = tmp_path / f".other.png.{dead.pid}.abcd1234.tmp"  # not this file's
        for path in (stale, busy, other):
            path.write_bytes(b"half")
        write_file(target, lambda handle: handle.write(b"png"), binary=True)
        assert target.read_bytes() == b"png"
        assert not stale.exists() and busy.exists() and other.exists()
    finally:
        live.kill()
        live.wait()


def test_writes_go_through_links_and_into_devices(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(real / "report.json")
    write_json(link, {"a": 1})
    assert link.is_symlink() and json.loads((real / "report.json").read_text()) == {"a": 1}
    assert listing(real) == ["report.json"] and listing(tmp_path) == ["link.json", "real"]
    write_json("/dev/null", {"a": 1})
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dash_writes_to_stdout(capsys):
    write_json("-", {"a": [1, 2]})
    assert json.loads(capsys.readouterr().out) == {"a": [1, 2]}


def test_too_long_names_and_folders_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="at most"):
        write_json(tmp_path / ("y" * 300 + ".json"), {})
    with pytest.raises(InputError, match="folder"):
        write_json(tmp_path, {})
    long_but_valid = "z" * 250 + ".json"  # fits, though its temp file name would not without shortening
    write_json(tmp_path / long_but_valid, {"ok": True})
    assert listing(tmp_path) == [long_but_valid]


def test_new_run_dir_named_refuses_a_taken_name(tmp_path):
    assert new_run_dir(tmp_path, "ce", unique=False) == tmp_path / "ce"
    with pytest.raises(InputError, match="already exists"):
        new_run_dir(tmp_path, "ce", unique=False)
    assert new_run_dir(tmp_path, "ce") == tmp_path / "ce-2"
def test_read_json_is_strict_and_bounded(tmp_path):
    """Reports are read back through adacal.sources: strict JSON, regular files only, schemas."""
    path = tmp_path / "doc.json"
    path.write_text('{"a": NaN}')
    with pytest.raises(InputError, match="NaN is not a JSON number"):
        read_json(path)
    path.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(InputError, match="nest at most"):
        read_json(path)
    os.mkfifo(tmp_path / "pipe.json")
    with pytest.raises(InputError, match="FIFO"):
        read_report(tmp_path / "pipe.json")
    write_json(path, make_report("calibrate", config={}, results={"calibrators": {"t": {"params": "T=2"}}}))
    with pytest.raises(InputError, match="'results.calibrators.t.params' in .* to be an object, got a string"):
        read_report(path, kind="calibrate")
    write_json(path, make_report("evaluate", config={}, results={"metrics": {"ece_em": 0.1}}))
    assert read_report(path)["kind"] == "evaluate"  # a valid report of any kind reads without naming the kind
