"""Top-label `(confidence, correct)` inputs — the top answer's confidence and whether it was right, as an LLM
evaluation script or any classifier's log writes them — told apart from a binary classifier's P(class 1) and its
labels by the rules of docs/inputs.md ("Top-label confidences"): `--scores-kind confidence` says so; else a key
(or a text table's column) named like a confidence beside one named like correctness; where the names leave both
readings (a `score` beside 0/1 `label`s, a headerless table of a number in [0, 1] and 0/1), the file is refused,
naming the option that chooses. `evaluate` measures them and `calibrate` fits confidence maps on them
(`load_top_label`); every other reading refuses them (`refuse_top_label`), so that no command reads such a file as a
binary model's scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import to_numpy
from adacal.errors import InputError
from adacal.interpretation.record import Interpretation
from adacal.interpretation.split import SPLITS, WHOLE_FILE
from adacal.sources.formats import LABEL_KEYS, SCORE_KEYS, WHOLE, Arrays, ReadOptions, open_arrays, torch_arrays
from adacal.sources.named_columns import column_values, read_named_columns
from adacal.sources.text_tables import CSV_LABEL_NAMES, format_suffix

TOP_LABEL = "top-label confidences"
# Names of the top answer's confidence and of whether it was right, compared lower-cased with '-' and spaces read as
# '_'; a name ending in `_confidence` / `_conf` (`pred_confidence`) or starting with `confidence_` is a confidence,
# one ending in `_correct` (`answer_correct`) a correctness.
CONFIDENCE_NAMES = ("confidence", "confidences", "conf", "p_max", "pmax", "max_prob", "max_proba", "max_probability",
                    "prob_max", "top_prob", "top_proba", "top_probability", "top1_prob", "top_1_prob", "score")
CORRECT_NAMES = ("correct", "is_correct", "correctness", "acc", "accuracy", "hit", "hits", "is_hit", "exact_match",
                 "is_right")
_LABEL_NAMES = tuple(dict.fromkeys((*LABEL_KEYS, *CSV_LABEL_NAMES)))
_TEXT_TABLES = (".csv", ".tsv")


def _normal(name: str) -> str:
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def is_confidence_name(name: str) -> bool:
    """Whether a key or column name says it holds the top answer's confidence (CONFIDENCE_NAMES).

    Example:
        >>> is_confidence_name("Pred-Confidence"), is_confidence_name("probs")
        (True, False)
    """
    name = _normal(name)
    return name in CONFIDENCE_NAMES or name.endswith(("_confidence", "_conf")) or name.startswith("confidence_")


def is_correct_name(name: str) -> bool:
    """Whether a key or column name says it holds whether the top answer was right (CORRECT_NAMES).

    Example:
        >>> is_correct_name("is_correct"), is_correct_name("label")
        (True, False)
    """
    name = _normal(name)
    return name in CORRECT_NAMES or name.endswith("_correct")


def _is_label_name(name: str) -> bool:
    return _normal(name) in _LABEL_NAMES


@dataclass(frozen=True)
class TopLabelPredictions:
    """Validated top-label confidences (N,) in [0, 1] and correctness (N,) bool, with what reading them assumed
    (`notes`) and the record of how a file was read (`interpretation`, kind "top-label confidences")."""

    confidences: np.ndarray
    correct: np.ndarray
    notes: tuple[str, ...] = field(default=(), compare=False)
    interpretation: Interpretation | None = field(default=None, compare=False)
    classes: None = field(default=None, compare=False)  # (no class columns)
    # Per-sample group names by grouping key, as `Predictions.groups` (for `--group-by`); None when none are named.
    groups: dict[str, np.ndarray] | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return int(self.confidences.shape[0])


@dataclass(frozen=True)
class TopLabelKeys:
    """The keys (or columns) of the confidences and the correctness, and the rule that chose them."""

    confidences: str
    correct: str
    rule: str


def _unprefixed(key: str) -> str:
    for split in SPLITS:
        if key.startswith(f"{split}_"):
            return key[len(split) + 1:]
    return key


def _candidates(keys: list[str], split: str, test: Any) -> list[str]:
    """Keys whose name passes `test`: the `<split>_` ones when there are any, else the plain ones (never another
    split's)."""
    prefixed = [key for key in keys if key.startswith(f"{split}_") and test(key[len(split) + 1:])]
    plain = [key for key in keys if _unprefixed(key) == key and test(key)]
    return prefixed or plain


def _named(keys: list[str], split: str, key: str | None) -> str | None:
    """--logits-key / --labels-key K: `<split>_K` when the file has it, else K (docs/inputs.md §1 rule 5)."""
    if key is None:
        return None
    return next((candidate for candidate in (f"{split}_{key}", key) if candidate in keys), None)


def _one(arrays: Arrays, found: list[str], what: str, flag: str) -> str | None:
    if len(found) > 1:
        raise InputError(f"Expected one {what} in {arrays.path.name}, found {', '.join(found)}: pass {flag} to name "
                         "the one to read.")
    return found[0] if found else None


def _per_sample(arrays: Arrays, *keys: str) -> bool:
    """Whether the arrays under `keys` are vectors of one length above 1 (one value per sample)."""
    try:
        shapes = {np.shape(arrays[key]) for key in keys}
    except InputError:
        return False
    return len(shapes) == 1 and len(next(iter(shapes))) == 1 and next(iter(shapes))[0] > 1


def _both_fit(arrays: Arrays, scores_key: str, labels_key: str) -> bool:
    """Whether a column of scores and one of labels read as well as one number in [0, 1] per sample and 0/1 labels
    (a binary model's P(class 1)) as as confidences and correctness."""
    from adacal.metrics.confidences import check_correct

    try:
        scores = to_numpy(arrays[scores_key])
        check_correct(arrays[labels_key], n=np.shape(scores)[0] if np.ndim(scores) else None)  # 0/1, booleans, words
    except (InputError, IndexError):
        return False
    if scores.dtype.kind not in "iuf" or np.ndim(scores) != 1 or not scores.size:
        return False
    with np.errstate(invalid="ignore"):
        return bool((scores >= 0).all() and (scores <= 1).all())


def _ambiguous(arrays: Arrays, scores_key: str, labels_key: str, how: str, named: bool = True) -> InputError:
    keyed = arrays.kind != "csv"
    binary = "--scores-kind probs" + (f" --logits-key {scores_key}" if keyed and scores_key not in SCORE_KEYS else "")
    binary += f" --labels-key {labels_key}" if named and not _is_label_name(labels_key) else ""
    confidence = "--scores-kind confidence" + (f" --logits-key {scores_key}" if named and not is_confidence_name(
        scores_key) else "")
    return InputError(
        f"Expected {arrays.path.name} to say what {how} hold: a number in [0, 1] with a 0/1 label per sample is "
        "the top answer's confidence and whether it was right, or a binary model's P(class 1) and its class: pass "
        f"{confidence} for the first, {binary} for the second."
    )


def find_top_label(arrays: Arrays, split: str, options: ReadOptions) -> TopLabelKeys | None:
    """The keys of top-label confidences and correctness in `arrays`, or None when it holds none (class scores):
    --scores-kind confidence says it does (keys from --logits-key / --labels-key, else the names, else a table's two
    columns); else a confidence name beside a correctness name (without class scores beside them, which would leave
    two readings: refused). A confidence name beside 0/1 labels whose values fit both readings is refused."""
    if options.scores_kind in ("logits", "probs") or options.renormalize:
        return None
    forced = options.scores_kind == "confidence"
    keys = [key for key in arrays.keys() if key != WHOLE]
    name = arrays.path.name
    if not keys:
        if forced:
            raise InputError(f"Expected named arrays or columns (confidence, correct) in {name} for --scores-kind "
                             "confidence, got one array without names.")
        return None
    if options.logits_key is not None:
        named = _named(keys, split, options.logits_key)
        conf = [named] if named is not None and (forced or is_confidence_name(_unprefixed(named))) else []
    else:
        conf = _candidates(keys, split, is_confidence_name)
    if options.labels_key is not None:
        named = _named(keys, split, options.labels_key)
        correct = [named] if named is not None and (forced or is_correct_name(_unprefixed(named))) else []
    else:
        correct = _candidates(keys, split, is_correct_name)
    labels = _candidates(keys, split, _is_label_name)
    scores = [key for key in _candidates(keys, split, lambda key: key in SCORE_KEYS) if key not in conf]
    if not forced and not conf and len(correct) == 1:
        # A correctness beside one number in [0, 1] per sample not named a confidence (`scores`, a CSV's `p`, or
        # --logits-key K): a verifier's P(correct) with its class, or the top answer's confidence and whether it was
        # right.
        named = _named(keys, split, options.logits_key)
        others = [named] if named is not None else [] if options.logits_key is not None else [
            key for key in (keys if arrays.kind == "csv" else scores) if key != correct[0]]
        fitting = [key for key in others if _both_fit(arrays, key, correct[0])]
        if len(fitting) == 1:
            raise _ambiguous(arrays, fitting[0], correct[0], f"'{fitting[0]}' and '{correct[0]}'")
    if not forced and (not conf or not correct and (scores or not labels)):
        return None  # class scores, or nothing a confidence could be read with
    conf_key = _one(arrays, conf, "key of confidences", "--logits-key")
    correct_key = _one(arrays, correct, "key of correctness", "--labels-key")
    if forced:
        if conf_key is None and keys == ["0", "1"]:  # a headerless table of two columns
            conf_key, correct_key = "0", "1"
        if correct_key is None and len(labels) == 1:
            correct_key = labels[0]
        if conf_key is None or correct_key is None:
            raise InputError(
                f"Expected {name} to hold top-label confidences (a key named confidence, conf, p_max, max_prob, score, "
                "...; or --logits-key) and whether each answer was right (correct, is_correct, acc, ...; or "
                f"--labels-key) for --scores-kind confidence; it has: {arrays.listing()}."
            )
        return TopLabelKeys(conf_key, correct_key, "--scores-kind confidence")
    if conf_key is not None and correct_key is not None:
        if scores and options.logits_key is None and not _per_sample(arrays, conf_key, correct_key):
            return None  # summary figures (an accuracy, a mean confidence) beside class scores
        if scores and options.logits_key is None:
            raise InputError(
                f"Expected {name} to hold class scores or top-label confidences, not both; it has {scores[0]} and "
                f"{conf_key}, {correct_key}: pass --scores-kind confidence to read the confidences, or --scores-kind "
                "logits or probs to read the class scores."
            )
        return TopLabelKeys(conf_key, correct_key,
                            f"named {_unprefixed(conf_key)!r} and {_unprefixed(correct_key)!r}")
    if conf_key is not None and correct_key is None and len(labels) == 1 and _both_fit(arrays, conf_key, labels[0]):
        raise _ambiguous(arrays, conf_key, labels[0], f"'{conf_key}' and '{labels[0]}'")
    return None


def named_table(path: Path, options: ReadOptions) -> Arrays | None:
    """A .csv / .tsv table's columns by header name (cells as numbers where all are, else strings), or None when
    it cannot be split evenly (the table reader then says why)."""
    def wanted(names: list[str]) -> bool:  # (only these tables are read past their first line)
        return options.scores_kind == "confidence" or any(is_confidence_name(name) or is_correct_name(name)
                                                          for name in names)

    read = read_named_columns(path, separator=options.separator, header=options.header, wanted=wanted)
    if read is None:
        return None
    names, columns, decimal_comma = read
    return Arrays(path, names, lambda key: column_values(path, key, columns[key], decimal_comma), None, "csv")


def _arrays(path: Path, options: ReadOptions, contents: Any = None) -> Arrays | None:
    if format_suffix(path) in _TEXT_TABLES:
        return named_table(path, options)
    if contents is not None:
        return torch_arrays(path, contents, options.pt_items)
    return open_arrays(path, labels_key=options.labels_key, options=options)


def read_top_label(arrays: Arrays, keys: TopLabelKeys, split: str = "test") -> TopLabelPredictions:
    """The confidences and correctness under `keys`, validated (`adacal.metrics.confidences`), with their record."""
    from adacal.metrics.confidences import check_confidences, check_correct

    confidences, notes = check_confidences(arrays[keys.confidences], name=arrays.label(keys.confidences))
    correct = check_correct(arrays[keys.correct], n=confidences.shape[0], name=arrays.label(keys.correct))
    ignored = [key for key in arrays.keys() if key not in (keys.confidences, keys.correct, WHOLE)]
    if arrays.kind == "csv" and ignored:
        shown = ", ".join(ignored[:6]) + (", ..." if len(ignored) > 6 else "")
        notes.append(f"{arrays.path.name}: columns {shown} ignored (neither the confidence nor the correctness)")
    notes = [*arrays.notes, *notes]
    read_split = split if keys.confidences.startswith(f"{split}_") else WHOLE_FILE
    headerless = arrays.kind == "csv" and arrays.keys() == ["0", "1"]
    if headerless:
        notes.append(f"{arrays.path.name}: no header; the first column read as confidences, the second as correctness")
    record = Interpretation(
        file=str(arrays.path), format=arrays.kind, scores_key=None if headerless else keys.confidences,
        labels_key=None if headerless else keys.correct,
        labels_file=None, split=read_split, kind=TOP_LABEL,
        kind_rule=f"{keys.rule}: the top answer's confidence and whether it was right", n=int(confidences.shape[0]),
        k=None, notes=tuple(notes),
    )
    return TopLabelPredictions(confidences, correct, tuple(notes), record)


def load_top_label(path: str | Path, *, split: str = "test", options: ReadOptions | None = None,
                   contents: Any = None) -> TopLabelPredictions | None:
    """The top-label confidences of a predictions file, or None when it holds class scores (then read it with
    `load_predictions`). `contents`: a .pt file already loaded. Refuses what the rules leave undecided."""
    options = options or ReadOptions()
    path = Path(path)
    if options.scores_kind in ("logits", "probs") or options.renormalize:
        return None
    arrays = _arrays(path, options, contents)
    if arrays is None:
        if options.scores_kind == "confidence":
            raise InputError(f"Expected {path.name} to be a table with the same number of cells on every line, for "
                             "--scores-kind confidence.")
        return None
    with arrays:
        keys = find_top_label(arrays, split, options)
        return None if keys is None else read_top_label(arrays, keys, split)


def refuse_top_label(arrays: Arrays, split: str, options: ReadOptions) -> None:
    """For every reading of class scores (calibrate, ood, --val files): refuse top-label confidences — by
    --scores-kind confidence, by their keys, or by a text table's column names — and the files whose names leave
    both readings, in one line."""
    if options.scores_kind == "confidence":
        raise InputError("Expected --scores-kind confidence only with 'adacal evaluate' or 'adacal calibrate' "
                         "(top-label confidences): this command needs the scores of every class.")
    if options.scores_kind != "auto" or options.renormalize:
        return
    if arrays.kind == "csv":
        classes = np.asarray(arrays["classes"]).reshape(-1) if "classes" in arrays else None
        binary = "scores" in arrays and np.ndim(arrays["scores"]) == 1  # one score column: P(class 1) or a confidence
        if classes is None or not (binary or any(is_confidence_name(name) for name in classes)):
            return
        named = named_table(arrays.path, options)
        keys = None if named is None else find_top_label(named, split, options)
    else:
        keys = find_top_label(arrays, split, options)
    if keys is not None:
        raise InputError(
            f"Expected class scores (logits or probabilities per class) in {arrays.path.name}, but it holds top-label "
            f"confidences ({keys.confidences}, {keys.correct}): 'adacal evaluate' measures them and 'adacal calibrate' "
            "calibrates them; this command needs the scores of every class."
        )


def refuse_headerless_pairs(arrays: Arrays, kind: str, labels: np.ndarray, options: ReadOptions) -> None:
    """A text table without a header of one number in [0, 1] and a 0/1 label per line, read as a binary model's
    P(class 1) and its class, is as well the top answer's confidence and whether it was right: refused in auto."""
    from adacal.interpretation.kind import BINARY_PROBABILITIES

    if (options.scores_kind == "auto" and not options.renormalize and arrays.kind == "csv"
            and options.labels_file is None and kind == BINARY_PROBABILITIES and "classes" not in arrays
            and np.isin(labels, (0, 1)).all()):
        raise _ambiguous(arrays, "scores", "labels", "its two columns (no header names them)", named=False)


__all__ = ["CONFIDENCE_NAMES", "CORRECT_NAMES", "TOP_LABEL", "TopLabelKeys", "TopLabelPredictions", "find_top_label",
           "is_confidence_name", "is_correct_name", "load_top_label", "named_table",
           "read_top_label",
           "refuse_headerless_pairs", "refuse_top_label"]
