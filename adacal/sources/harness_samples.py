"""lm-evaluation-harness `--log_samples` files of multiple-choice (loglikelihood) tasks as per-question lists: the
log-likelihood of each choice, the choice strings, the `target` as written, the file's own `acc` / `acc_norm`, and
the task from the file name (docs/inputs.md, "LLM evaluation outputs").

The harness writes one JSON object per document to `samples_<task>_<date>.jsonl` (or `samples_<task>.jsonl`):
`doc_id`, `doc`, `target` (a string since v0.4.3: `str(target)`, an int index or a string before), `arguments` (one
`[context, continuation]` pair per choice, or since v0.4.3 `{"gen_args_0": {"arg_0": context, "arg_1":
continuation}, ...}`), `resps` (`[[loglik, is_greedy]]` per choice), `filtered_resps` (`[loglik, is_greedy]` per
choice; both written as strings, "-1.23" and "False", since v0.4.3), `filter`, `metrics`, `doc_hash`,
`prompt_hash`, `target_hash`, and each metric (`acc`, `acc_norm`, ...). v0.4.0–0.4.2 wrote one JSON array of these
objects (indented) into `<model_args>_<task>.jsonl` beside a `results.json`; it is read too. Nothing here decides
what the numbers mean: `adacal.interpretation.llm` does.
"""

from __future__ import annotations

import glob
import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.text_tables import read_text

# `samples_<task>_<date_id>.jsonl`: the harness's date_id is datetime.isoformat() with ':' as '-'
# (2024-05-13T12-34-56.123456); newer versions write `samples_<task>.jsonl`.
_NAME = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?))?"
                   r"\.jsonl(?:\.gz)?$")
# Keys that tell a harness sample: a document id beside the model's responses and the requests' arguments.
TELLING_KEYS = ("doc_id", "arguments")
RESPONSE_KEYS = ("filtered_resps", "resps")
# Task-name prefixes whose remainder names a subject (mmlu_high_school_physics -> high_school_physics).
SUBJECT_PREFIXES = ("mmlu_pro_", "mmlu_", "cmmlu_", "kmmlu_", "arabicmmlu_", "global_mmlu_", "mmmlu_")
_TRUE, _FALSE = ("true",), ("false",)


def is_harness_sample(record: Any) -> bool:
    """Whether one JSON object is an lm-evaluation-harness sample: `doc_id` and `arguments` beside `filtered_resps`
    or `resps`.

    Example:
        >>> is_harness_sample({"doc_id": 0, "arguments": [], "filtered_resps": [], "target": "1"})
        True
    """
    return isinstance(record, dict) and "doc_id" in record and "arguments" in record and (
        "filtered_resps" in record or "resps" in record)


def task_of(path: str | Path) -> str | None:
    """The task a harness sample file names: `samples_<task>_<date>.jsonl` -> task; None for other names.

    Example:
        >>> task_of("samples_mmlu_anatomy_2024-05-13T12-34-56.123456.jsonl")
        'mmlu_anatomy'
    """
    found = _NAME.match(Path(path).name)
    return None if found is None else found.group("task")


def task_from_results(path: str | Path) -> str | None:
    """The task of a v0.4.0-0.4.2 sample file, `<model_args>_<task>.jsonl`, from the `results.json` the harness wrote
    beside it: the longest task of its "configs" (or "results") the file's stem ends with; None without one."""
    from adacal.sources.documents import read_json

    path = Path(path)
    results = path.parent / "results.json"
    if not results.is_file():
        return None
    try:
        document = read_json(results, "the harness's results.json")
    except InputError:
        return None
    tasks = document.get("configs") or document.get("results") if isinstance(document, dict) else None
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
    found = [task for task in tasks or () if isinstance(task, str) and stem.endswith(f"_{task}")]
    return max(found, key=len) if found else None


