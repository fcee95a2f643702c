"""Model outputs from any framework, as validated (scores, labels): .npz, .pt, .npy, .safetensors, .csv, .jsonl, many
key spellings.

Keys, first match wins: scores `logits`, `probs`, `probabilities`, `scores`, `outputs`, `y_prob`, `y_proba`,
`y_score`, `pred_probs` (cleanlab), `preds` (torchmetrics), `y_pred` (Keras), `predictions` (Hugging Face) — one
integer per sample under the last three is refused as hard predictions; labels `labels`, `targets`, `y`, `label`,
`target`, `label_ids` (Hugging Face), `y_true`, `true_labels`; each also as `<split>_<key>` (a run's predictions.npz holds `val_logits`, `test_labels`, ...), or
named exactly with `logits_key` / `labels_key`. Files:
- `.npz` (only the members used are decompressed) and `.pt` (weights_only: a dict of tensors, a `(logits, labels)`
  pair, or one tensor of scores; or a list of per-batch ones, concatenated; a tuple of model outputs under
  `predictions`, as Hugging Face's `Trainer.predict` returns it, gives its first item);
- `.safetensors` (Hugging Face's tensor format, read without its package or pickle: `adacal.sources.safetensors_file`):
  named tensors, found by the key spellings above;
- `.mat` (MATLAB / Octave up to v7, through scipy.io: `adacal.sources.matlab_file`): named variables, found by the key
  spellings above;
- `.npy`: one array of scores; its labels come from `labels_file` or, when there is none, from the file
  `<stem>_labels.npy` beside it, else `labels.npy` beside it (said in `Predictions.notes`);
- `.txt`: one table of scores as np.savetxt writes it (whitespace or commas between numbers, `#` comments), its
  labels found like an .npy's (`<stem>_labels.txt`, `labels.txt`);
- `.json`: an object of arrays (keys as above; keys holding no array ignored) or an array of per-sample objects;
  an adacal report is refused (it holds metrics);
- `.jsonl`: one JSON object per sample, every line with the same keys (`{"probs": [...], "label": 3}`), found by
  the key spellings above;
- `.csv` / `.tsv` (comma, semicolon or tab separated): one column per class plus a label column, header optional;
  the label column is the one named `label`, `labels`, `target`, `targets`, `y`, `class`, `label_ids`, `y_true` or
  `true_labels` (or `labels_key`), else the last column; a leading row-index column (pandas' `to_csv()`: integers
  or names under no header, `index` or `id`; 0, 1, 2, ... in a table without a header) is dropped.
The text formats (.csv, .tsv, .txt, .json, .jsonl) may be gzipped (`preds.csv.gz`), decompressed within the memory
budget (`adacal.sources.text_tables` reads them). Binary models: 1-D scores (or one column) become two columns —
positive-class probabilities p as [1 - p, p] when every value is in [0, 1], decision scores (logits) s as [0, s]
otherwise (softmax([0, s]) = sigmoid(s)); the assumption is recorded in `Predictions.notes`. String labels are mapped
to indices through a `classes` array (or a CSV's header).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import (
    PROB_SUM_TOLERANCE,
    binary_score_columns,
    check_labels,
    check_not_near_probs,
    check_scores,
    in_unit_interval,
    is_one_hot,
    looks_like_probs,
    mixed_binary_kinds,
    normalise_probs,
    probability_tolerance,
    to_numpy,
    value_range,
)
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
from adacal.sources.text_tables import (
    GZIP_SUFFIX,
    TEXT_FORMATS,
    format_suffix,
    is_integer_text,
    json_column,
    read_csv_with_notes,
    read_json_predictions,
    read_jsonl,
    read_text_table,
    text_stem,
)

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


@dataclass(frozen=True)
class Predictions:
    """Validated scores (N, K) — logits or probabilities — and integer labels (N,); `notes` say what was assumed
    or converted on the way in (binary scores, renormalised rows, class names), for reports and the terminal."""

    logits: np.ndarray
    labels: np.ndarray
    notes: tuple[str, ...] = field(default=(), compare=False)
    # The names of the score columns, in order, when the file gives them (a `classes` array, a CSV header).
    classes: tuple[str, ...] | None = field(default=None, compare=False)

    @property
    def num_classes(self) -> int:
        return int(self.logits.shape[1])

    def __len__(self) -> int:
        return int(self.labels.shape[0])


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

    def __post_init__(self) -> None:
        for flag, key in (("--logits-key", self.logits_key), ("--labels-key", self.labels_key)):
            if key is not None and (not isinstance(key, str) or not key.strip()):
                raise InputError(f"Expected {flag} to be a key name, got {key!r}.")


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
                scores_only: bool = False, labels_optional: bool = False) -> Arrays:
    """The arrays of a predictions file, by key, without reading any of them yet (for .npz). `scores_only`: the
    labels come from another file, so a CSV without a column named as labels is all scores; `labels_optional`: the
    same when its last column is not class indices (`text_tables.read_csv_with_notes`)."""
    path = Path(path)
    suffix = format_suffix(path)
    if suffix not in FORMATS and suffix != JSON_SUFFIX:
        # Still say "does not exist" / "is a folder" first: that is the more useful sentence.
        open_regular(path, "a predictions file").close()
        raise _unsupported(path)
    if suffix == ".npz":
        archive = NpzArchive(path, "a predictions file (.npz)")
        notes = ()
        if _unnamed_npz(archive.files):
            notes = (f"{path.name}: unnamed arrays (np.savez without names) read as arr_0 = scores"
                     + (", arr_1 = labels" if len(archive.files) == 2 else ""),)
        return Arrays(path, archive.files, archive.__getitem__, archive.close, "npz", notes=notes)
    if suffix in (".pt", ".pth"):
        return torch_arrays(path, safe_torch_load(path, what="torch predictions file", error=InputError))
    if suffix == ".safetensors":
        tensors = SafetensorsFile(path, "a predictions file (.safetensors)")
        return Arrays(path, tensors.files, tensors.__getitem__, tensors.close, "safetensors")
    if suffix == ".mat":
        variables = MatFile(path, "a predictions file (.mat)")
        return Arrays(path, variables.files, variables.__getitem__, variables.close, "mat")
    if suffix in (".npy", ".txt"):
        array = read_npy(path, "a predictions file (.npy)") if suffix == ".npy" else read_text_table(path)
        return Arrays(path, [WHOLE], {WHOLE: array}.__getitem__, None, suffix[1:])
    if suffix in (".jsonl", JSON_SUFFIX):
        columns = read_jsonl(path) if suffix == ".jsonl" else read_json_predictions(path)
        return Arrays(path, list(columns), lambda key: json_column(path, key, columns[key]), None, suffix[1:])
    table, notes = read_csv_with_notes(path, labels_key=labels_key, labels_only=labels_only, scores_only=scores_only,
                                       labels_optional=labels_optional)
    return Arrays(path, list(table), table.__getitem__, None, "csv", notes=tuple(notes))


def torch_arrays(path: Path, data: Any) -> Arrays:
    """The arrays of a loaded .pt file: a dict of tensors, a (logits, labels) pair, or one tensor of scores — or a
    list of per-batch outputs of these shapes (what Lightning's `Trainer.predict` returns), concatenated."""
    data, notes = _merged_batches(path, data)
    if isinstance(data, (tuple, list)) and len(data) == 2 and all(_is_tensor(v) for v in data):
        data = {"logits": data[0], "labels": data[1]}
    elif _is_tensor(data):
        data = {WHOLE: data}
    if not isinstance(data, dict):
        count = f" of {len(data)} item(s)" if isinstance(data, (tuple, list)) else ""
        raise InputError(
            f"Expected {path} to hold a dict of tensors, a (logits, labels) pair or one tensor (or a list of "
            f"per-batch ones), got a {type(data).__name__}{count}."
        )
    data = {str(k): v for k, v in data.items()}
    return Arrays(path, list(data), data.__getitem__, None, "pt", notes=tuple(notes))


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "detach")


