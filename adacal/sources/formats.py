"""Predictions files of any framework as named raw arrays: .npz, .pt, .npy, .safetensors, .mat and the text formats
(.csv, .tsv, .txt, .json, .jsonl, each also gzipped). Nothing here decides what the arrays mean (which split, logits
or probabilities, labels): that is `adacal.interpretation`, by the rules written in docs/inputs.md, which also lists
every format and key spelling.

- `.npz`: only the members used are decompressed; `np.savez(path, scores, labels)` without names is arr_0, arr_1;
- `.pt`: loaded with weights_only=True; its structures (dicts, pairs, lists of batches or samples) are
  `adacal.sources.torch_file`'s;
- `.safetensors`, `.mat`: `safetensors_file`, `matlab_file`; `.npy` and `.txt`: one array without a key;
- text formats: `text_tables`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from adacal.errors import InputError
from adacal.sources.files import (
    NpzArchive,
    human_bytes,
    open_regular,
    read_npy,
    safe_torch_load,
)
from adacal.sources.matlab_file import MatFile
from adacal.sources.safetensors_file import SafetensorsFile
from adacal.sources.torch_file import torch_structure
from adacal.sources.json_predictions import json_column, read_json_predictions, read_jsonl
from adacal.sources.table_columns import text_score_columns
from adacal.sources.text_tables import format_suffix, read_csv_with_notes, read_text_table

# Spellings of other frameworks too: Hugging Face's Trainer.predict (`predictions`, `label_ids`), scikit-learn's
# argument names (`y_prob`, `y_proba`, `y_score`, `y_true`), cleanlab's `pred_probs`, torchmetrics' `preds`, Keras'
# `y_pred`.
SCORE_KEYS = ("logits", "probs", "probabilities", "scores", "outputs", "y_prob", "y_proba", "y_score", "pred_probs",
              "preds", "y_pred", "predictions")
LABEL_KEYS = ("labels", "targets", "y", "label", "target", "label_ids", "y_true", "true_labels")
# Keys that some frameworks use for hard class predictions (scikit-learn's y_pred): one integer per sample under them
# is refused rather than read as a binary model's scores.
HARD_PREDICTION_KEYS = ("predictions", "preds", "y_pred")
# Keys whose name says the scores are probabilities: values in [0, 1] under them whose rows do not sum to 1 (the
# probabilities of a few answer choices out of a language model's vocabulary, sigmoid outputs) are refused rather than
# read as logits, whose softmax would be nearly uniform.
PROBABILITY_KEYS = ("probs", "probabilities", "y_prob", "y_proba", "pred_probs")
CLASS_KEYS = ("classes", "class_names")
# `np.savez(path, scores, labels)` without names stores the arrays as arr_0, arr_1: read in that order when a file
# holds nothing else.
UNNAMED_NPZ = ("arr_0", "arr_1")
FORMATS = (".npz", ".pt", ".pth", ".npy", ".txt", ".safetensors", ".mat", ".csv", ".tsv", ".jsonl")
# Formats holding one array of scores, without keys: labels come from --labels FILE or a file beside them.
KEYLESS = ("npy", "txt")
# `.json` is read as predictions too, but is not in FORMATS: `plot` and `ood` take a .json INPUT for a report.
JSON_SUFFIX = ".json"
WHOLE = ""  # the key of the one array of an .npy file
# "confidence": top-label (confidence, correct) pairs, not class scores (`adacal.interpretation.confidence`).
SCORES_KINDS = ("auto", "logits", "probs", "confidence")
SEPARATORS = (",", ";", "\t", " ")
PT_ITEMS = ("batches", "samples", "pair")
LABELS_ARE = ("values", "positions")
# #41 LLM outputs: how a gold answer names an option, and what an option missing from a log-probability map means.
ANSWER_IS = ("index", "letter", "text")
MISSING_OPTIONS = ("refuse", "zero")


@dataclass(frozen=True)
class ReadOptions:
    """How to find and interpret the arrays of a predictions file (the CLI's --logits-key, --labels-key, --labels,
    --renormalize)."""

    logits_key: str | None = None
    labels_key: str | None = None
    labels_file: Path | None = None
    renormalize: bool = False
    # A binary model's one score per sample as decision scores even when all in [0, 1]: set when another set of the
    # same model's scores lies outside [0, 1] (`mixed_binary_readings`), so that one model's sets are read alike.
    decision_scores: bool = False
    # What the values are (--scores-kind): "auto" decides by the rules of docs/inputs.md, "logits" / "probs" say;
    # "confidence": the top answer's confidence and whether it was right (evaluate only).
    scores_kind: str = "auto"
    # Text tables: whether the first line is a header (--header / --no-header; None: decided by the rules), and the
    # separator between cells (--separator: ",", ";", "\t" or " " for runs of whitespace; None: decided).
    header: bool | None = None
    separator: str | None = None
    # A .pt list: its items are one batch each, one sample each, or (for two items) one (scores, labels) pair
    # (--pt-items batches|samples|pair; None: decided by the rules, refused when two readings remain).
    pt_items: str | None = None
    # Integer labels beside class values (a `classes` array, a header of numbers): "values" looks them up there,
    # "positions" takes them as column indices (--labels-are; None: decided, refused when both fit and differ).
    labels_are: str | None = None
    # A text table's score columns (--score-columns: "2:12" by position, "cat,dog,eel" by name, "prob_*" by prefix;
    # None: decided by the column rules of docs/inputs.md).
    score_columns: str | None = None
    # #40 Hugging Face outputs
    # The class names in column order (--classes: a tuple of names, or what the option takes: "neg,pos", a file of
    # names, a JSON list, a config.json or model folder with id2label; resolved to names when the options are made).
    classes: tuple[str, ...] | str | None = None
    # Where `classes` came from ("--classes", "model/config.json (id2label)"), for the notes; set with `classes`.
    classes_source: str | None = None
    # The --group-by key: a text table's column of that name is set aside (neither scores nor labels) before the
    # column rules run; the groups themselves are read by `adacal.interpretation.groups` (None: nothing set aside).
    group_by: str | None = None
    # #41 LLM outputs (docs/inputs.md, "LLM evaluation outputs"): divide each choice's log-likelihood by its length
    # in characters, as the harness's acc_norm (--length-normalize); the task of sample files not named
    # samples_<task>_... (--task); how the gold answer names an option (--answer-is index|letter|text; None: decided);
    # the options of log-probability maps (--options A,B,C,D); an option missing from a map: refused, or "zero"
    # (probability 0) (--missing-options); the key of text stating a confidence (--verbalized-confidence KEY).
    length_normalize: bool = False
    task: str | None = None
    answer_is: str | None = None
    answer_options: str | None = None
    missing_options: str = "refuse"
    verbalized_confidence: str | None = None
    # More lm-evaluation-harness sample files read with the first path as one input (a glob the shell expanded:
    # `adacal evaluate samples_mmlu_*.jsonl`); refused for any other input.
    more_files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.classes, str):
            from adacal.sources.class_names import read_class_names

            names, source = read_class_names(self.classes)
            object.__setattr__(self, "classes", names)
            object.__setattr__(self, "classes_source", source)
        elif self.classes is not None:
            from adacal.sources.class_names import checked_class_names

            object.__setattr__(self, "classes", checked_class_names(self.classes))
            if self.classes_source is None:
                object.__setattr__(self, "classes_source", "--classes")
        for flag, key in (("--logits-key", self.logits_key), ("--labels-key", self.labels_key)):
            if key is not None and (not isinstance(key, str) or not key.strip()):
                raise InputError(f"Expected {flag} to be a key name, got {key!r}.")
        for flag, value, choices in (("--scores-kind", self.scores_kind, SCORES_KINDS),
                                     ("--separator", self.separator, (None, *SEPARATORS)),
                                     ("--pt-items", self.pt_items, (None, *PT_ITEMS)),
                                     ("--labels-are", self.labels_are, (None, *LABELS_ARE))):
            if value not in choices:
                shown = ", ".join(repr(choice) for choice in choices if choice is not None)
                raise InputError(f"Expected {flag} to be one of {shown}, got {value!r}.")
        if self.score_columns is not None and (not isinstance(self.score_columns, str)
                                               or not self.score_columns.strip()):
            raise InputError(f"Expected --score-columns to be a range (2:12), names (cat,dog) or a prefix (prob_*), "
                             f"got {self.score_columns!r}.")
        if self.scores_kind == "confidence" and self.renormalize:
            raise InputError("Expected --renormalize only with class probabilities, not with --scores-kind "
                             "confidence.")
        if self.scores_kind == "logits" and self.renormalize:
            raise InputError("Expected --renormalize only with probabilities, not with --scores-kind logits.")
        self._check_llm_options()

    def _check_llm_options(self) -> None:
        """#41 LLM outputs: the options' values."""
        for flag, value, choices in (("--answer-is", self.answer_is, (None, *ANSWER_IS)),
                                     ("--missing-options", self.missing_options, MISSING_OPTIONS)):
            if value not in choices:
                shown = ", ".join(repr(choice) for choice in choices if choice is not None)
                raise InputError(f"Expected {flag} to be one of {shown}, got {value!r}.")
        for flag, value in (("--task", self.task), ("--verbalized-confidence", self.verbalized_confidence)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InputError(f"Expected {flag} to be a name, got {value!r}.")
        if self.answer_options is not None and (not isinstance(self.answer_options, str) or len(
                [name for name in self.answer_options.split(",") if name.strip()]) < 2):
            raise InputError(f"Expected --options to name two or more options (A,B,C,D), got {self.answer_options!r}.")
        if self.verbalized_confidence is not None and self.scores_kind in ("logits", "probs"):
            raise InputError(f"Expected --verbalized-confidence without --scores-kind {self.scores_kind}: stated "
                             "confidences are top-label confidences.")


DEFAULT_OPTIONS = ReadOptions()


# ------------------------------------------------------------------------------------------------ array containers


class Arrays:
    """The arrays of one file by key; arrays are read (and decompressed) only when asked for."""

    def __init__(self, path: Path, keys: list[str], getter: Any, closer: Any = None, kind: str = "",
                 notes: tuple[str, ...] = ()) -> None:
        self.path, self._keys, self._get, self._close, self.kind = path, keys, getter, closer, kind
        # What reading the file assumed (e.g. a CSV's row-index column dropped), for `Predictions.notes`.
        self.notes = notes
        self._cache: dict[str, Any] = {}
        # Hugging Face pipeline outputs: how they were read (`adacal.sources.pipeline_outputs.PipelineReading`).
        self.pipeline: Any = None

    def keys(self) -> list[str]:
        return list(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __getitem__(self, key: str) -> Any:
        if key not in self._cache:
            self._cache[key] = self._get(key)
        return self._cache[key]

    def label(self, key: str) -> str:
        return self.path.name if key == WHOLE else f"{self.path.name}:{key}"

    def listing(self) -> str:
        return ", ".join(sorted(k for k in self._keys if k != WHOLE)) or "nothing"

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def __enter__(self) -> Arrays:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# Pickle-based formats: never loaded (unpickling runs code), refused with what to save instead.
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".dill")


# Formats adacal does not read (their readers are not among its dependencies), with how to write what it reads.
_CONVERSIONS = {
    **dict.fromkeys((".parquet", ".feather", ".arrow", ".orc", ".xlsx", ".xls"),
                    "convert it with pandas: df.to_csv('preds.csv', index=False) (a column per class, then the label)"),
    **dict.fromkeys((".h5", ".hdf5", ".hdf"),
                    "convert it with h5py: np.savez('preds.npz', **{k: f[k][()] for k in f}) (the scores and labels)"),
    **dict.fromkeys((".ckpt", ".bin", ".onnx", ".keras", ".pb"),
                    "a model file of another framework, which adacal cannot run: save the model's outputs, "
                    "np.savez('preds.npz', logits=..., labels=...)"),
}


def _unsupported(path: Path) -> InputError:
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        return InputError(f"Refusing to read {path.name}: loading a pickle can run code. Save the arrays with "
                          "np.savez(path, logits=..., labels=...) (or torch.save of tensors, a .csv, a .json) instead.")
    hint = f"; {_CONVERSIONS[suffix]}" if suffix in _CONVERSIONS else ""
    return InputError(f"Expected a predictions file ending in .npz or .pt (or .npy, .txt, .safetensors, .mat, .csv, "
                      f".tsv, .json, .jsonl; the text ones also .gz), got {path.name}{hint}.")


def open_arrays(path: str | os.PathLike, *, labels_key: str | None = None, labels_only: bool = False,
                scores_only: bool = False, labels_optional: bool = False,
                options: ReadOptions = DEFAULT_OPTIONS) -> Arrays:
    """The arrays of a predictions file, by key, without reading any of them yet (for .npz). `scores_only`: the
    labels come from another file, so a CSV without a column named as labels is all scores; `labels_optional`: the
    same when its last column is not class indices (`text_tables.read_csv_with_notes`); `options`: how to read
    structure (a text table's header and separator, a .pt list's items)."""
    path = Path(path)
    suffix = format_suffix(path)
    if suffix not in FORMATS and suffix != JSON_SUFFIX:
        # Still say "does not exist" / "is a folder" first: that is the more useful sentence.
        open_regular(path, "a predictions file").close()
        raise _unsupported(path)
    if suffix == ".npz":
        archive = NpzArchive(path, "a predictions file (.npz)")
        notes = ()
        if unnamed_npz(archive.files):
            notes = (f"{path.name}: unnamed arrays (np.savez without names) read as arr_0 = scores"
                     + (", arr_1 = labels" if len(archive.files) == 2 else ""),)
        return Arrays(path, archive.files, archive.__getitem__, archive.close, "npz", notes=notes)
    if suffix in (".pt", ".pth"):
        return torch_arrays(path, safe_torch_load(path, what="torch predictions file", error=InputError),
                            options.pt_items)
    if suffix == ".safetensors":
        tensors = SafetensorsFile(path, "a predictions file (.safetensors)")
        return Arrays(path, tensors.files, tensors.__getitem__, tensors.close, "safetensors")
    if suffix == ".mat":
        variables = MatFile(path, "a predictions file (.mat)")
        return Arrays(path, variables.files, variables.__getitem__, variables.close, "mat")
    if suffix in (".npy", ".txt"):
        array = read_npy(path, "a predictions file (.npy)") if suffix == ".npy" else read_text_table(
            path, separator=options.separator)
        notes = ()
        if suffix == ".txt" and array.ndim == 2:  # (np.savetxt of a row index beside the scores: rule 8)
            array, notes = text_score_columns(path, array, options.score_columns)
        return Arrays(path, [WHOLE], {WHOLE: array}.__getitem__, None, suffix[1:], notes=notes)
    if suffix in (".jsonl", JSON_SUFFIX):
        found: list[Any] = []
        columns = read_jsonl(path, found) if suffix == ".jsonl" else read_json_predictions(path, found)
        if found:
            return pipeline_arrays(path, found[0], suffix[1:], options)
        return Arrays(path, list(columns), lambda key: json_column(path, key, columns[key]), None, suffix[1:])
    table, notes = read_csv_with_notes(path, labels_key=labels_key, labels_only=labels_only, scores_only=scores_only,
                                       labels_optional=labels_optional, header=options.header,
                                       separator=options.separator, score_columns=options.score_columns,
                                       set_aside=(options.group_by,) if options.group_by else ())
    return Arrays(path, list(table), table.__getitem__, None, "csv", notes=tuple(notes))


def pipeline_arrays(path: Path, found: Any, kind: str, options: ReadOptions) -> Arrays:
    """The arrays of Hugging Face pipeline outputs (`adacal.sources.pipeline_outputs`), columns in one order."""
    from adacal.sources.pipeline_outputs import pipeline_columns

    key, outputs, records = found
    named, reading, notes = pipeline_columns(path, key, outputs, records, options.classes)
    arrays = Arrays(path, list(named), lambda name: named[name] if name not in records else json_column(
        path, name, records[name]), None, kind, notes=notes)
    arrays.pipeline = reading
    return arrays


def torch_arrays(path: Path, data: Any, pt_items: str | None = None) -> Arrays:
    """The arrays of a loaded .pt file (`adacal.sources.torch_file` reads its structure)."""
    named, notes = torch_structure(path, data, pt_items, label_keys=LABEL_KEYS)
    return Arrays(path, list(named), named.__getitem__, None, "pt", notes=tuple(notes))


def unnamed_npz(keys: list[str]) -> bool:
    """The keys of an .npz written by np.savez without names: arr_0 (scores), and arr_1 (labels) when there are two."""
    return set(keys) in (set(UNNAMED_NPZ), set(UNNAMED_NPZ[:1]))


def read_arrays(path: str | os.PathLike) -> dict[str, Any]:
    """Every array of a predictions file by key (all read: prefer `open_arrays`, which reads only what is used)."""
    with open_arrays(path) as arrays:
        return {key: arrays[key] for key in arrays.keys()}




__all__ = [
    "Arrays", "DEFAULT_OPTIONS", "FORMATS", "LABEL_KEYS", "ReadOptions", "SCORE_KEYS", "human_bytes", "open_arrays",
    "read_arrays", "torch_arrays", "unnamed_npz",
]