def subject_of(task: str) -> str | None:
    """The subject a task name carries after a known prefix (`mmlu_<subject>`, `cmmlu_<subject>`, ...), else None.

    Example:
        >>> subject_of("mmlu_high_school_physics"), subject_of("hellaswag")
        ('high_school_physics', None)
    """
    for prefix in SUBJECT_PREFIXES:
        if task.startswith(prefix) and len(task) > len(prefix):
            return task[len(prefix):]
    return None


def harness_files(path: str | Path) -> list[Path] | None:
    """The sample files a path names: a glob pattern (`samples_mmlu_*.jsonl`) its matches, a folder its
    `samples_*.jsonl` files (also one level down: the harness writes them under `<output>/<model>/`), sorted; None
    when the path is neither (an ordinary file, a folder without sample files, a pattern matching nothing)."""
    text = str(path)
    if not Path(text).exists() and any(char in Path(text).name for char in "*?["):
        # (A path that exists is itself, brackets in its name or not; a pattern matching nothing is left to the
        # reader, which says the path does not exist.)
        matches = sorted(Path(found) for found in glob.glob(text))
        return matches or None
    folder = Path(text)
    if not folder.is_dir():
        return None
    found = sorted(folder.glob("samples_*.jsonl")) or sorted(folder.glob("*/samples_*.jsonl"))
    found += sorted(folder.glob("samples_*.jsonl.gz")) if not found else []
    if not found and (folder / "results.json").is_file():  # v0.4.0-0.4.2: <model_args>_<task>.jsonl
        found = [path for path in sorted(folder.glob("*.jsonl")) if looks_like_harness_file(path)]
    return found or None