def _is_pair(items: Any) -> bool:
    """A (logits, labels) pair rather than two batches of scores: unless both are float (B, K) score matrices with
    the same K and the second is not one-hot labels."""
    if not (isinstance(items, (tuple, list)) and len(items) == 2 and all(_is_tensor(v) for v in items)):
        return False
    first, second = items
    two_batches = (first.ndim == 2 and second.ndim == 2 and first.shape[1] == second.shape[1] >= 2
                   and first.is_floating_point() and second.is_floating_point()
                   and not is_one_hot(second.detach().cpu().float().numpy()))
    return not two_batches


def _concatenated(path: Path, what: str, parts: list[Any]) -> Any:
    import torch

    shapes = {tuple(part.shape[1:]) for part in parts}
    if any(part.ndim == 0 for part in parts) or len(shapes) != 1:
        raise InputError(
            f"Expected the per-batch {what} in {path} to share their shape past the first dimension, got shapes "
            f"{', '.join(str(tuple(part.shape)) for part in parts[:4])}{', ...' if len(parts) > 4 else ''}."
        )
    return torch.cat([part.detach().cpu() for part in parts])


def _batches(count: int) -> str:
    return f"{count} batch" if count == 1 else f"{count} batches"


def _per_sample(parts: list[Any], partner: Any) -> bool:
    """Whether a list of tensors holds one sample per item rather than one batch per item, given what is stored
    beside it (`partner`: the other list of a (logits, labels) pairing, or a whole tensor, or None): items that are
    scalars (0-d) are samples; 1-D items of one length K >= 2 are samples' score or one-hot rows when the partner is a
    list of scalars or of one-hot rows of that length, a tensor with one row per item (whose length the concatenated
    items would miss), or nothing (a note says how they were read)."""
    if all(part.ndim == 0 for part in parts):
        return True
    lengths = {tuple(part.shape) for part in parts}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1 or next(iter(lengths))[0] < 2:
        return False
    width = next(iter(lengths))[0]
    if isinstance(partner, list):
        if all(part.ndim == 0 for part in partner):
            return True
        return all(tuple(part.shape) == (width,) for part in partner) and all(
            is_one_hot(part.detach().cpu().reshape(1, -1).float().numpy()) for part in partner)
    if _is_tensor(partner) and partner.ndim >= 1:
        return partner.shape[0] == len(parts) != len(parts) * width
    # Nothing beside it (an OOD set, labels in another file): rows of one length are samples' scores, as a loop over
    # samples saves them; a binary model's batches would rarely all have one length (the last is usually short).
    return partner is None and len(parts) > 1


