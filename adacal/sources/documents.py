"""JSON documents a user may hand to adacal (reports, calibrators, config.json, history.jsonl), parsed with limits
and validated against their schema before any field is used.

Parsing refuses what strict JSON does not allow or what would cost more than it is worth: NaN/Infinity literals and
numbers that overflow a float (admitted in predictions files, whose scores and labels are validated afterwards),
integers longer than `MAX_INT_DIGITS` digits, nesting deeper than `MAX_DEPTH`, files larger than `MAX_JSON_BYTES`. Every
failure (including Python's own ValueError, OverflowError, RecursionError) becomes one InputError sentence naming the
file (and, for history.jsonl, the line).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adacal.errors import InputError
from adacal.sources.files import human_bytes, open_regular, read_bytes

SCHEMA_VERSION = 1
MAX_JSON_BYTES = 256 << 20
MAX_DEPTH = 64
MAX_INT_DIGITS = 40
REPORT_KINDS = ("evaluate", "calibrate", "ood", "shift", "calibrator", "train-config")


class _Refused(ValueError):
    """Raised inside the parser hooks; turned into one InputError naming the file."""


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of range for a float")
    return value


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} are accepted)")
    return int(text)


def _parse_constant(text: str) -> Any:
    raise _Refused(f"{text} is not a JSON number")


def _depth_ok(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def _non_finite(text: str) -> float:
    return float(text)  # NaN, Infinity, -Infinity: Python's json.dumps writes them by default


class _DuplicateKey(ValueError):
    """Raised by `_unique_keys`: one key given twice in one object (json.loads would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        counts: dict[str, int] = {}
        for key, _ in pairs:
            counts[key] = counts.get(key, 0) + 1
        key = next(key for key, _ in pairs if counts[key] > 1)
        times = "twice" if counts[key] == 2 else f"{counts[key]} times"
        keys = ", ".join(_short(name) for name in list(counts)[:6]) + (", ..." if len(counts) > 6 else "")
        raise _DuplicateKey(f"{_short(key)} appears {times} (in an object with the keys {keys})")
    return value


def _short(key: str) -> str:
    shown = repr(key)
    return shown if len(shown) <= 40 else shown[:36] + "...'"


def parse_json(text: str | bytes, *, label: str, non_finite: bool = False) -> Any:
    """One JSON value from `text`, refused in one sentence (naming `label`) when it is not strict, bounded JSON.

    `non_finite` admits the NaN / Infinity literals and overflowing numbers that Python's json module writes by default
    (predictions files from other tools: a NaN in a field adacal never reads must not refuse the file; the scores and
    labels are validated for finiteness afterwards). adacal's own documents stay strict. A key given twice in one
    object is refused (json.loads keeps the last one silently).

    >>> parse_json('{"probs": [0.2, 0.8], "label": 1}', label="p.json")
    {'probs': [0.2, 0.8], 'label': 1}
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"Expected {label} to be JSON, but it could not be parsed (not UTF-8 text at byte {exc.start})."
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = json.loads(text, parse_float=float if non_finite else _parse_float, parse_int=_parse_int,
                           parse_constant=_non_finite if non_finite else _parse_constant,
                           object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise InputError(f"Expected {label} to name each key once, but {exc}.") from None
    except _Refused as exc:
        raise InputError(f"Expected {label} to hold strict JSON, but it has {exc}.") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"Expected {label} to be JSON, but it could not be parsed (JSONDecodeError at line {exc.lineno}, "
            f"column {exc.colno})."
        ) from None
    except RecursionError:
        raise InputError(f"Expected {label} to nest at most {MAX_DEPTH} levels deep, but it nests deeper.") from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise InputError(f"Expected {label} to be JSON, but it could not be parsed "
                         f"({exc.__class__.__name__}).") from None
    # (Nesting can be no deeper than the number of opening brackets: counted in C, the walk is skipped for the
    # shallow objects of a JSON Lines file read line by line.)
    if text.count("[") + text.count("{") > MAX_DEPTH and not _depth_ok(value):
        raise InputError(f"Expected {label} to nest at most {MAX_DEPTH} levels deep, but it nests deeper.")
    return value


def read_json(path: str | os.PathLike, what: str = "a JSON file") -> Any:
    """The JSON value in the regular file at `path` (at most MAX_JSON_BYTES), parsed strictly."""
    path = Path(path)
    data = read_bytes(path, what, limit=MAX_JSON_BYTES)
    return parse_json(data, label=str(path))


# ------------------------------------------------------------------------------------------------------ schemas
# A schema is a function (value, where) -> None raising _Mismatch; small combinators keep them readable.


class _Mismatch(Exception):
    def __init__(self, where: str, expected: str, value: Any) -> None:
        super().__init__(where)
        self.where, self.expected, self.value = where, expected, value


Schema = Callable[[Any, str], None]


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number")


def string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise _Mismatch(where, "a string", value)


def nonempty_string(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise _Mismatch(where, "a non-empty string", value)


def boolean(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise _Mismatch(where, "true or false", value)


def number(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Mismatch(where, "a number", value)


def integer(minimum: int | None = None, maximum: int | None = None) -> Schema:
    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum) or (
                maximum is not None and value > maximum):
            bounds = f" >= {minimum}" if maximum is None and minimum is not None else (
                f" from {minimum} to {maximum}" if maximum is not None else "")
            raise _Mismatch(where, f"an integer{bounds}", value)
    return check


def fraction(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise _Mismatch(where, "a number in [0, 1]", value)


def non_negative(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.inf:
        raise _Mismatch(where, "a finite number >= 0", value)


def positive(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < math.inf:
        raise _Mismatch(where, "a finite number > 0", value)


def all_of(*schemas: Schema) -> Schema:
    def check(value: Any, where: str) -> None:
        for schema in schemas:
            schema(value, where)
    return check


def nullable(schema: Schema) -> Schema:
    def check(value: Any, where: str) -> None:
        if value is not None:
            schema(value, where)
    return check


def one_of(*choices: Any) -> Schema:
    def check(value: Any, where: str) -> None:
        if value not in choices:
            raise _Mismatch(where, "one of " + ", ".join(json.dumps(c) for c in choices), value)
    return check


def list_of(item: Schema) -> Schema:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise _Mismatch(where, "a list", value)
        for i, element in enumerate(value):
            item(element, f"{where}[{i}]")
    return check


def mapping_of(item: Schema) -> Schema:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _Mismatch(where, "an object", value)
        for key, element in value.items():
            item(element, f"{where}.{key}")
    return check


def obj(required: dict[str, Schema] | None = None, optional: dict[str, Schema] | None = None) -> Schema:
    """An object with these keys (others allowed: newer adacal versions may add fields)."""
    required, optional = required or {}, optional or {}

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _Mismatch(where, "an object", value)
        for key, schema in required.items():
            if key not in value:
                raise _Mismatch(f"{where}.{key}", "present", _MISSING)
            schema(value[key], f"{where}.{key}")
        for key, schema in optional.items():
            if key in value:
                schema(value[key], f"{where}.{key}")
    return check


_MISSING = object()
ANY: Schema = lambda value, where: None  # noqa: E731
OBJECT = obj()

_BINS = obj({"edges": list_of(number), "counts": list_of(integer(0)), "mean_confidence": list_of(nullable(number)),
             "accuracy": list_of(nullable(number))})
_METRICS = mapping_of(nullable(number))
_CALIBRATOR = obj({"method": nonempty_string, "format_version": integer(1), "params": OBJECT},
                  {"options": OBJECT, "num_classes": integer(2)})
_SCORE_METRICS = obj(optional={key: nullable(fraction) for key in ("auroc", "aupr_in", "aupr_out", "fpr_at_95_tpr")})
_SET = obj({"name": string, "n": integer(1)})
# The range of each metric a shift report holds (adacal.shift.SHIFT_METRICS): the ECEs and the error are fractions
# in [0, 1], the NLL a finite number of nats >= 0. A value outside it (an ECE of 1e308 or -0.4, an NLL of -1e300) is
# no figure adacal wrote: `plot shift` refuses it in one line naming the field, never draws it.
_SHIFT_RANGES: dict[str, Schema] = {"error": fraction, "nll": non_negative, "ece_em": fraction, "ece_ew": fraction,
                                    "ece_debias": fraction}
_SHIFT_METRICS = all_of(_METRICS, obj(optional={key: nullable(schema) for key, schema in _SHIFT_RANGES.items()}))
# One shifted (or the clean) set of a shift report: its size and metrics before and after T.
_SHIFT_SET = obj({"n": integer(1), "pre": _SHIFT_METRICS}, {"post": nullable(_SHIFT_METRICS)})
_SHIFT_SET_ENTRY = obj({"corruption": nonempty_string, "severity": integer(1, 5), "source": nonempty_string,
                        "n": integer(1), "pre": _SHIFT_METRICS}, {"post": nullable(_SHIFT_METRICS),
                                                                  "files": list_of(string),
                                                                  "table": nullable(nonempty_string)})
# A severity's summary over the corruptions (adacal.shift.spread of each metric): its statistics within the
# metric's range, the standard deviation >= 0.
_SHIFT_SPREADS = obj(optional={key: obj(optional={
    "n": integer(0), "std": nullable(non_negative),
    **{stat: nullable(schema) for stat in ("mean", "median", "q1", "q3", "min", "max")}})
    for key, schema in _SHIFT_RANGES.items()})
_SHIFT_SEVERITY = obj(optional={"sets": integer(0), "pre": nullable(_SHIFT_SPREADS),
                                "post": nullable(_SHIFT_SPREADS)})

_INTERVALS = mapping_of(obj(optional={"low": nullable(number), "high": nullable(number), "std": nullable(number)}))
# One row of an evaluate report's per-group table (`--group-by`, adacal.grouped): a group's figures on its rows alone.
_GROUP_ROW = obj({"group": string, "n_samples": integer(1), "accuracy": fraction, "metrics": _METRICS},
                 {"small": boolean, "bootstrap": _INTERVALS, "notes": list_of(string)})
_GROUPS = obj({"key": nonempty_string, "rows": list_of(_GROUP_ROW)},
              {"small_below": integer(0), "overall": _GROUP_ROW})

RESULTS: dict[str, Schema] = {
    "evaluate": obj(optional={"metrics": _METRICS, "groups": _GROUPS,
        "n_samples": integer(1), "num_classes": integer(2), "assumed_input": string,
        "bins": obj(optional={"equal_width": _BINS, "equal_mass": _BINS}),
        "bootstrap": mapping_of(obj(optional={"low": nullable(number), "high": nullable(number),
                                              "std": nullable(number)})),
    }),
    "calibrate": obj(optional={"calibrators": mapping_of(obj(optional={
        "params": OBJECT, "calibrator": _CALIBRATOR, "val": _METRICS, "test_pre": _METRICS, "test_post": _METRICS,
    })), "best": nullable(string)}),
    "ood": obj(optional={"scores": mapping_of(obj({"pre": _SCORE_METRICS}, {"post": nullable(_SCORE_METRICS)})),
                         "in": _SET, "out": _SET, "temperature": nullable(number),
                         "temperature_source": nullable(string)}),
    "shift": obj({"clean": _SHIFT_SET, "sets": list_of(_SHIFT_SET_ENTRY)},
                 {"dataset": string, "n": integer(1), "temperature": nullable(positive),
                  "temperature_source": nullable(string), "by_severity": mapping_of(_SHIFT_SEVERITY)}),
    "calibrator": obj({"calibrator": _CALIBRATOR}),
    "train-config": OBJECT,
}
CONFIGS: dict[str, Schema] = {
    "train-config": obj(optional={
        "dataset": nonempty_string, "loss": nonempty_string, "model": nullable(string), "epochs": integer(0),
        "seed": integer(0), "select": nullable(string),
        "loss_options": nullable(OBJECT), "model_options": nullable(OBJECT),
    }),
    "calibrator": obj({"method": nonempty_string}, {"options": nullable(OBJECT)}),
    "shift": obj(optional={"severities": list_of(integer(1, 5)), "temperature": nullable(positive),
                           "n_bins": integer(2), "seed": integer(0), "limit": nullable(integer(1)),
                           "corruptions": list_of(nonempty_string), "loss": nullable(string)}),
}
ENVELOPE = obj(
    {"schema_version": ANY, "results": OBJECT},
    {"kind": string, "adacal_version": string, "created": string, "config": OBJECT,
     "input": nullable(obj(optional={"path": string, "sha256": string}))},
)
# One line of history.jsonl: what `adacal train` appends after each epoch (and plots / resume read back).
_PER_BIN = list_of(nullable(number))  # one value per bin; an empty bin may hold null
# One AdaFocal γ-update as the loop writes it: what `plot gamma` and `plot correspondence` draw.
_ADAFOCAL_UPDATE = obj(optional={"edges": _PER_BIN, "gammas": _PER_BIN, "val_confidence": _PER_BIN,
                                 "val_accuracy": _PER_BIN, "counts": list_of(integer(0))})
# One CALS update: λ, ρ and the mean validation constraint of every class.
_CALS_UPDATE = obj(optional={"multipliers": list_of(nullable(number)), "rho": list_of(nullable(number)),
                             "val_constraints": list_of(nullable(number))})
HISTORY_RECORD = obj({"epoch": integer(1)}, {
    "lr": nullable(number), "seconds": nullable(number),
    "train": nullable(obj(optional={"loss": nullable(number), "error": nullable(fraction)})),
    "val": nullable(_METRICS), "test": nullable(_METRICS),
    "adafocal": nullable(obj(optional={"updates": list_of(_ADAFOCAL_UPDATE), "train_confidence": nullable(_PER_BIN),
                                       "train_counts": nullable(list_of(integer(0)))})),
    "cals": nullable(obj(optional={"updates": list_of(_CALS_UPDATE)})),
})


def validate(value: Any, schema: Schema, *, label: str, root: str = "") -> None:
    """Raise one InputError sentence when `value` does not match `schema`, naming the field and what was found."""
    try:
        schema(value, root)
    except _Mismatch as exc:
        field = exc.where.lstrip(".") or "the document"
        if exc.value is _MISSING:
            raise InputError(f"Expected {label} to have the field '{field}', but it is missing.") from None
        raise InputError(
            f"Expected '{field}' in {label} to be {exc.expected}, got {_type_name(exc.value)} {_shown(exc.value)}."
            if not isinstance(exc.value, (dict, list)) else
            f"Expected '{field}' in {label} to be {exc.expected}, got {_type_name(exc.value)}."
        ) from None


def check_report(report: Any, path: str | os.PathLike, kind: str | None = None) -> dict[str, Any]:
    """The envelope every adacal report carries, its kind (when given) and the schema of that kind's fields."""
    label = str(path)
    if not isinstance(report, dict) or "schema_version" not in report or "results" not in report:
        raise InputError(f"Expected {label} to be an adacal report, but it has no schema_version/results.")
    if report["schema_version"] != SCHEMA_VERSION or isinstance(report["schema_version"], bool):
        raise InputError(f"Expected {label} to have schema_version {SCHEMA_VERSION}, got "
                         f"{_shown(report['schema_version'])}.")
    validate(report, ENVELOPE, label=label)
    found = report.get("kind")
    if kind is not None and found != kind:
        raise InputError(f"Expected {label} to be a report of kind '{kind}', got one of kind '{found}'.")
    if found in RESULTS:
        validate(report["results"], RESULTS[found], label=label, root="results")
    if found in CONFIGS and "config" in report:
        validate(report["config"], CONFIGS[found], label=label, root="config")
    return report


def read_report(path: str | os.PathLike, kind: str | None = None) -> dict[str, Any]:
    """An adacal report (JSON), validated: envelope, kind (when given) and the schema of its kind."""
    return check_report(read_json(path, "an adacal report (JSON)"), path, kind)


# ------------------------------------------------------------------------------------------------------ history

MAX_HISTORY_BYTES = 1 << 30


def read_history(path: str | os.PathLike, *, torn_tail: bool = False) -> list[dict[str, Any]]:
    """The per-epoch records of a run's history.jsonl, each validated; blank lines are skipped.

    A line that is not UTF-8, not JSON, or not the next epoch's record (epochs run 1, 2, 3, ... with no gap: a
    missing record is never passed over) is refused with its line number. With `torn_tail`, a last line without its
    newline that does not parse is the write a killed run left half-done: it is left out (it is no epoch's record)
    instead of refused. Used by `train --resume` and the plots.
    """
    path = Path(path)
    with open_regular(path, "a training history (history.jsonl)") as handle:
        data = handle.read(MAX_HISTORY_BYTES + 1)
    if len(data) > MAX_HISTORY_BYTES:
        raise InputError(f"Expected the training history {path} to be at most {human_bytes(MAX_HISTORY_BYTES)}, but it "
                         "is larger.")
    lines = data.split(b"\n")
    records: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if not raw.strip():
            continue
        label = f"line {number} of {path}"
        try:
            record = parse_json(raw, label=label)
        except InputError:
            if torn_tail and last:
                break  # no newline after it: the half-written line of a killed run
            raise
        if not isinstance(record, dict):
            raise InputError(f"Expected {label} to be an epoch record (a JSON object), got {_type_name(record)}.")
        validate(record, HISTORY_RECORD, label=label)
        expected = records[-1]["epoch"] + 1 if records else 1
        if record["epoch"] != expected:
            after = f"after epoch {records[-1]['epoch']}" if records else "first"
            raise InputError(
                f"Expected the epochs in {path} to be 1, 2, 3, ... in order (one line each), but {label} records "
                f"epoch {record['epoch']} {after}."
            )
        records.append(record)
    return records