@dataclass(frozen=True)
class HarnessSample:
    """One document of a harness sample file, as written: `where` (file and line), the choices' log-likelihoods,
    their continuation strings (None when `arguments` does not hold them), the `target` and the file's `acc` /
    `acc_norm` (None when absent)."""

    where: str
    responses_key: str  # "filtered_resps" or "resps"
    doc_id: Any
    logliks: list[float]
    continuations: list[str] | None
    target: Any
    acc: float | None
    acc_norm: float | None


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) one at a time: a parsed line is dropped once read (100,000 documents kept alive at once
    cost more in the garbage collector's passes than in parsing)."""
    text = read_text(path, "an lm-evaluation-harness sample file (.jsonl)")
    if text.lstrip().startswith("["):  # v0.4.0-0.4.2: one indented JSON array of the samples
        document = parse_json(text, label=str(path), non_finite=True)
        yield from ((f"{path.name} item {index}", item) for index, item in enumerate(document))
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield f"line {number} of {path.name}", parse_json(line, label=f"line {number} of {path}",
                                                              non_finite=True)


def _number(value: Any, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise InputError(f"Expected a log-likelihood (a number) in {where}, got {str(value)[:40]!r}.")


def _loglik(response: Any, key: str, where: str) -> float:
    """A choice's log-likelihood from `[loglik, is_greedy]` (filtered_resps) or `[[loglik, is_greedy]]` (resps),
    numbers or the strings the harness writes ("-1.23", "False")."""
    if type(response) is list and len(response) == 2:  # the common case, fast
        value, flag = response
        if type(value) is float and type(flag) is bool:
            return value
        if type(value) is str and flag in ("True", "False"):
            try:
                return float(value)
            except ValueError:
                pass
    where = f"'{key}' of {where}"
    if isinstance(response, list) and len(response) == 1 and isinstance(response[0], list):
        response = response[0]
    if isinstance(response, str) or isinstance(response, list) and response and all(
            isinstance(item, str) for item in response) and not _is_pair(response):
        raise InputError(f"Expected log-likelihoods of choices in {where}, but it holds generated text (a "
                         "generate_until task): only multiple-choice (loglikelihood) samples have choices to score.")
    if not _is_pair(response):
        raise InputError(f"Expected each response in {where} to be [log-likelihood, is_greedy], got "
                         f"{str(response)[:60]}.")
    return _number(response[0], where)


def _is_pair(response: Any) -> bool:
    if not isinstance(response, list) or len(response) != 2:
        return False
    flag = response[1]
    return isinstance(flag, bool) or isinstance(flag, str) and flag.lower() in (*_TRUE, *_FALSE)


def _continuations(arguments: Any) -> list[tuple[Any, Any]] | None:
    """(context, continuation) per request: from [[context, continuation], ...] or {"gen_args_0": {"arg_0": ...,
    "arg_1": ...}, ...}; None when neither layout."""
    if isinstance(arguments, dict):
        try:  # (in the order the harness wrote them: gen_args_0, gen_args_1, ...; checked below)
            pairs = [(item["arg_0"], item["arg_1"]) for item in arguments.values()]
        except (TypeError, KeyError):
            return None
        return pairs if list(arguments) == [f"gen_args_{index}" for index in range(len(arguments))] else None
    if isinstance(arguments, list) and all(isinstance(item, list) and len(item) >= 2 for item in arguments):
        return [(item[0], item[1]) for item in arguments]
    return None


def _metric(record: dict[str, Any], key: str, where: str) -> float | None:
    if key not in record or record[key] is None:
        return None
    return _number(record[key], f"'{key}' of {where}")


def read_harness_samples(path: str | Path) -> list[HarnessSample]:
    """The samples of one harness `--log_samples` file, in file order; a generate_until task's samples, a sample
    without responses and a file of other records are refused in one line."""
    path = Path(path)
    samples = []
    for where, record in _records(path):
        if not is_harness_sample(record):
            shown = ", ".join(map(str, record))[:120] if isinstance(record, dict) else type(record).__name__
            raise InputError(f"Expected {where} to be an lm-evaluation-harness sample (doc_id, arguments, "
                             f"filtered_resps or resps), got {shown}.")
        key = "filtered_resps" if "filtered_resps" in record else "resps"
        responses = record[key]
        if not isinstance(responses, list) or not responses:
            raise InputError(f"Expected '{key}' in {where} to list one response per choice, got "
                             f"{str(responses)[:60]}.")
        logliks = [_loglik(response, key, where) for response in responses]
        pairs = _continuations(record["arguments"])
        if (pairs is not None and "acc_mutual_info" in record and len(pairs) == len(logliks)
                and len(pairs) % 2 == 0 and all(context == "" for context, _ in pairs[len(pairs) // 2:])):
            half = len(pairs) // 2  # acc_mutual_info: the unconditional ("", continuation) requests follow
            pairs, logliks = pairs[:half], logliks[:half]
        continuations = None
        if pairs is not None and len(pairs) == len(logliks) and all(isinstance(cont, str) for _, cont in pairs):
            continuations = [cont for _, cont in pairs]
        samples.append(HarnessSample(where, key, record.get("doc_id"), logliks, continuations, record.get("target"),
                                     _metric(record, "acc", where), _metric(record, "acc_norm", where)))
    if not samples:
        raise InputError(f"Expected {path} to hold lm-evaluation-harness samples, but it is empty.")
    return samples


def looks_like_harness_file(path: str | Path) -> bool:
    """Whether a .jsonl file's first record is a harness sample (read from its first line only; a file named
    samples_*.jsonl holding other records is not one).

    Example:
        >>> looks_like_harness_file("missing.jsonl")
        False
    """
    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".jsonl", ".jsonl.gz")) or not path.is_file():
        return False
    try:
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        if first.lstrip().startswith("["):  # v0.4.0-0.4.2: an indented array; its first object follows
            return '"doc_id"' in first or _first_item_is_sample(path)
        return is_harness_sample(parse_json(first, label=str(path), non_finite=True))
    except (InputError, OSError, UnicodeDecodeError, EOFError):
        return False


def _first_item_is_sample(path: Path) -> bool:
    first = next(_records(path), None)
    return first is not None and is_harness_sample(first[1])


__all__ = ["HarnessSample", "RESPONSE_KEYS", "SUBJECT_PREFIXES", "TELLING_KEYS", "harness_files",
           "is_harness_sample", "looks_like_harness_file", "read_harness_samples", "subject_of", "task_from_results",
           "task_of"]
