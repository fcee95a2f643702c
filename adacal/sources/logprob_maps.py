"""Per-question option log-probabilities as LLM evaluation scripts dump them, read as written: a `{option: logprob}`
map (`top_logprobs` / `logprobs`), the OpenAI API's own `logprobs` objects (chat: `choices[0].logprobs.content[0].
top_logprobs`, a list of `{"token": "A", "logprob": -0.3, "bytes": [65]}`; legacy completions: `choices[0].logprobs.
top_logprobs[0]`, a `{token: logprob}` map), also inside a Batch API output line (`response.body`), or a list of
option log-probabilities (`option_logprobs`, ...), beside the gold answer (`answer`, `gold`, `target`, ...). What the
tokens and answers mean (which options, which one is right) is `adacal.interpretation.llm_maps`' (docs/inputs.md,
"LLM evaluation outputs").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.text_tables import read_text

# Keys of a {option: logprob} map (or an API logprobs object) per record.
MAP_KEYS = ("top_logprobs", "logprobs")
# Keys of a list of option log-probabilities (log-likelihoods), one per option, in option order.
LIST_KEYS = ("option_logprobs", "choice_logprobs", "options_logprobs", "logliks", "loglikelihoods",
             "log_likelihoods", "logprobs")
# Keys of the gold answer: a letter, an option's text, or an index counting from 0.
ANSWER_KEYS = ("answer", "gold", "target", "label", "correct_answer", "answer_index", "answer_idx", "gold_index")
# Keys of the options' texts (a list of strings), when the record gives them.
TEXT_KEYS = ("options", "choices")
# Per-record string keys recorded as groups (for --group-by) when every record has one.
GROUP_KEYS = ("task", "subject", "category", "domain", "topic", "dataset", "benchmark", "language")


@dataclass(frozen=True)
class LogprobRecord:
    """One question as written: `where` (file and line or item), its option log-probabilities as a token map
    (`tokens`, in the file's order) or a list (`values`), the gold answer, the options' texts (None when not given),
    and its string fields named like groups."""

    where: str
    tokens: list[tuple[str, float]] | None
    values: list[float] | None
    answer: Any
    texts: list[str] | None
    strings: dict[str, str]
    source: str  # where the log-probabilities were found: "top_logprobs", "choices[0].logprobs.content[0]", ...


def read_records(path: str | Path) -> list[tuple[str, Any]]:
    """(where, record) of a .jsonl (one object per line) or a .json (an array of objects) file."""
    path = Path(path)
    text = read_text(path, "a predictions file")
    if path.name.lower().endswith((".json", ".json.gz")):
        document = parse_json(text, label=str(path), non_finite=True)
        if not isinstance(document, list):
            return []
        return [(f"item {index} of {path.name}", item) for index, item in enumerate(document)]
    return [(f"line {number} of {path.name}", parse_json(line, label=f"line {number} of {path}", non_finite=True))
            for number, line in enumerate(text.split("\n"), start=1) if line.strip()]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _token_list(value: Any) -> list[tuple[str, float]] | None:
    """[{"token": t, "logprob": x}, ...] (the chat API's top_logprobs) or {t: x, ...}, as (token, logprob) pairs."""
    if isinstance(value, dict) and value and all(_is_number(v) for v in value.values()):
        return [(str(token), float(logprob)) for token, logprob in value.items()]
    if isinstance(value, list) and value and all(isinstance(item, dict) and isinstance(item.get("token"), str)
                                                 and _is_number(item.get("logprob")) for item in value):
        return [(item["token"], float(item["logprob"])) for item in value]
    return None


def _from_logprobs_object(value: Any) -> tuple[list[tuple[str, float]] | None, str]:
    """The first answer token's alternatives in an API `logprobs` object: chat (`content[0].top_logprobs`) or
    legacy completions (`top_logprobs[0]`)."""
    if isinstance(value, dict):
        content = value.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            return _token_list(content[0].get("top_logprobs")), ".logprobs.content[0].top_logprobs"
        top = value.get("top_logprobs")
        if isinstance(top, list) and top:
            return _token_list(top[0]), ".logprobs.top_logprobs[0]"
    return None, ""


def _api_choices(record: dict[str, Any]) -> tuple[list[tuple[str, float]] | None, str]:
    """The log-probabilities of an API response held by the record: `choices[0].logprobs`, also under `response`
    and `response.body` (a Batch API output line)."""
    for prefix, holder in (("", record), ("response.", record.get("response")),
                           ("response.body.", (record.get("response") or {}).get("body")
                            if isinstance(record.get("response"), dict) else None)):
        if isinstance(holder, dict) and isinstance(holder.get("choices"), list) and holder["choices"] and isinstance(
                holder["choices"][0], dict) and "logprobs" in holder["choices"][0]:
            tokens, where = _from_logprobs_object(holder["choices"][0]["logprobs"])
            return tokens, f"{prefix}choices[0]{where}"
    return None, ""


def find_logprobs(record: Any) -> tuple[list[tuple[str, float]] | None, list[float] | None, str]:
    """The option log-probabilities a record holds: (token pairs, None, key) for a map, (None, list, key) for a list
    of numbers, (None, None, "") when it holds none."""
    if not isinstance(record, dict):
        return None, None, ""
    for key in MAP_KEYS:
        if key in record:
            value = record[key]
            if isinstance(value, list) and value and isinstance(value[0], dict) and "top_logprobs" in value[0]:
                # The chat API's `logprobs.content` itself: one entry per generated token, the first one's
                # alternatives are the options (not the generated tokens).
                tokens = _token_list(value[0]["top_logprobs"])
                if tokens is not None:
                    return tokens, None, f"{key}[0].top_logprobs"
            tokens = _token_list(value)
            if tokens is None and isinstance(value, list) and value and isinstance(value[0], dict) and all(
                    isinstance(item, dict) for item in value) and "token" not in value[0]:
                tokens = _token_list(value[0])  # legacy completions: one {token: logprob} map per position
            if tokens is None:
                tokens, where = _from_logprobs_object(value)
                if tokens is not None:
                    return tokens, None, key + where.removeprefix(".logprobs")
            else:
                return tokens, None, key
    for key in LIST_KEYS:
        value = record.get(key)
        if isinstance(value, list) and value and all(_is_number(item) for item in value):
            return None, [float(item) for item in value], key
    tokens, where = _api_choices(record)
    return tokens, None, where if tokens is not None else ""


def is_logprob_record(record: Any) -> bool:
    """Whether a JSON object holds option log-probabilities (a map, an API logprobs object or a list under one of
    MAP_KEYS / LIST_KEYS) beside a gold answer (ANSWER_KEYS).

    Example:
        >>> is_logprob_record({"top_logprobs": {"A": -0.3, "B": -1.5}, "answer": "A"})
        True
    """
    tokens, values, _ = find_logprobs(record)
    return (tokens is not None or values is not None) and any(key in record for key in ANSWER_KEYS)


def read_logprob_records(records: list[tuple[str, Any]]) -> list[LogprobRecord]:
    """The questions of parsed records, each refused in one line when it holds no log-probabilities or no answer."""
    read = []
    for where, record in records:
        tokens, values, source = find_logprobs(record)
        if tokens is None and values is None:
            shown = ", ".join(map(str, record))[:120] if isinstance(record, dict) else type(record).__name__
            raise InputError(f"Expected {where} to hold option log-probabilities ({', '.join(MAP_KEYS)} as "
                             f"{{option: logprob}}, or a list under {LIST_KEYS[0]}), got {shown}.")
        answer_key = next((key for key in ANSWER_KEYS if key in record), None)
        if answer_key is None:
            raise InputError(f"Expected {where} to give the gold answer ({', '.join(ANSWER_KEYS[:4])}, ...), but it "
                             "has none.")
        texts = next((record[key] for key in TEXT_KEYS if isinstance(record.get(key), list) and record[key]
                      and all(isinstance(text, str) for text in record[key])), None)
        strings = {key: record[key] for key in GROUP_KEYS if isinstance(record.get(key), str)}
        read.append(LogprobRecord(where, tokens, values, record[answer_key], texts, strings, source))
    return read


__all__ = ["ANSWER_KEYS", "GROUP_KEYS", "LIST_KEYS", "LogprobRecord", "MAP_KEYS", "TEXT_KEYS", "find_logprobs",
           "is_logprob_record", "read_logprob_records", "read_records"]
