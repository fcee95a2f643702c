"""Class names in column order from what a user hands to `--classes` — a comma list (`neg,pos`), a text file (one
name per line), a JSON list, or a Hugging Face `config.json` / model folder (its `id2label`) — and the `id2label` of
a model folder a predictions file sits in or beside (docs/inputs.md §8). Reading only: which names a file's labels
and columns take is `adacal.interpretation.class_names`'."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.text_tables import read_text

CONFIG_NAME = "config.json"


def id2label_names(config: Any, where: str) -> tuple[str, ...] | None:
    """The class names of a Hugging Face config (`id2label`: keys "0".."K-1", one name each, none repeated; a
    `label2id` beside it must be its inverse), or None when it has no `id2label`.

    >>> id2label_names({"id2label": {"1": "pos", "0": "neg"}, "label2id": {"neg": 0, "pos": 1}}, "config.json")
    ('neg', 'pos')
    """
    if not isinstance(config, dict) or "id2label" not in config:
        return None
    mapping = config["id2label"]
    if not isinstance(mapping, dict) or not mapping:
        raise InputError(f"Expected id2label in {where} to be an object of class names by index, got "
                         f"{type(mapping).__name__ if mapping else 'an empty one'}: fix it or pass --classes.")
    indices = {}
    for key, name in mapping.items():
        text = str(key).strip()
        if not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0"):
            raise InputError(f"Expected the keys of id2label in {where} to be class indices 0 to {len(mapping) - 1}, "
                             f"got {str(key)[:40]!r}: fix it or pass --classes.")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"Expected id2label[{key!r}] in {where} to be a class name, got {name!r}: fix it or "
                             "pass --classes.")
        indices[int(text)] = name.strip()
    k = len(indices)
    if sorted(indices) != list(range(k)):
        missing = next(i for i in range(k) if i not in indices)
        raise InputError(f"Expected the keys of id2label in {where} to be exactly 0 to {k - 1}, but {missing} is "
                         f"missing (it has {', '.join(map(str, sorted(indices)[:8]))}): fix it or pass --classes.")
    names = tuple(indices[i] for i in range(k))
    if len(set(names)) != k:
        twice = next(name for name in names if names.count(name) > 1)
        raise InputError(f"Expected id2label in {where} to name each class once, but {twice[:40]!r} is given "
                         "twice: fix it or pass --classes.")
    label2id = config.get("label2id")
    if label2id is not None:
        inverse = {name: i for i, name in enumerate(names)}
        if not isinstance(label2id, dict) or {str(name).strip(): value for name, value in label2id.items()} != inverse:
            raise InputError(f"Expected label2id in {where} to be the inverse of its id2label "
                             f"({', '.join(f'{name}: {i}' for name, i in list(inverse.items())[:4])}"
                             f"{', ...' if k > 4 else ''}), but it is not: fix it or pass --classes.")
    return names


def _config_names(path: Path) -> tuple[str, ...]:
    document = parse_json(read_text(path, f"a model config ({path.name})"), label=str(path))
    names = id2label_names(document, str(path))
    if names is None:
        raise InputError(f"Expected {path} to hold id2label (a Hugging Face model config) for --classes, but it "
                         "has none.")
    return names


def _checked(names: list[str], where: str) -> tuple[str, ...]:
    names = [name.strip() for name in names]
    if len(names) < 2:
        raise InputError(f"Expected --classes to name at least 2 classes, got {len(names)} ({where}).")
    if not all(names):
        raise InputError(f"Expected --classes to hold no empty name, got one ({where}).")
    if len(set(names)) != len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise InputError(f"Expected --classes to name each class once, but {twice[:40]!r} is given twice ({where}).")
    return tuple(names)


def checked_class_names(names: Any) -> tuple[str, ...]:
    """Class names given in Python (`ReadOptions(classes=("neg", "pos"))`): at least 2 strings, none empty or
    repeated.

    >>> checked_class_names(["neg", "pos"])
    ('neg', 'pos')
    """
    if isinstance(names, (str, bytes)) or not all(isinstance(name, str) for name in names):
        raise InputError(f"Expected classes to be class names (strings), got {names!r}.")
    return _checked(list(names), "classes")


def read_class_names(spec: str) -> tuple[tuple[str, ...], str]:
    """The class names `--classes` gives, in column order, and where they came from: an existing folder (its
    config.json's id2label) or file (a .json list or config, else one name per line), else a comma list.

    >>> read_class_names("neg, pos")
    (('neg', 'pos'), '--classes')
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"Expected --classes to be names (neg,pos), a file of names or a model folder, got {spec!r}.")
    path = Path(spec)
    if os.path.isdir(path):
        config = path / CONFIG_NAME
        if not config.is_file():
            raise InputError(f"Expected the model folder {path} (--classes) to hold {CONFIG_NAME} with id2label, but "
                             "it has none.")
        return _config_names(config), f"{config} (id2label)"
    if os.path.isfile(path):
        text = read_text(path, "a file of class names (--classes)")
        if path.suffix.lower() == ".json":
            document = parse_json(text, label=str(path))
            if isinstance(document, dict):
                names = id2label_names(document, str(path))
                if names is None:
                    raise InputError(f"Expected {path} (--classes) to be a JSON list of names or a config with "
                                     "id2label, got an object without id2label.")
                return names, f"{path} (id2label)"
            if not isinstance(document, list) or not all(isinstance(name, str) for name in document):
                raise InputError(f"Expected {path} (--classes) to be a JSON list of class names, got "
                                 f"{type(document).__name__}" + (" holding non-strings" if isinstance(document, list)
                                                                 else "") + ".")
            return _checked(document, str(path)), str(path)
        lines = [line.strip() for line in text.split("\n")]
        return _checked([line for line in lines if line], str(path)), str(path)
    if "," not in spec:
        raise InputError(f"Expected --classes to be names separated by commas (neg,pos), a file of names or a model "
                         f"folder, got {spec[:60]!r}, which is no file or folder.")
    return _checked(spec.split(","), "--classes"), "--classes"