def _joined(path: Path, what: str, parts: list[Any], per_sample: bool) -> Any:
    """Items stacked (one sample each) or concatenated (one batch each)."""
    import torch

    if not per_sample:
        return _concatenated(path, what, parts)
    return torch.stack([part.detach().cpu() for part in parts])


def _merged_lists(path: Path, data: dict[Any, Any], lists: dict[Any, list[Any]], whole: Any) -> tuple[Any, list[str]]:
    """`data` updated with each list of tensors joined: stacked when it holds one sample per item (`_per_sample`,
    judged beside the other list, else beside `whole`, a tensor stored next to it), else concatenated."""

    def partner(key: Any) -> Any:
        others = [value for other, value in lists.items() if other != key]
        return others[0] if others else whole

    per_sample = {key: _per_sample(value, partner(key)) for key, value in lists.items()}
    if any(per_sample.values()) and len({len(value) for value in lists.values()}) == 1:
        per_sample = dict.fromkeys(lists, True)  # items paired across the lists: one sample each in all of them
    merged = {**data, **{key: _joined(path, str(key), value, per_sample[key]) for key, value in lists.items()}}
    count, names = len(next(iter(lists.values()))), ", ".join(map(str, lists))
    if all(per_sample.values()):
        return merged, [f"{path.name}: {count} samples of {names} stacked (one sample per item)"]
    return merged, [f"{path.name}: {_batches(count)} of {names} concatenated"]


def _scalars_as_tensors(data: Any) -> Any:
    """Python numbers inside a list's items (`[(logits_i, int(y_i)), ...]`, `[{"logits": t, "label": 3}, ...]`) and
    inside a dict's lists, as 0-d tensors, so that per-sample labels saved as plain ints are read like tensors."""
    import torch

    def tensor(value: Any) -> Any:
        return torch.tensor(value) if isinstance(value, (int, float)) else value  # bool is an int

    def item(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: tensor(v) for key, v in value.items()}
        if isinstance(value, tuple) and len(value) == 2:
            return tuple(tensor(v) for v in value)
        return value

    if isinstance(data, list) and data and all(isinstance(v, (dict, tuple)) for v in data):
        return [item(value) for value in data]
    if isinstance(data, dict):
        return {key: [tensor(v) for v in value] if isinstance(value, list) and value and any(_is_tensor(v) for v in value)
                else value for key, value in data.items()}
    return data


def _merged_batches(path: Path, data: Any) -> tuple[Any, list[str]]:
    """`data` with per-batch lists concatenated along the first dimension (per-sample lists stacked), and a note
    saying so."""
    data = _scalars_as_tensors(data)
    notes: list[str] = []
    if isinstance(data, dict):
        data, notes = _model_output_tuples(path, data)
    merged, more = _merged_dict_or_list(path, data)
    return merged, notes + more


def _model_output_tuples(path: Path, data: dict[Any, Any]) -> tuple[dict[Any, Any], list[str]]:
    """`data` with a tuple of model outputs under `predictions` reduced to its first item, the logits: Hugging Face's
    `Trainer.predict` returns such a tuple when the model outputs more than logits (hidden states, attentions, past
    key values), and its examples read `predictions[0]`. It is taken for one when the labels beside it have one entry
    per row of the first item, or when its items differ in shape past the first dimension (no batches could)."""
    notes = []
    labels = next((data[key] for key in LABEL_KEYS if key in data and _is_tensor(data[key])), None)
    for key in [key for key in data if _unprefixed(str(key)) == "predictions"]:
        items = data[key]
        if not (isinstance(items, tuple) and len(items) >= 2 and all(_is_tensor(v) for v in items)
                and items[0].ndim >= 1):
            continue
        mixed = len({tuple(item.shape[1:]) for item in items}) > 1 or any(item.ndim == 0 for item in items)
        if mixed or (labels is not None and labels.ndim >= 1 and labels.shape[0] == items[0].shape[0]):
            data = {**data, key: items[0]}
            notes.append(f"{path.name}: {key} holds a tuple of {len(items)} arrays (a model's outputs, as Hugging "
                         f"Face's Trainer.predict returns them); the first, shape {tuple(items[0].shape)}, read as "
                         "the scores")
    return data, notes


