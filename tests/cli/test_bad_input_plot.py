"""Damaged history.jsonl files for the plots that read a run's history (`plot gamma`, `plot correspondence`,
`plot curves`), in the style of test_bad_input_sources.py: every case fails with a non-zero exit, exactly one
`Error:` line on stderr naming the problem (the line number for a damaged line), no traceback, and nothing created
or modified. Placeholders: {ws} the folder of damaged run folders built once by `_damaged_runs`, {run} the intact
digits/mlp/adafocal run they are copied from.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot



@pytest.fixture(scope="module")
def base(tmp_path_factory, train_tiny_run):
    root = tmp_path_factory.mktemp("bad-plot")
    run = train_tiny_run(root, epochs=3, loss="adafocal")
    base = {"root": root, "run": run, "ws": root / "bad"}
    base["ws"].mkdir()
    _damaged_runs(base["ws"], run)
    return base


def _copy_run(ws: Path, run: Path, name: str) -> Path:
    target = ws / name
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("checkpoints", "plots"))
    return target


def _with_update(record: dict, **fields) -> str:
    """The record with its first AdaFocal update changed (a field given as None is removed)."""
    update = dict(record["adafocal"]["updates"][0])
    for key, value in fields.items():
        if value is None:
            del update[key]
        else:
            update[key] = value
    updates = [update, *record["adafocal"]["updates"][1:]]
    return json.dumps({**record, "adafocal": {**record["adafocal"], "updates": updates}})


def _damaged_runs(ws: Path, run: Path) -> None:
    lines = (run / "history.jsonl").read_text().splitlines()
    first, second, third = lines[:3]
    record = json.loads(second)
    update = record["adafocal"]["updates"][0]
    texts = {
        # wrong types of the fields every plot reads
        "epoch_text": [first, second.replace('"epoch": 2', '"epoch": "two"'), third],
        "epoch_float": [first, second.replace('"epoch": 2', '"epoch": 2.0'), third],
        "lr_text": [first, second.replace('"lr": ', '"lr": "fast", "x": ', 1), third],
        "updates_not_list": [first, json.dumps({**record, "adafocal": {"updates": {"gamma": 1}}}), third],
        "record_list": [first, "[1, 2]", third],
        "record_number": [first, "2", third],
        "record_null": [first, "null", third],
        "gammas_text": [first, _with_update(record, gammas="high"), third],
        "gammas_short": [first, _with_update(record, gammas=update["gammas"][:-1]), third],
        "gammas_nested": [first, _with_update(record, gammas=[[g] for g in update["gammas"]]), third],
        "edges_missing": [first, _with_update(record, edges=None), third],
        "confidence_bool": [first, _with_update(record, val_confidence=[True] * len(update["gammas"])), third],
        "counts_negative": [first, _with_update(record, counts=[-1] * len(update["gammas"])), third],
        "train_counts_text": [first, json.dumps({**record, "adafocal": {**record["adafocal"], "train_counts": "47"}}),
                              third],
        "update_not_object": [first, json.dumps({**record, "adafocal": {"updates": [3]}}), third],
        # garbage in the middle
        "garbage": [first, "}}} garbage {{{", second, third],
        "half_line": [first, second[: len(second) // 2], third],
        "two_records_one_line": [first, second + third],
        "nan": [first, second.replace('"lr": ', '"lr": NaN, "x": ', 1), third],
        "huge_int": [first, second.replace('"epoch": 2', '"epoch": 2, "x": ' + "9" * 5000), third],
        "deep": [first, second[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}", third],
        # epochs out of order or missing
        "order": [second, first, third],
        "gap": [first, third],
        "repeat": [first, first, second],
        "first_missing": [second, third],
        # nothing to draw
        "empty": [],
        "blank": ["", "   ", ""],
    }
    for name, content in texts.items():
        folder = _copy_run(ws, run, f"h_{name}")
        (folder / "history.jsonl").write_text("\n".join(content) + ("\n" if content else ""))
    folder = _copy_run(ws, run, "h_latin1")  # not UTF-8: a Latin-1 é in line 2
    (folder / "history.jsonl").write_bytes(f"{first}\n".encode() + b'{"epoch": 2, "note": "caf\xe9"}\n' +
                                           f"{third}\n".encode())
    folder = _copy_run(ws, run, "h_nul")  # a NUL byte inside line 2
    (folder / "history.jsonl").write_bytes(f"{first}\n".encode() + second.encode()[:10] + b"\x00" +
                                           second.encode()[10:] + f"\n{third}\n".encode())
    folder = _copy_run(ws, run, "h_missing")
    (folder / "history.jsonl").unlink()
    folder = _copy_run(ws, run, "h_folder")
    (folder / "history.jsonl").unlink()
    (folder / "history.jsonl").mkdir()
    folder = _copy_run(ws, run, "h_fifo")
    (folder / "history.jsonl").unlink()
    os.mkfifo(folder / "history.jsonl")


# ------------------------------------------------------------------------------------------------ the table
# (id, argv, distinctive substring of the one error line)

PLOTS = {
    "gamma": "plot gamma {h} --out {ws}/g.png",
    "correspondence": "plot correspondence {h} --out {ws}/c.png",
    "curves": "plot curves {h} --out {ws}/k.png",
    "curves of two": "plot curves {run} {h} --out {ws}/k.png",
}


def _each(name: str, expected: str, plots=tuple(PLOTS)) -> list[tuple[str, str, str]]:
    return [(f"{plot}: {name}", PLOTS[plot].replace("{h}", f"{{ws}}/h_{name}"), expected) for plot in plots]


CASES = [
    *_each("epoch_text", "Expected 'epoch' in line 2 of"),
    *_each("epoch_float", "Expected 'epoch' in line 2 of"),
    *_each("lr_text", "Expected 'lr' in line 2 of"),
    *_each("updates_not_list", "'adafocal.updates' in line 2 of"),
    *_each("gammas_text", "Expected 'adafocal.updates[0].gammas' in line 2 of"),
    *_each("gammas_nested", "Expected 'adafocal.updates[0].gammas[0]' in line 2 of"),
    *_each("confidence_bool", "Expected 'adafocal.updates[0].val_confidence[0]' in line 2 of"),
    *_each("counts_negative", "Expected 'adafocal.updates[0].counts[0]' in line 2 of"),
    *_each("train_counts_text", "Expected 'adafocal.train_counts' in line 2 of"),
    *_each("gammas_short", "gammas", ("gamma", "correspondence")),
    *_each("edges_missing", "edges", ("gamma", "correspondence")),
    *_each("update_not_object", "line 2 of"),
    *_each("record_list", "line 2 of"),
    *_each("record_number", "line 2 of"),
    *_each("record_null", "line 2 of"),
    *_each("garbage", "line 2 of"),
    *_each("half_line", "line 2 of"),
    *_each("two_records_one_line", "line 2 of"),
    *_each("nan", "line 2 of"),
    *_each("huge_int", "line 2 of"),
    *_each("deep", "line 2 of"),
    *_each("latin1", "line 2 of"),
    *_each("nul", "line 2 of"),
    *_each("order", "line 1 of"),
    *_each("gap", "line 2 of"),
    *_each("repeat", "line 2 of"),
    *_each("first_missing", "line 1 of"),
    *_each("empty", "at least one epoch record"),
    *_each("blank", "at least one epoch record"),
    *_each("missing", "does not exist"),
    *_each("folder", "is a folder"),
    *_each("fifo", "is a FIFO"),
]




def test_the_table_covers_every_history_reading_plot():
    assert len({case[0] for case in CASES}) == len(CASES)
    assert {" ".join(argv.split()[:2]) for _, argv, _ in CASES} == {"plot gamma", "plot correspondence", "plot curves"}


@pytest.mark.parametrize("argv, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_damaged_history_fails_in_one_line_and_touches_nothing(base, tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    args = [part.format(ws=base["ws"], run=base["run"]) for part in argv.split()]
    before = snapshot(tmp_path, base["root"])

    result = runner.invoke(app, args)

    one_line_error(result, expected)
    assert snapshot(tmp_path, base["root"]) == before


def test_the_intact_run_draws(base, tmp_path):
    for kind in ("gamma", "correspondence", "curves"):
        out = tmp_path / f"{kind}.png"
        result = runner.invoke(app, ["plot", kind, str(base["run"]), "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
