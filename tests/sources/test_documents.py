"""adacal.sources.documents: JSON parsed with limits (depth, integer digits, strict numbers, UTF-8) and validated
against its schema — reports of every kind, config.json, each history.jsonl line with its number."""

from __future__ import annotations

import json

import pytest

from adacal.errors import InputError
from adacal.sources import parse_json, read_history, read_report
from adacal.sources.documents import MAX_DEPTH, MAX_INT_DIGITS


def test_adacal_reports_stay_strict_json(tmp_path):
    from adacal.sources import read_json

    (tmp_path / "r.json").write_text('{"a": NaN}')
    with pytest.raises(InputError, match="strict JSON"):
        read_json(tmp_path / "r.json")


@pytest.mark.parametrize("text, match", [
    ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "nest at most"),
    ("[" * 200_000 + "]" * 200_000, "nest at most"),
    ('{"a": ' + "9" * 5000 + "}", "integer of 5000 digits"),
    ('{"a": ' + "9" * (MAX_INT_DIGITS + 1) + "}", "digits"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": -Infinity}', "-Infinity is not a JSON number"),
    ('{"a": 1e999}', "out of range for a float"),
    ('{"a": 1', "could not be parsed"),
    (b'{"a": "\xff"}', "not UTF-8"),
])
def test_json_limits(text, match):
    with pytest.raises(InputError, match=match):
        parse_json(text, label="doc.json")


def _report(kind, results, config=None):
    return {"schema_version": 1, "kind": kind, "adacal_version": "0", "created": "now", "config": config or {},
            "results": results}


@pytest.mark.parametrize("kind, results, match", [
    ("evaluate", {"metrics": {"ece": "high"}}, r"'results.metrics.ece' .* to be a number, got a string \"high\""),
    ("evaluate", {"metrics": [0.1]}, "'results.metrics' in .* to be an object, got a list"),
    ("evaluate", {"metrics": {}, "bins": {"equal_width": {"edges": [0], "counts": [-1], "mean_confidence": [],
                                                          "accuracy": []}}}, r"counts\[0\]' .* integer >= 0"),
    ("calibrate", {"calibrators": {"t": {"params": []}}}, "'results.calibrators.t.params' .* to be an object"),
    ("calibrate", {"calibrators": {"t": {"calibrator": {"method": 3, "format_version": 1, "params": {}}}}},
     "'results.calibrators.t.calibrator.method' .* non-empty string"),
    ("ood", {"scores": {"entropy": {"pre": {"auroc": 1.5}}}}, "'results.scores.entropy.pre.auroc' .* in \\[0, 1\\]"),
    ("ood", {"scores": {}, "in": {"name": "x", "n": 0}}, "'results.in.n' .* integer >= 1"),
    ("calibrator", {"calibrator": {"method": "temperature", "format_version": True, "params": {}}},
     "'results.calibrator.format_version' .* integer >= 1, got true/false"),
    ("calibrator", {}, "'results.calibrator', but it is missing"),
])
def test_report_schemas(tmp_path, kind, results, match):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report(kind, results)))
    with pytest.raises(InputError, match=match):
        read_report(path, kind)


def test_config_json_schema(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_report("train-config", {}, {"dataset": "digits", "loss": "ce", "epochs": "ten"})))
    with pytest.raises(InputError, match="'config.epochs' in .* to be an integer >= 0, got a string \"ten\""):
        read_report(path, "train-config")


def _history_line(epoch, **extra):
    return json.dumps({"epoch": epoch, "lr": 0.1, "train": {"loss": 1.0}, "val": {"error": 0.5}, **extra})


@pytest.mark.parametrize("content, match", [
    (_history_line(1) + "\n" + _history_line("two") + "\n", "'epoch' in line 2 .* integer >= 1"),
    (_history_line(1) + "\n" + "garbage\n" + _history_line(3) + "\n", "line 2 of .* could not be parsed"),
    ((_history_line(1) + "\n").encode() + b'{"epoch": 2, "x": "\xff\xfe"}\n', "line 2 of .*not UTF-8"),
    (_history_line(1) + "\n[1, 2]\n", "line 2 of .* epoch record \\(a JSON object\\), got a list"),
    (_history_line(2) + "\n" + _history_line(1) + "\n", "1, 2, 3, ... in order .* line 1 .* records epoch 2 first"),
    (_history_line(1) + "\n" + _history_line(1) + "\n", "line 2 .* records epoch 1 after epoch 1"),
    (_history_line(1) + "\n" + _history_line(3) + "\n", "line 2 .* records epoch 3 after epoch 1"),
    (_history_line(1, lr="fast") + "\n", "'lr' in line 1 .* a number"),
    (_history_line(1) + "\n" + '{"epoch": 2, "lr": NaN}' + "\n", "line 2 .* NaN is not a JSON number"),
])
def test_history_lines_are_validated_with_their_number(tmp_path, content, match):
    path = tmp_path / "history.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=match):
        read_history(path, torn_tail=True)


def test_history_torn_tail_only_when_asked_and_only_at_the_end(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(_history_line(1) + "\n" + _history_line(2) + "\n" + '{"epoch": 3, "lr": 0.')
    assert [r["epoch"] for r in read_history(path, torn_tail=True)] == [1, 2]
    with pytest.raises(InputError, match="line 3"):
        read_history(path)