def _merged_dict_or_list(path: Path, data: Any) -> tuple[Any, list[str]]:
    if isinstance(data, dict):
        batched = {key: list(value) for key, value in data.items()
                   if isinstance(value, (tuple, list)) and value and all(_is_tensor(v) for v in value)}
        if not batched:
            return data, []
        whole = [value for key, value in data.items() if key not in batched and _is_tensor(value)]
        return _merged_lists(path, data, batched, whole[0] if whole else None)
    if not isinstance(data, (tuple, list)) or not data or _is_pair(data):
        return data, []
    if all(_is_pair(item) for item in data):
        scores, labels = [item[0] for item in data], [item[1] for item in data]
        one_each = _per_sample(scores, labels)  # the labels follow the scores
        merged = {"logits": _joined(path, "logits", scores, one_each), "labels": _joined(path, "labels", labels, one_each)}
        if one_each:
            return merged, [f"{path.name}: {len(data)} (logits, label) pairs read as one sample each"]
        return merged, [f"{path.name}: {_batches(len(data))} of (logits, labels) concatenated"]
    if all(isinstance(item, dict) for item in data):
        keys = [key for key in data[0] if all(key in item and _is_tensor(item[key]) for item in data)]
        if not keys:
            return data, []
        return _merged_lists(path, {}, {key: [item[key] for item in data] for key in keys}, None)
    if all(_is_tensor(item) for item in data):
        if _per_sample(list(data), None):
            return _joined(path, "scores", list(data), True), [
                f"{path.name}: {len(data)} score rows of one length read as one sample each (save torch.cat(list) "
                "if they are batches of a binary model's scores)"]
        return _concatenated(path, "scores", list(data)), [f"{path.name}: {_batches(len(data))} of scores concatenated"]
    return data, []


def read_arrays(path: str | os.PathLike) -> dict[str, Any]:
    """Every array of a predictions file by key (all read: prefer `open_arrays`, which reads only what is used)."""
    with open_arrays(path) as arrays:
        return {key: arrays[key] for key in arrays.keys()}


# -------------------------------------------------------------------------------------------------- interpretation


def _first(arrays: Arrays, names: tuple[str, ...], split: str | None) -> str | None:
    candidates = list(names) + ([f"{split}_{name}" for name in names] if split else [])
    return next((key for key in candidates if key in arrays), None)


def _scores_key(arrays: Arrays, options: ReadOptions, split: str | None) -> str | None:
    if options.logits_key is not None:
        return options.logits_key if options.logits_key in arrays else None
    if WHOLE in arrays:
        return WHOLE
    if _unnamed(arrays):
        return UNNAMED_NPZ[0]
    return _first(arrays, SCORE_KEYS, split)


def _unnamed_npz(keys: list[str]) -> bool:
    """The keys of an .npz written by np.savez without names: arr_0 (scores), and arr_1 (labels) when there are two."""
    return set(keys) in (set(UNNAMED_NPZ), set(UNNAMED_NPZ[:1]))


def _unnamed(arrays: Arrays) -> bool:
    return arrays.kind == "npz" and _unnamed_npz(arrays.keys())


def _labels_key(arrays: Arrays, options: ReadOptions, split: str | None) -> str | None:
    if arrays.kind == "csv":
        return "labels" if "labels" in arrays else None  # --labels-key picked the column when the table was read
    if options.labels_key is not None:
        return options.labels_key if options.labels_key in arrays else None
    if _unnamed(arrays):
        return UNNAMED_NPZ[1] if UNNAMED_NPZ[1] in arrays else None
    return _first(arrays, LABEL_KEYS, split)


_PROBABILITIES_READ = "taken as positive-class probabilities p (columns 1 - p, p)"
_DECISION_READ = "taken as binary decision scores (logits) s (columns 0, s)"


def binary_columns(scores: np.ndarray, name: str, spelled: str = "1-D scores", *,
                   decision: bool = False) -> tuple[np.ndarray, str]:
    """Two columns from 1-D binary scores (`adacal.arrays.binary_score_columns`; `decision`: decision scores whatever
    their range), and the sentence saying what was assumed (`spelled`: how the scores came)."""
    columns, probabilities = binary_score_columns(scores, name, decision=decision)
    if probabilities:
        return columns, f"{name}: {spelled} in [0, 1] {_PROBABILITIES_READ}"
    if decision and in_unit_interval(columns[:, 1]):
        return columns, (f"{name}: {spelled} in [0, 1] {_DECISION_READ}, as another set of the same model's scores "
                         "lies outside [0, 1] and one model gives one kind of score")
    return columns, f"{name}: {spelled} outside [0, 1] {_DECISION_READ}"


def mixed_binary_readings(*notes: Iterable[str]) -> bool:
    """Whether reading several sets of one model's scores (the notes each reading left) took one score per sample as
    probabilities in some sets and as decision scores in others: they are then read again with
    `ReadOptions(decision_scores=True)` (see `adacal.arrays.mixed_binary_kinds`)."""
    kinds = set()
    for set_notes in notes:
        for note in set_notes:
            if note.endswith(_PROBABILITIES_READ):
                kinds.add(True)
            elif _DECISION_READ in note:
                kinds.add(False)
    return kinds == {True, False}


