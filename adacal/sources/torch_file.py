"""The structures a `.pt` file of predictions holds, as named arrays (docs/inputs.md, "Structure of a .pt file").

Loaded with weights_only=True by `files.safe_torch_load`. Accepted: a dict of tensors; a (scores, labels) pair; one
tensor of scores; a tuple of model outputs under `predictions` (Hugging Face's `Trainer.predict`); and lists whose
items are batches or samples of these (Lightning's `Trainer.predict` returns one item per batch). Each list is read by
one rule, from the file alone, or refused with the option that chooses (`--pt-items batches|samples|pair`):

1. items with 0-d scores (one number each) are samples, stacked;
2. items of 2-D scores (B, K) are batches, concatenated;
3. items of 1-D scores of one length L are a binary model's batches of L scores, or samples' rows of L classes: the
   labels beside them decide — 0-d labels (one per item) make samples, label vectors that are not all one-hot make
   batches, a labels tensor with one entry per item (not per score) makes samples; otherwise refused;
4. 1-D items of different lengths are batches;
5. a tuple of two tensors is a (scores, labels) pair, as models and data loaders return them; a list of two tensors is
   a pair when the second is integer or boolean, or has one entry per row of the first and is not a float matrix like
   the first; two batches when both are float matrices of one width and the
   second is not one-hot, or the row counts differ; refused when the second is a one-hot float matrix with the
   first's rows (labels, or a saturated second batch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adacal.arrays import is_one_hot
from adacal.errors import InputError

_CHOOSE = "pass --pt-items batches, samples or pair to say which"


def is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "detach")


def _one_hot(tensor: Any) -> bool:
    values = tensor.detach().cpu()
    if values.ndim == 1:
        values = values.reshape(1, -1)
    return is_one_hot(values.float().numpy()) if values.ndim == 2 else False


def _integral(tensor: Any) -> bool:
    return not tensor.is_floating_point() and not tensor.is_complex()


def _whole_numbers(values: Any) -> bool:
    """Whether every value of a float tensor is a whole number (labels stored as floats)."""
    return bool(((values == values.round()) & values.isfinite()).all())


def _shapes(parts: list[Any], limit: int = 4) -> str:
    shown = ", ".join(str(tuple(part.shape)) for part in parts[:limit])
    return shown + (", ..." if len(parts) > limit else "")


def _concatenated(path: Path, what: str, parts: list[Any]) -> Any:
    import torch

    if any(part.ndim == 0 for part in parts) or len({tuple(part.shape[1:]) for part in parts}) != 1:
        raise InputError(
            f"Expected the per-batch {what} in {path.name} to share their shape past the first dimension, got shapes "
            f"{_shapes(parts)}."
        )
    if len({part.dtype for part in parts}) != 1:
        raise InputError(f"Expected the per-batch {what} in {path.name} to share one dtype, got "
                         f"{', '.join(sorted({str(part.dtype) for part in parts}))}.")
    return torch.cat([part.detach().cpu() for part in parts])


def _stacked(path: Path, what: str, parts: list[Any]) -> Any:
    import torch

    if len({tuple(part.shape) for part in parts}) != 1 or len({part.dtype for part in parts}) != 1:
        raise InputError(f"Expected the per-sample {what} in {path.name} to share one shape and dtype, got shapes "
                         f"{_shapes(parts)}.")
    return torch.stack([part.detach().cpu() for part in parts])


def _items_are_samples(path: Path, what: str, parts: list[Any], partner: Any, choice: str | None) -> bool:
    """Rules 1-4: whether a list's items are samples (True) or batches (False), given what is stored beside it
    (`partner`: the labels list of a pairing, a whole tensor beside the list, or None)."""
    if choice in ("batches", "samples"):
        return choice == "samples"
    if all(part.ndim == 0 for part in parts):
        return True
    if any(part.ndim == 0 for part in parts):
        raise InputError(f"Expected the items of {what} in {path.name} to be all numbers or all arrays, got shapes "
                         f"{_shapes(parts)}.")
    if any(part.ndim >= 2 for part in parts):
        return False
    lengths = {part.shape[0] for part in parts}
    if len(lengths) > 1:
        return False
    width = lengths.pop()
    if isinstance(partner, list) and partner:
        if all(label.ndim == 0 for label in partner):
            return True
        if all(tuple(label.shape) == (width,) for label in partner) and not all(_one_hot(label) for label in partner):
            return False
        if all(tuple(label.shape) == (1,) for label in partner):
            return True
    elif is_tensor(partner) and partner.ndim >= 1 and len(parts) != len(parts) * width:
        if partner.shape[0] == len(parts):
            return True
        if partner.shape[0] == len(parts) * width:
            return False
    if width == 1:
        return False  # one score per item: a binary model's batches of one, as concatenated as stacked
    raise InputError(
        f"Expected {path.name} to say whether its {len(parts)} items of {what} (each {width} numbers) are batches of "
        f"a binary model's scores or samples' scores of {width} classes; both readings fit: {_CHOOSE}."
    )


def _joined(path: Path, what: str, parts: list[Any], samples: bool) -> Any:
    return _stacked(path, what, parts) if samples else _concatenated(path, what, parts)


def _count(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}{'es' if word.endswith('h') else 's'}"


def _labels_of_one(lists: dict[Any, list[Any]], label_keys: tuple[str, ...]) -> dict[Any, list[Any]]:
    """Rule 3: a labels list whose items are class indices of shape (1,) (a `batch_size=1` loop's `tensor([y])`),
    beside scores whose items are 1-D of one length L >= 2, holds one label per item: its items are read as 0-d
    labels, so that the items are samples. Only under a key of labels (`label_keys`, or a pair's second tensor)."""
    def named_labels(key: Any) -> bool:
        name = str(key)
        for prefix in ("val_", "test_"):
            name = name[len(prefix):] if name.startswith(prefix) else name
        return name in (*label_keys, "labels")

    def rows(parts: list[Any]) -> bool:
        return all(part.ndim == 1 for part in parts) and len({part.shape[0] for part in parts}) == 1 \
            and parts[0].shape[0] >= 2

    out = dict(lists)
    for key, parts in lists.items():
        others = [value for other, value in lists.items() if other != key]
        if (named_labels(key) and others and all(tuple(part.shape) == (1,) for part in parts)
                and all(_integral(part) or _whole_numbers(part.detach().cpu().double()) for part in parts)
                and all(rows(value) for value in others)):
            out[key] = [part.reshape(()) for part in parts]
    return out


def _merged_lists(path: Path, data: dict[Any, Any], lists: dict[Any, list[Any]], whole: Any,
                  choice: str | None, label_keys: tuple[str, ...] = ()) -> tuple[dict[Any, Any], list[str]]:
    """`data` with each list of tensors joined, read as samples or batches by rules 1-4, alike for every list."""
    if choice is None:
        lists = _labels_of_one(lists, label_keys)
    if len({len(value) for value in lists.values()}) != 1 and len(lists) > 1:
        counts = ", ".join(f"{key}: {len(value)}" for key, value in lists.items())
        raise InputError(f"Expected the lists in {path.name} to hold one item each per batch or sample, got {counts}.")

    def partner(key: Any) -> Any:
        others = [value for other, value in lists.items() if other != key]
        return others[0] if others else whole

    if choice in ("batches", "samples"):
        readings = dict.fromkeys(lists, choice == "samples")
    elif any(part.ndim >= 2 for value in lists.values() for part in value):
        readings = dict.fromkeys(lists, False)  # a matrix per item: batches, whatever lies beside it
    elif any(all(part.ndim == 0 for part in value) for value in lists.values()):
        readings = dict.fromkeys(lists, True)  # one number per item in some list: items paired across lists are samples
    else:
        readings = {key: _items_are_samples(path, str(key), value, partner(key), choice)
                    for key, value in lists.items()}
    if len(set(readings.values())) > 1:
        raise InputError(f"Expected the lists in {path.name} to hold batches alike or samples alike, but "
                         f"{', '.join(map(str, lists))} read differently: {_CHOOSE}.")
    samples = next(iter(readings.values()))
    merged = {**data, **{key: _joined(path, str(key), value, samples) for key, value in lists.items()}}
    count, names = len(next(iter(lists.values()))), ", ".join(map(str, lists))
    how = "samples stacked (one sample per item)" if samples else "concatenated"
    return merged, [f"{path.name}: {_count(count, 'batch') if not samples else f'{count} items'} of {names} {how}"]


def _scalars_as_tensors(data: Any) -> Any:
    """Python numbers inside a list's items (`[(logits_i, int(y_i)), ...]`) and inside a dict's lists, as 0-d tensors,
    so that per-sample labels saved as plain ints are read like tensors."""
    import torch

    def tensor(value: Any) -> Any:
        return torch.tensor(value) if isinstance(value, (int, float)) else value  # bool is an int

    def item(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: tensor(v) for key, v in value.items()}
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return tuple(tensor(v) for v in value)
        return value

    if isinstance(data, list) and data and all(isinstance(v, (dict, tuple)) for v in data):
        return [item(value) for value in data]
    if isinstance(data, dict):
        return {key: [tensor(v) for v in value]
                if isinstance(value, list) and value and any(is_tensor(v) for v in value)
                else value for key, value in data.items()}
    return data


def _model_output_tuples(path: Path, data: dict[Any, Any], label_keys: tuple[str, ...]
                         ) -> tuple[dict[Any, Any], list[str]]:
    """`data` with a tuple of model outputs under `predictions` reduced to its first item, the logits (Hugging Face's
    `Trainer.predict` with extra outputs): taken for one when the labels beside it have one entry per row of the first
    item, or when its items differ in shape past the first dimension (no batches could)."""
    notes = []
    labels = next((data[key] for key in label_keys if key in data and is_tensor(data[key])), None)
    for key in [key for key in data if key in ("predictions", "val_predictions", "test_predictions")]:
        items = data[key]
        if not (isinstance(items, tuple) and len(items) >= 2 and all(is_tensor(v) for v in items)
                and items[0].ndim >= 1):
            continue
        mixed = len({tuple(item.shape[1:]) for item in items}) > 1 or any(item.ndim == 0 for item in items)
        if mixed or (labels is not None and labels.ndim >= 1 and labels.shape[0] == items[0].shape[0]):
            data = {**data, key: items[0]}
            notes.append(f"{path.name}: {key} holds a tuple of {len(items)} arrays (a model's outputs, as Hugging "
                         f"Face's Trainer.predict returns them); the first, shape {tuple(items[0].shape)}, read as "
                         "the scores")
    return data, notes


def _two_items(path: Path, items: Any, choice: str | None) -> bool:
    """Rule 5: whether two tensors are a (scores, labels) pair (True) or two batches of scores (False)."""
    if choice is not None:
        return choice == "pair"
    first, second = items
    if isinstance(items, tuple):
        return True  # models and loaders return pairs as tuples; a list of outputs is a list
    if first.ndim == 0 or second.ndim == 0:
        raise InputError(f"Expected {path.name} to hold a (scores, labels) pair of arrays or a list of batches, got "
                         f"two tensors of shapes {_shapes(items)}.")
    if _integral(second):
        return True
    if second.shape[0] != first.shape[0]:
        return False  # labels have one entry per row of the scores
    if second.ndim == 1 or tuple(second.shape[1:]) == (1,):
        if first.ndim == 1:
            values = second.detach().cpu().double()
            if not bool(_whole_numbers(values)):
                return False  # fractions are no labels: two batches of a binary model's scores
            raise InputError(
                f"Expected {path.name} to say whether its two 1-D tensors are a binary model's (scores, labels) or "
                f"two batches of its scores; both readings fit: {_CHOOSE}."
            )
        return True
    if first.ndim == 2 and second.ndim == 2 and first.shape[1] == second.shape[1] >= 2 and first.is_floating_point():
        if not _one_hot(second):
            return False
        raise InputError(
            f"Expected {path.name} to say whether its second tensor, one-hot floats of shape "
            f"{tuple(second.shape)}, holds the labels of the first or a second batch of scores (saturated to 0 and "
            f"1); both readings fit: {_CHOOSE}."
        )
    return True


def _is_pair(item: Any) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and all(is_tensor(v) for v in item)


def _merged_dict_or_list(path: Path, data: Any, choice: str | None, label_keys: tuple[str, ...] = ()
                         ) -> tuple[Any, list[str]]:
    if isinstance(data, dict):
        lists = {key: list(value) for key, value in data.items()
                 if isinstance(value, (tuple, list)) and value and all(is_tensor(v) for v in value)}
        if not lists:
            return data, []
        whole = [value for key, value in data.items() if key not in lists and is_tensor(value)]
        return _merged_lists(path, data, lists, whole[0] if whole else None, choice, label_keys)
    if not isinstance(data, (tuple, list)) or not data:
        return data, []
    if _is_pair(data) and not all(item.ndim == 0 for item in data):
        if _two_items(path, data, choice):
            return {"logits": data[0], "labels": data[1]}, []
        return _concatenated(path, "scores", list(data)), [f"{path.name}: 2 batches of scores concatenated"]
    if all(_is_pair(item) for item in data):
        scores, labels = [item[0] for item in data], [item[1] for item in data]
        return _merged_lists(path, {}, {"logits": scores, "labels": labels}, None,
                             None if choice == "pair" else choice, label_keys)
    if all(isinstance(item, dict) for item in data):
        keys = [key for key in data[0] if all(key in item and is_tensor(item[key]) for item in data)]
        if not keys:
            return data, []
        return _merged_lists(path, {}, {key: [item[key] for item in data] for key in keys}, None, choice,
                             label_keys)
    if all(is_tensor(item) for item in data):
        merged, notes = _merged_lists(path, {}, {"logits": list(data)}, None, choice)
        return merged["logits"], notes
    return data, []  # refused by the caller, naming what it is


def torch_structure(path: Path, data: Any, choice: str | None = None, *, label_keys: tuple[str, ...] = ()
                    ) -> tuple[dict[str, Any], list[str]]:
    """The named tensors of a loaded .pt file (`""` for one tensor of scores), and notes on how lists were joined.
    `choice`: --pt-items; `label_keys`: the spellings of labels (`formats.LABEL_KEYS`), which tell a tuple of model
    outputs under `predictions` from batches."""
    data = _scalars_as_tensors(data)
    notes: list[str] = []
    if isinstance(data, dict):
        data, notes = _model_output_tuples(path, data, label_keys)
    data, more = _merged_dict_or_list(path, data, choice, label_keys)
    if is_tensor(data):
        data = {"": data}
    if not isinstance(data, dict):
        count = f" of {len(data)} item(s)" if isinstance(data, (tuple, list)) else ""
        raise InputError(
            f"Expected {path} to hold a dict of tensors, a (logits, labels) pair or one tensor (or a list of "
            f"per-batch ones), got a {type(data).__name__}{count}."
        )
    return {str(key): value for key, value in data.items()}, notes + more
