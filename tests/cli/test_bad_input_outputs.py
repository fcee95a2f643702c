"""Output paths of every command: what the one writer (adacal.writing) refuses, and where it writes.

Refusals (a table, like tests/cli/test_bad_input.py): exit 2, exactly one `Error:` line on stderr, no traceback, and no
file created or modified in the working folder or in what the fixtures built. Then the outputs that must work: `--json
-` (the report is the whole of stdout), a symbolic link (written through, still a link), a FIFO and /dev/null (written
in place, never replaced), `--force`, `-q`'s one summary line, and warnings held back behind an `Error:` line.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import typer

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot, write_prediction_files



@pytest.fixture(scope="module")
def base(tmp_path_factory, train_tiny_run):
    root = tmp_path_factory.mktemp("outputs")
    run = train_tiny_run(root)
    split = write_prediction_files(root, run)
    np.savez(root / "ood_in.npz", logits=split["test_logits"])
    np.savez(root / "ood_out.npz", logits=split["val_logits"])
    assert runner.invoke(app, ["calibrate", str(run), "-q"]).exit_code == 0  # run/calibrate.json, read by ood
    return {"root": root, "run": run, "preds": root / "preds.npz", "split": root / "split.npz",
            "ood_in": root / "ood_in.npz", "ood_out": root / "ood_out.npz"}


LONG = "x" * 300

REFUSED = [
    (["evaluate", "{preds}", "--json", "{preds}"], "one of this command's inputs"),
    (["evaluate", "{run}", "--json", "{run}/history.jsonl"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/config.json"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/predictions.npz"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/evaluate.json"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/checkpoints/last.pt"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/checkpoints/best.pt"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{run}/.lock"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{link_to_history}"], "'adacal train' wrote it"),
    (["evaluate", "{preds}", "--json", "{link_to_preds}"], "one of this command's inputs"),
    (["evaluate", "{preds}", "--json", "{hardlink_to_preds}"], "one of this command's inputs"),
    (["ood", "--model", "{run}", "--in", "digits", "--out", "digits", "--json", "{run}/calibrate.json"],
     "one of this command's inputs"),
    (["evaluate", "{preds}", "--json", LONG + ".json"], "at most"),
    (["evaluate", "{preds}", "--json", f"sub/{LONG}/r.json"], "at most"),
    (["evaluate", "{preds}", "--json", "{root}"], "is a folder"),
    (["evaluate", "{preds}", "--json", "/proc/adacal-no-such-folder/r.json"], "Cannot write"),
    (["calibrate", "{split}", "--json", "{split}"], "one of this command's inputs"),
    (["calibrate", "{split}", "--save", "{split}"], "one of this command's inputs"),
    (["calibrate", "{split}", "--save", "{run}/config.json"], "'adacal train' wrote it"),
    (["calibrate", "{run}", "--json", "{run}/evaluate.json"], "'adacal train' wrote it"),
    (["calibrate", "{split}", "--json", "-", "--save", "-"], "at most one of --json and --save"),
    (["calibrate", "{split}", "--json", "{root}/same.json", "--save", "{root}/./same.json"],
     "--save and --json to be different files"),
    (["calibrate", "{run}", "--save", "{run}/calibrate.json", "--force"], "--save and the report"),
    (["calibrate", "{split}", "--save", LONG + ".json"], "at most"),
    (["ood", "--in-preds", "{ood_in}", "--out-preds", "{ood_out}", "--json", "{ood_in}"],
     "one of this command's inputs"),
    (["ood", "--in-preds", "{ood_in}", "--out-preds", "{ood_out}", "--json", "{ood_out}"],
     "one of this command's inputs"),
    (["ood", "--in-preds", "{ood_in}", "--out-preds", "{ood_out}", "--json", "{run}/history.jsonl"],
     "'adacal train' wrote it"),
    (["ood", "--in-preds", "{ood_in}", "--out-preds", "{ood_out}", "--json", LONG], "at most"),
    (["plot", "reliability", "{preds}", "--out", LONG + ".png"], "at most"),
    (["plot", "curves", "{run}", "--out", "{link_to_curves}"], "'adacal train' wrote it"),
    (["train", "--out", "{root}", "--name", LONG], "at most"),
    (["train", "--out", LONG], "Expected --out to have file and folder names of at most"),
    (["train", "--out", f"runs/{LONG}/x", "--print-config"], "Expected --out"),
    (["train", "--data-dir", f"data/{LONG}"], "Expected --data-dir to have file and folder names"),
    (["train", "--dataset", "20newsgroups", "--model", "textcnn", "--embeddings", LONG], "Expected --embeddings"),
    # numbers refused before the run folder is created
    (["train", "--lr", "1e39"], "Expected --lr to be a number float32 weights can use"),
    (["train", "--lr", "1e-50"], "Expected --lr to be a number float32 weights can use"),
    (["train", "--lr", "nan"], "--lr"),
    (["train", "--weight-decay", "nan"], "--weight-decay"),
    (["train", "--weight-decay", "1e39"], "--weight-decay to be a number float32"),
    (["train", "--momentum", "inf"], "--momentum"),
    (["train", "--lr-decay", "1e-300"], "--lr-decay to be a number float32"),
    (["train", "--grad-clip", "1e39"], "--grad-clip to be a number float32"),
    (["train", "--grad-clip", "-inf"], "--grad-clip"),
    (["train", "--loss", "focal", "--gamma", "1e39"], "--gamma to be a number float32"),
    (["train", "--gamma-max", "1e39"], "--gamma-max to be a number float32"),
    (["train", "--lam", "-1e300"], "--lam"),
    (["train", "--num-bins", "1000000000000000"], "--num-bins to be at most"),
    (["train", "--loss-reduction", "avg"], "--loss-reduction to be one of mean, sum"),
    (["train", "--name", "a/b"], "--name to be a folder name"),
    (["train", "--name", ".."], "--name to be a folder name"),
    (["train", "--name", "{run}/../x"], "--name to be a folder name"),
    (["train", "--print-config", "--momentum", "inf"], "--momentum"),
    (["train", "--out", "/proc/adacal-no-such/runs", "--epochs", "1", "--train-subset", "64"], "Cannot create"),
    (["train", "--out", "{root}/new", "--name", "x", "--dataset", "no-such-set"], "dataset"),
]


def _fill(args: list[str], paths: dict[str, Path]) -> list[str]:
    return [arg.format(**{k: str(v) for k, v in paths.items()}) for arg in args]


@pytest.mark.parametrize("args, expected", REFUSED, ids=[" ".join(a)[:60] for a, _ in REFUSED])
def test_refused_output_is_one_line_and_touches_nothing(base, tmp_path, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    paths = dict(base)
    (tmp_path / "link_to_history").symlink_to(base["run"] / "history.jsonl")
    (tmp_path / "link_to_preds").symlink_to(base["preds"])
    os.link(base["preds"], tmp_path / "hardlink_to_preds")
    (tmp_path / "curves.png").symlink_to(base["run"] / "config.json")  # a figure path that is the run's own file
    paths.update(link_to_history=tmp_path / "link_to_history", link_to_preds=tmp_path / "link_to_preds",
                 hardlink_to_preds=tmp_path / "hardlink_to_preds",
                 link_to_curves=tmp_path / "curves.png")
    before = snapshot(base["root"], tmp_path)
    result = runner.invoke(app, _fill(args, paths))
    one_line_error(result, expected)
    assert result.stdout == ""
    assert snapshot(base["root"], tmp_path) == before


def test_json_dash_writes_only_the_report_to_stdout(base):
    for args in (["evaluate", str(base["preds"]), "--json", "-"],
                 ["calibrate", str(base["split"]), "--json", "-"],
                 ["calibrate", str(base["split"]), "--save", "-"],
                 ["ood", "--in-preds", str(base["ood_in"]), "--out-preds", str(base["ood_out"]), "--json", "-"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)  # the whole of stdout is one JSON document
        assert report["schema_version"] == 1 and "results" in report
        assert not Path("-").exists()


def test_quiet_prints_exactly_one_summary_line(base):
    for args, word in ((["evaluate", str(base["preds"])], "ECE-EM"), (["calibrate", str(base["split"])], "ECE-EM"),
                       (["ood", "--in-preds", str(base["ood_in"]), "--out-preds", str(base["ood_out"])], "AUROC")):
        result = runner.invoke(app, [*args, "-q"])
        assert result.exit_code == 0, result.output
        assert len(result.stdout.splitlines()) == 1 and word in result.stdout


def test_symlink_is_written_through_and_stays_a_link(base, tmp_path):
    target_dir = tmp_path / "elsewhere"
    target_dir.mkdir()
    target = target_dir / "report.json"
    target.write_text("old")
    link = tmp_path / "out" / "report.json"
    link.parent.mkdir()
    link.symlink_to(target)
    result = runner.invoke(app, ["evaluate", str(base["preds"]), "--json", str(link), "-q"])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["kind"] == "evaluate"
    assert sorted(p.name for p in target_dir.iterdir()) == ["report.json"]  # no temp file left beside the target
    assert sorted(p.name for p in link.parent.iterdir()) == ["report.json"]


def test_dangling_symlink_creates_its_target(base, tmp_path):
    target = tmp_path / "made.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert runner.invoke(app, ["evaluate", str(base["preds"]), "--json", str(link), "-q"]).exit_code == 0
    assert link.is_symlink() and json.loads(target.read_text())["kind"] == "evaluate"


def test_dev_null_is_written_in_place(base):
    result = runner.invoke(app, ["evaluate", str(base["preds"]), "--json", "/dev/null", "-q"])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_fifo_is_written_in_place_by_a_real_process(base, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "adacal", "evaluate", str(base["preds"]), "--json", str(fifo), "-q"],
                          capture_output=True, text=True, timeout=120, env=env)
    reader.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(received[0])["kind"] == "evaluate"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO, not replaced by a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.fifo"]


def test_fifo_without_reader_is_refused_not_a_hang(base, tmp_path, monkeypatch):
    from adacal import writing

    monkeypatch.setattr(writing, "FIFO_WAIT_SECONDS", 0.2)
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["evaluate", str(base["preds"]), "--json", str(fifo), "-q"])
    assert result.exit_code == 2 and "no process opened it for reading" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_force_replaces_an_input_and_a_train_file(base, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(base["run"], run)
    preds = tmp_path / "preds.npz"
    shutil.copy(base["preds"], preds)
    result = runner.invoke(app, ["evaluate", str(preds), "--json", str(run / "evaluate.json"), "--force", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads((run / "evaluate.json").read_text())["input"]["path"] == str(preds)
    result = runner.invoke(app, ["evaluate", str(preds), "--json", str(preds), "--force", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(preds.read_text())["kind"] == "evaluate"


def test_warnings_never_print_before_the_error_line():
    from adacal.cli.common import OneLineErrorGroup, guarded
    from adacal.errors import InputError

    tiny = typer.Typer(cls=OneLineErrorGroup)

    @tiny.command()
    @guarded
    def fails(ok: bool = False) -> None:
        np.log(np.zeros(1))  # RuntimeWarning: divide by zero
        warnings.warn("a library warning", UserWarning)
        if not ok:
            raise InputError("Expected something, got nothing.")
        typer.echo("done")

    @tiny.command()
    def other() -> None:  # pragma: no cover - a second command so that `fails` is a subcommand
        pass

    with np.errstate(divide="warn"):
        result = runner.invoke(tiny, ["fails"])
        assert result.exit_code == 2
        assert result.stderr.splitlines() == ["Error: Expected something, got nothing."]
        result = runner.invoke(tiny, ["fails", "--ok"])
    assert result.exit_code == 0 and result.stdout == "done\n"
    assert "a library warning" in result.stderr  # shown after a successful run


def test_a_failed_download_leaves_no_data_folder(tmp_path, monkeypatch):
    """A --data-dir typo or a download that cannot happen: the folders made for it are gone again."""
    from urllib.error import URLError

    from adacal.data import vision

    def offline(root):
        (root / "cifar-10-python.tar.gz.part").write_bytes(b"half")  # what a failed download leaves
        raise URLError("no network")

    import dataclasses

    monkeypatch.setitem(vision.SPECS, "cifar10", dataclasses.replace(vision.SPECS["cifar10"], fetch=offline))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    result = runner.invoke(app, ["train", "--dataset", "cifar10", "--data-dir", "data/typo/deeper", "--epochs", "1"])
    assert result.exit_code == 2 and "Could not download CIFAR-10" in result.stderr
    # the fix a user needs: where to point adacal at the data
    assert "--data-dir DIR or $ADACAL_DATA at a folder that holds it" in result.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["data"]


def test_a_resumed_run_never_downloads_into_the_folder_its_checkpoint_records(tmp_path):
    from adacal.training import TrainConfig
    from adacal.training.entry import _data_source

    recorded = tmp_path / "recorded"
    resolved = TrainConfig(data_dir=str(recorded))
    assert _data_source(TrainConfig(), resolved, resumed=True) == (None, True)  # missing: the default folder
    recorded.mkdir()
    assert _data_source(TrainConfig(), resolved, resumed=True) == (str(recorded), False)  # exists: read only
    typed = TrainConfig(data_dir=str(tmp_path / "typed"))
    assert _data_source(typed, TrainConfig(data_dir=typed.data_dir), resumed=True) == (typed.data_dir, True)
    assert _data_source(TrainConfig(), resolved, resumed=False) == (str(recorded), True)


def test_plot_cleans_the_temp_file_a_killed_plot_left(base, tmp_path):
    """A plot SIGKILLed while writing leaves `.<figure>.<pid>.*.tmp`; the next write of that figure removes it."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    figure = tmp_path / "reliability.png"
    leftover = tmp_path / f".reliability.png.{dead.pid}.k1ll3d00.tmp"
    leftover.write_bytes(b"\x89PNG half")
    result = runner.invoke(app, ["plot", "reliability", str(base["preds"]), "--out", str(figure)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reliability.png"]
    assert figure.read_bytes().startswith(b"\x89PNG")