def interpret_scores(values: Any, *, name: str, renormalize: bool = False,
                     named_probabilities: bool = False, decision: bool = False) -> tuple[np.ndarray, list[str]]:
    """(N, K) float64 scores from an array of logits or probabilities, and notes on what was converted.
    `named_probabilities`: the key says probabilities (`PROBABILITY_KEYS`), so values in [0, 1] whose rows do not sum
    to 1 are refused, and other values read as logits with a note. `decision`: one score per sample is read as decision
    scores whatever its range (`ReadOptions.decision_scores`)."""
    notes: list[str] = []
    tolerance = probability_tolerance(values)
    array = to_numpy(values)
    if array.dtype.kind in "OUSV" or array.dtype == bool:
        raise InputError(f"Expected {name} to be numeric, got dtype {array.dtype}.")
    # One column (N, 1) is a binary model's single output too (Keras' sigmoid layer, a logistic head).
    column = array.ndim == 2 and array.shape[1] == 1
    binary = array.ndim == 1 or column
    if binary:
        array, note = binary_columns(array, name, "one score column (N, 1)" if column else "1-D scores",
                                     decision=decision)
        flat = array[:, 1]
        if flat.size and not np.isfinite(flat).all():
            raise InputError(f"Expected {name} to be finite, found NaN or Inf in {int((~np.isfinite(flat)).sum())} row(s).")
        if renormalize and not note.endswith(_PROBABILITIES_READ):
            raise InputError(
                f"Expected {name} (one score per sample) in [0, 1] with --renormalize, got values from "
                f"{flat.min():.4g} to {flat.max():.4g}: --renormalize divides rows of several columns by their sums; "
                "give P(class 1) in [0, 1] (percentages / 100), or the scores of both classes."
            )
        notes.append(note)
    scores = check_scores(array, name=name)
    if renormalize:
        sums = scores.sum(axis=1)
        if scores.min() < 0.0 or not (sums > 0).all():
            raise InputError(
                f"Expected {name} to be non-negative with a positive sum in every row (probabilities, percentages, "
                f"counts) for --renormalize, got values from {scores.min():.4g} to {scores.max():.4g}."
            )
        deviation = float(np.abs(sums - 1.0).max())
        scores = scores / sums[:, None]
        if deviation > PROB_SUM_TOLERANCE:
            notes.append(f"{name}: rows renormalised to sum to 1 (they summed to {value_range(sums)})")
    elif tolerance > PROB_SUM_TOLERANCE and looks_like_probs(scores, tolerance=tolerance):
        # float16/bfloat16 probabilities sum to 1 only within their rounding: normalise them here, in float64, so
        # that everything downstream takes them as probabilities, by the metrics' own rule (so it changes no metric).
        scores = normalise_probs(scores)
    elif not looks_like_probs(scores):
        # Read as logits: refuse what are surely probabilities off by more than rounding, or percentages.
        fix = "pass --renormalize to divide each row by its sum, or pass logits"
        check_not_near_probs(scores, name=name, fix=fix)
        if named_probabilities and not notes:  # (binary expansions are probabilities or logits by their range)
            if scores.min() >= 0.0 and scores.max() <= 1.0:
                raise InputError(
                    f"Expected {name} to be probabilities whose rows sum to 1, as its name says, got values in [0, 1] "
                    f"whose rows sum to {value_range(scores.sum(axis=1))}: {fix}."
                )
            notes.append(f"{name}: named as probabilities but holds values outside [0, 1]; read as logits")
    return scores, notes


def interpret_labels(values: Any, *, n: int, num_classes: int, name: str, classes: Any = None,
                     classes_name: str = "classes") -> tuple[np.ndarray, list[str]]:
    """Integer labels (N,) in [0, num_classes); string labels are looked up in `classes`."""
    array = to_numpy(values)
    notes = []
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
        notes.append(f"{name}: a column (N, 1) of class labels, read as 1-D")
    if array.dtype.kind in "US" and classes is None and array.ndim == 1 and array.size \
            and all(is_integer_text(str(label)) for label in array):
        # Numbers written as text ("3"; JSON writers, string columns): class indices, as a CSV's cells are read.
        array = np.array([int(float(label)) for label in array], dtype=np.int64)
        notes.append(f"{name}: class indices written as text, read as integers")
    if array.dtype.kind in "US":
        if classes is None:
            raise InputError(
                f"Expected {name} to be integer class indices, got strings; add a 'classes' array naming the "
                "classes in column order, or pass indices."
            )
        names = [str(c) for c in to_numpy(classes).reshape(-1).astype(str)]
        if len(names) != num_classes:
            raise InputError(f"Expected {classes_name} to name the {num_classes} classes, got {len(names)} name(s).")
        if len(set(names)) != len(names):
            raise InputError(f"Expected the names in {classes_name} to differ, but some repeat.")
        index = {c: i for i, c in enumerate(names)}
        flat = array.reshape(-1).astype(str) if array.ndim == 1 else None
        if flat is None:
            raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
        unknown = next((label for label in flat if label not in index), None)
        if unknown is not None:
            raise InputError(
                f"Expected every label in {name} to be one of the {num_classes} classes in {classes_name}; "
                f"{unknown[:40]!r} is not."
            )
        mapped = np.fromiter((index[label] for label in flat), dtype=np.int64, count=flat.size)
        return check_labels(mapped, n=n, num_classes=num_classes, name=name), [
            *notes, f"{name}: class names mapped to indices by {classes_name}"]
    if array.ndim == 2 and array.shape[1] >= 2:
        notes.append(f"{name}: one-hot rows read as class indices")
    elif array.dtype == np.bool_:
        notes.append(f"{name}: booleans read as classes 0 (False) and 1 (True)")
    return check_labels(array, n=n, num_classes=num_classes, name=name), notes