def model_folder_names(path: str | os.PathLike) -> tuple[tuple[str, ...], Path] | None:
    """The id2label names of the model folder a predictions file sits in (a config.json beside it) or beside (one
    sub-folder of its folder holding a config.json with id2label), and that config's path; None when there is none.
    Sub-folders naming different classes are refused: --classes chooses."""
    folder = Path(path).parent
    own = folder / CONFIG_NAME
    if own.is_file():
        names = _optional(own)
        if names is not None:
            return names, own
    found: dict[tuple[str, ...], Path] = {}
    try:
        children = sorted(child for child in folder.iterdir() if child.is_dir())
    except OSError:
        return None
    for child in children[:256]:
        config = child / CONFIG_NAME
        if config.is_file():
            try:
                document = parse_json(read_text(config, f"a model config ({config.name})"), label=str(config))
            except InputError:
                continue  # (no JSON: no model folder's config; one the file sits in is read strictly)
            names = id2label_names(document, str(config))
            if names is not None:
                found.setdefault(names, config)
    if len(found) > 1:
        shown = ", ".join(str(config.parent.name) for config in list(found.values())[:4])
        raise InputError(f"Expected one model folder beside {Path(path).name} to name its classes, but {shown} name "
                         "different ones (id2label): pass --classes (names or the model folder).")
    return next(iter(found.items()), None)


def _optional(config: Path) -> tuple[str, ...] | None:
    """A config's id2label names, or None when it is no Hugging Face config (an adacal run's config.json)."""
    document = parse_json(read_text(config, f"a model config ({config.name})"), label=str(config))
    return id2label_names(document, str(config))


__all__ = ["CONFIG_NAME", "checked_class_names", "id2label_names", "model_folder_names", "read_class_names"]