def _labels_from_file(options: ReadOptions, n: int, num_classes: int) -> tuple[np.ndarray, list[str]]:
    path = Path(options.labels_file)
    with open_arrays(path, labels_key=options.labels_key, labels_only=True) as arrays:
        if WHOLE in arrays:
            key = WHOLE
        else:
            key = _labels_key(arrays, options, None)
            if key is None and format_suffix(path) in (".csv", ".tsv") and "scores" in arrays:
                key = "scores"
            if key is None:
                wanted = options.labels_key or _label_key_list()
                raise InputError(f"Expected the labels file {path} to contain {wanted}; it has: {arrays.listing()}.")
        values = arrays[key]
        if key == "scores" and np.ndim(values) == 2 and np.shape(values)[1] == 1:
            values = np.asarray(values).reshape(-1)
        notes = []
        if (arrays.kind == "csv" and np.ndim(values) == 1 and len(values) == n + 1 and values.dtype.kind in "iu"
                and values[0] == 0):
            # `pd.Series(y).to_csv(path, index=False)` writes the column's name, 0, as a first line: one line more
            # than the scores have samples, starting with it, is that header.
            values = values[1:]
            notes.append(f"{path.name}: first line '0' read as pandas' column name (a header), not as a label: the "
                         f"file has one line more than the {n} samples")
        classes_key = _first(arrays, CLASS_KEYS, None)
        classes = arrays[classes_key] if classes_key else None
        labels, label_notes = interpret_labels(values, n=n, num_classes=num_classes, name=arrays.label(key),
                                               classes=classes,
                                               classes_name=arrays.label(classes_key) if classes_key else "classes")
        return labels, notes + label_notes


def sibling_labels(path: Path) -> Path | None:
    """The labels of an .npy (or .txt) of scores when no labels file is given: `<stem>_labels.npy` beside it, else
    `labels.npy` beside it (the layout of CIFAR-10-C: `<name>.npy` + `labels.npy`), with the scores' own suffix;
    None when neither exists."""
    suffix = format_suffix(path)
    # The suffix as the scores spell it comes first (`X.NPY` beside `X_labels.NPY`), then lower-case.
    spelled = text_stem_suffix(path)
    suffixes = tuple(dict.fromkeys((spelled, suffix)))
    names = tuple(dict.fromkeys(f"{stem}{ending}" for stem in (f"{text_stem(path)}_labels", "labels")
                                for ending in suffixes))
    endings = ("", GZIP_SUFFIX, GZIP_SUFFIX.upper()) if suffix in TEXT_FORMATS else ("",)
    for candidate in (path.with_name(name + ending) for name in names for ending in endings):
        if candidate != path and os.path.lexists(candidate):
            return candidate
    return None


def text_stem_suffix(path: Path) -> str:
    """The format suffix of `path` as its name spells it (`.NPY` for `x.NPY`, `.txt` for `x.txt.gz`)."""
    name = path.name[: -len(GZIP_SUFFIX)] if path.suffix.lower() == GZIP_SUFFIX else path.name
    return Path(name).suffix


def predictions_from(arrays: Arrays, *, options: ReadOptions = DEFAULT_OPTIONS, split: str | None = "test",
                     need_labels: bool = True, notes_out: list[str] | None = None) -> Predictions | np.ndarray:
    """The (scores, labels) of one split of an opened file, or only the scores when `need_labels` is False (what
    reading them assumed is then added to `notes_out`, when given)."""
    path = arrays.path
    if options.logits_key is not None and arrays.kind in (*KEYLESS, "csv"):
        raise InputError(
            f"Expected --logits-key only with an .npz or .pt file, not with {path.name} (its scores have no key)."
        )
    key = _scores_key(arrays, options, split)
    if key is None:
        wanted = (f"'{options.logits_key}' (--logits-key)" if options.logits_key else
                  "logits" + (f" or {split}_logits" if split else "") + " (or probs, probabilities, scores)")
        raise InputError(f"Expected {path} to contain {wanted}; it has: {arrays.listing()}.")
    raw = arrays[key]
    one_per_sample = np.ndim(raw) == 1 or tuple(np.shape(raw)[1:]) == (1,)  # a binary model's single score
    decision = options.decision_scores
    if one_per_sample and not decision and not options.renormalize:
        # One model's sets are read alike: the file's other split (val for test) outside [0, 1] makes these
        # decision scores too, as reading both splits would (`load_split_predictions`).
        decision = mixed_binary_kinds(raw, _other_split_scores(arrays, options, split, key))
    if _unprefixed(key) in HARD_PREDICTION_KEYS:
        values = to_numpy(raw, keep_float=True)
        integers = np.issubdtype(values.dtype, np.integer) or values.dtype == np.bool_
        if not integers and values.dtype.kind == "f" and values.size:
            # Class indices or one-hot rows stored as floats (`y_pred.astype(float)`, Keras' `to_categorical`,
            # `np.eye(K)[y_pred]`) are hard predictions too: 0.0 / 1.0 would otherwise pass for probabilities.
            with np.errstate(invalid="ignore"):
                integers = bool(np.isfinite(values).all() and (values >= 0).all()
                                and (np.mod(values, 1) == 0).all())
        if integers and (one_per_sample or is_one_hot(values)):
            holds = "one class index per sample" if one_per_sample else "one-hot rows (0 and 1)"
            raise InputError(
                f"Expected {arrays.label(key)} to hold scores (logits or probabilities per class), but it holds {holds}: "
                "hard class predictions carry no confidence to calibrate. Save the model's logits or probabilities "
                "instead."
            )
    scores, notes = interpret_scores(raw, name=arrays.label(key), renormalize=options.renormalize,
                                     named_probabilities=_unprefixed(key) in PROBABILITY_KEYS, decision=decision)
    if not need_labels:
        if notes_out is not None:
            notes_out.extend([*arrays.notes, *notes])
        return scores
    try:
        return _with_labels(arrays, key, scores, notes, options, split)
    except InputError as exc:
        if one_per_sample and "in [0, 1]" in str(exc):
            raise InputError(
                f"{str(exc).rstrip('.')} (one score per sample is read as a binary model's; scores of more than 2 "
                "classes must be 2-D, samples × classes)."
            ) from None
        if arrays.kind == "csv" and options.labels_file is None and str(exc).startswith(
                f"Expected {arrays.label('labels')} to be integers"):
            raise InputError(
                f"{str(exc).rstrip('.')} (with no column named label, target or y, a table's last column is read as "
                "its labels; give --labels FILE if it holds only scores)."
            ) from None
        raise


def _other_split_scores(arrays: Arrays, options: ReadOptions, split: str | None, key: str) -> Any:
    """The raw scores of the file's other split (`val_…` when reading the test split, `test_…` for val), or None when
    it has none or they cannot be read (they are not this read's business then)."""
    if split not in ("val", "test"):
        return None
    other = "test" if split == "val" else "val"
    for name in (options.logits_key,) if options.logits_key else SCORE_KEYS:
        candidate = f"{other}_{name}"
        if candidate != key and candidate in arrays:
            try:
                return arrays[candidate]
            except InputError:
                return None
    return None


def _unprefixed(key: str) -> str:
    """`key` without a `val_` / `test_` split prefix."""
    for split in ("val_", "test_"):
        if key.startswith(split):
            return key[len(split):]
    return key


def _label_key_list() -> str:
    return " or ".join(LABEL_KEYS[:3]) + f" (or {', '.join(LABEL_KEYS[3:])})"


def _with_labels(arrays: Arrays, key: str, scores: np.ndarray, notes: list[str], options: ReadOptions,
                 split: str | None) -> Predictions:
    path = arrays.path
    n, k = scores.shape
    classes_key = _first(arrays, CLASS_KEYS, None)
    classes = _class_names(arrays, classes_key, k)
    if options.labels_file is not None:
        labels, label_notes = _labels_from_file(options, n, k)
    else:
        label_key = _labels_key(arrays, options, split)
        if label_key is None and arrays.kind in KEYLESS:
            sibling = sibling_labels(path)
            if sibling is None:
                suffix = format_suffix(path)
                raise InputError(
                    f"Expected labels for {path}: give --labels FILE or put them in {text_stem(path)}_labels{suffix} "
                    f"(or labels{suffix}) beside it."
                )
            found = predictions_from(arrays, options=replace(options, labels_file=sibling), split=split)
            note = f"{arrays.label(key)}: labels read from {sibling.name} beside it"
            return Predictions(found.logits, found.labels, found.notes + (note,), found.classes)
        if label_key is None and key == WHOLE:
            raise InputError(f"Expected labels for {path}, which holds one tensor of scores: give --labels FILE.")
        if label_key is None and _unnamed(arrays):
            raise InputError(
                f"Expected labels for {path}, which holds one unnamed array of scores (arr_0): give --labels FILE, or "
                "save both with np.savez(path, logits=..., labels=...)."
            )
        if label_key is None:
            wanted = f"'{options.labels_key}' (--labels-key)" if options.labels_key else _label_key_list()
            raise InputError(f"Expected {path} to contain {wanted} beside {arrays.label(key)}; it has: {arrays.listing()}.")
        labels, label_notes = interpret_labels(
            arrays[label_key], n=n, num_classes=k, name=arrays.label(label_key),
            classes=arrays[classes_key] if classes_key else None,
            classes_name=arrays.label(classes_key) if classes_key else "classes",
        )
    return Predictions(logits=scores, labels=labels, notes=tuple(list(arrays.notes) + notes + label_notes),
                       classes=classes)


def _class_names(arrays: Arrays, key: str | None, num_classes: int) -> tuple[str, ...] | None:
    """The class names of a `classes` array or CSV header, as strings, when there is one per score column; None when
    there is none or it cannot be read (it matters then only where labels are names, which reads it with its errors)."""
    if key is None:
        return None
    try:
        names = np.asarray(to_numpy(arrays[key])).reshape(-1)
    except InputError:
        return None
    if names.size != num_classes or names.dtype.kind not in "USiuf":
        return None
    return tuple(str(name).strip() for name in names.tolist())


def has_split(arrays: Arrays, split: str, options: ReadOptions = DEFAULT_OPTIONS) -> bool:
    names = SCORE_KEYS + LABEL_KEYS + tuple(k for k in (options.logits_key, options.labels_key) if k)
    return any(f"{split}_{name}" in arrays for name in names)


def load_predictions(path: str | os.PathLike, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS) -> Predictions:
    """Scores and labels of a predictions file: `logits`/`labels` (any spelling above), or `<split>_...`."""
    with open_arrays(path, labels_key=options.labels_key, scores_only=options.labels_file is not None) as arrays:
        return predictions_from(arrays, options=options, split=split)


def load_scores(path: str | os.PathLike, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS,
                notes_out: list[str] | None = None) -> np.ndarray:
    """Only the scores (N, K) of a predictions file (labels not needed, e.g. OOD sets); what reading them assumed
    (binary scores, a dropped index column, ...) is added to `notes_out`, when given."""
    with open_arrays(path, labels_key=options.labels_key, labels_optional=True) as arrays:
        return predictions_from(arrays, options=options, split=split, need_labels=False, notes_out=notes_out)


def load_split_predictions(path: str | os.PathLike, *, options: ReadOptions = DEFAULT_OPTIONS
                           ) -> dict[str, Predictions | None]:
    """Validation and test predictions from one file (`val_*` and `test_*` keys, e.g. a run's predictions.npz)."""
    path = Path(path)
    with open_arrays(path, labels_key=options.labels_key) as arrays:
        if not has_split(arrays, "test", options):
            raise InputError(
                f"Expected {path} to hold val_logits, val_labels, test_logits and test_labels (like a run's "
                f"predictions.npz); it has: {arrays.listing()}."
            )
        test = _prefixed(arrays, "test", options)
        val = _prefixed(arrays, "val", options) if has_split(arrays, "val", options) else None
        if val is not None and not options.renormalize and mixed_binary_readings(val.notes, test.notes):
            alike = replace(options, decision_scores=True)
            test, val = _prefixed(arrays, "test", alike), _prefixed(arrays, "val", alike)
    if val is not None and val.num_classes != test.num_classes:
        raise InputError(
            f"Expected the validation and test logits in {path} to have the same number of classes, "
            f"got {val.num_classes} and {test.num_classes}."
        )
    return {"val": val, "test": test}


def _prefixed(arrays: Arrays, split: str, options: ReadOptions) -> Predictions:
    """Only `<split>_` keys (a file with both `logits` and `val_logits` must not mix them up); --logits-key K and
    --labels-key L name `<split>_K` and `<split>_L` here."""
    score_names = (options.logits_key,) if options.logits_key else SCORE_KEYS
    label_names = (options.labels_key,) if options.labels_key else LABEL_KEYS
    scores = _first(arrays, tuple(f"{split}_{n}" for n in score_names), None)
    labels = _first(arrays, tuple(f"{split}_{n}" for n in label_names), None)
    missing = [f"{split}_logits" if scores is None else None, f"{split}_labels" if labels is None else None]
    missing = [m for m in missing if m]
    if missing:
        raise InputError(f"Expected {arrays.path} to contain {' and '.join(missing)}; it has: {arrays.listing()}.")
    return predictions_from(arrays, options=ReadOptions(scores, labels, None, options.renormalize,
                                                        decision_scores=options.decision_scores), split=None)


__all__ = [
    "Arrays", "LABEL_KEYS", "Predictions", "ReadOptions", "SCORE_KEYS", "binary_columns", "human_bytes",
    "interpret_labels", "interpret_scores", "load_predictions", "load_scores", "load_split_predictions",
    "mixed_binary_readings", "open_arrays", "predictions_from", "read_arrays", "sibling_labels",
]
