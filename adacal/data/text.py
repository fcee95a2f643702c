"""20 Newsgroups as padded token-id sequences for a global-pooling text CNN.

Source: `<data-dir>/20newsgroups.jsonl.gz` (one JSON object per line with split "train"/"test", label 0..19, group,
text), else scikit-learn's `fetch_20newsgroups` (the same "bydate" split; it downloads only when `download=True`).

Split: the bydate training set (11,314) less a seeded random 900 for validation → 10,414 / 900 / 7,532 (bydate test).
The paper reports 15,098 / 900 / 3,999 because its reference code pools the original (non-bydate) 19,997 posts and
holds out 20% as test; that collection is not the one shipped here, so the sizes differ.

Preprocessing (as the reference does, in spirit): headers are stripped by default (text after the first blank line;
`strip_headers=False` keeps them), text is lowercased and split into words with a regex; the vocabulary is built
from the training split only (not val or test): words seen at least `min_count` times (2), the `max_vocab` (30,000)
most frequent, ties broken alphabetically. Id 0 is padding, 1 unknown. Sequences keep their first `max_length` (400)
tokens and are padded with 0 at the end: int64 (N, max_length).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.data.base import (
    data_location_hint,
    DATASETS,
    Dataset,
    Split,
    check_data_file,
    check_int,
    folders_removed_on_failure,
    shuffled_split,
    split_record,
)
from adacal.errors import DataUnavailableError, InputError

PAD_ID = 0
UNKNOWN_ID = 1
PAD_TOKEN = "<pad>"
UNKNOWN_TOKEN = "<unk>"
TOKEN_PATTERN = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
FILE_NAME = "20newsgroups.jsonl.gz"
NEWSGROUPS_VAL_SIZE = 900


def tokenize(text: str) -> list[str]:
    """Lowercase words: runs of letters and digits, keeping inner apostrophes ("don't")."""
    return TOKEN_PATTERN.findall(text.lower())


def strip_header(text: str) -> str:
    """The body of a news post: everything after the first blank line (the whole text when there is none)."""
    cut = text.find("\n\n")
    return text[cut + 2 :] if cut >= 0 else text


def build_vocab(token_lists: Iterable[Sequence[str]], *, min_count: int = 2, max_vocab: int = 30000) -> list[str]:
    """[PAD, UNK, words...] — words with count >= min_count, most frequent first (ties alphabetical), max_vocab in
    all."""
    counts = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD_TOKEN, UNKNOWN_TOKEN, *words[: max(0, max_vocab - 2)]]


def encode(token_lists: Sequence[Sequence[str]], vocab: Sequence[str], *, max_length: int) -> torch.Tensor:
    """int64 (N, max_length): first max_length token ids, unknown words → 1, padded with 0 at the end."""
    index = {word: i for i, word in enumerate(vocab)}
    ids = np.zeros((len(token_lists), max_length), dtype=np.int64)
    for row, tokens in enumerate(token_lists):
        seq = [index.get(token, UNKNOWN_ID) for token in tokens[:max_length]]
        ids[row, : len(seq)] = seq
    return torch.from_numpy(ids)


# The newsgroups of the corpus: labels of the prepared file are their indices (docs/data.md).
NEWSGROUPS_CLASSES = 20


def read_newsgroups_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records {split, label, group, text} from the shared JSON-lines file; a malformed line is an InputError."""
    records = []
    try:
        with gzip.open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    # utf-8-sig on the first line: a byte-order mark (Windows editors write one) is not part of the
                    # JSON.
                    line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"Expected {path} to be UTF-8 text, but line {number} holds the byte "
                        f"{raw[exc.start:exc.start + 1]!r}, which is not (save the file as UTF-8; json.dumps writes "
                        "it)."
                    ) from None
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    raise InputError(f"Expected line {number} of {path} to be a JSON object, got invalid "
                                     "JSON.") from None
                if not isinstance(record, dict) or not {"split", "label", "text"} <= set(record):
                    raise InputError(f"Expected line {number} of {path} to have keys split, label, text (and group).")
                if record["split"] not in ("train", "test"):
                    raise InputError(f"Expected 'split' on line {number} of {path} to be train or test, got "
                                     f"{record['split']!r}.")
                label = record["label"]
                if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < NEWSGROUPS_CLASSES:
                    raise InputError(f"Expected 'label' on line {number} of {path} to be a class index in [0, "
                                     f"{NEWSGROUPS_CLASSES - 1}] (one of the 20 newsgroups), got {label!r}.")
                if not isinstance(record["text"], str):
                    raise InputError(f"Expected 'text' on line {number} of {path} to be a string.")
                records.append(record)
    except (OSError, EOFError, zlib.error) as exc:
        problem = "damaged compressed data" if isinstance(exc, zlib.error) else exc.__class__.__name__
        raise InputError(f"Cannot read {path} as gzip-compressed JSON lines ({problem}).") from None
    if not records:
        raise InputError(f"Expected {path} to hold at least one record, found none.")
    return records


def _fetch_sklearn(data_dir: Path, *, download: bool) -> list[dict[str, Any]]:
    from sklearn.datasets import fetch_20newsgroups

    records = []
    for subset in ("train", "test"):
        bunch = fetch_20newsgroups(
            subset=subset, data_home=str(data_dir / "scikit_learn_data"), download_if_missing=download, shuffle=False
        )
        for text, label in zip(bunch.data, bunch.target):
            records.append({"split": subset, "label": int(label), "group": bunch.target_names[label], "text": text})
    return records


def load_newsgroup_records(data_dir: Path, *, download: bool) -> tuple[list[dict[str, Any]], str]:
    path = data_dir / FILE_NAME
    check_data_file(path, f"{FILE_NAME} (JSON lines with split, label, group, text)")
    if path.is_file():
        return read_newsgroups_jsonl(path), str(path)
    hint = (
        f"Put {FILE_NAME} (JSON lines with split, label, group, text) in {data_dir}, "
        f"{data_location_hint()}."
    )
    try:
        # scikit-learn makes <data_dir>/scikit_learn_data/20news_home before it downloads: gone again on failure.
        with folders_removed_on_failure(data_dir / "scikit_learn_data" / "20news_home"):
            return _fetch_sklearn(data_dir, download=download), "sklearn.datasets.fetch_20newsgroups"
    except (OSError, RuntimeError) as exc:  # URLError is an OSError; sklearn offline without a cache is an OSError
        if not download:
            raise DataUnavailableError(f"20 Newsgroups is not in {data_dir} and download is off. {hint}") from None
        reason = " ".join(f"{exc.__class__.__name__}: {exc}".split())
        raise DataUnavailableError(f"Could not download 20 Newsgroups into {data_dir} ({reason}). {hint}") from None


@DATASETS.register("20newsgroups")
def load_20newsgroups(
    *,
    data_dir: Path,
    seed: int = 0,
    train_subset: int | None = None,
    download: bool = True,
    val_size: int | None = None,
    max_length: int = 400,
    max_vocab: int = 30000,
    min_count: int = 2,
    strip_headers: bool = True,
) -> Dataset:
    """20 Newsgroups (bydate) as int64 token ids (see the module docstring for split and preprocessing)."""
    check_int("max_length", max_length, minimum=1)
    check_int("max_vocab", max_vocab, minimum=3)
    check_int("min_count", min_count, minimum=1)
    if not isinstance(strip_headers, (bool, np.bool_)):
        raise InputError(f"Expected strip_headers to be true or false, got {strip_headers!r}.")
    records, source = load_newsgroup_records(data_dir, download=download)
    train_records = [r for r in records if r["split"] == "train"]
    test_records = [r for r in records if r["split"] == "test"]
    if not train_records or not test_records:
        raise InputError(f"Expected both train and test records in {source}, got {len(train_records)} and "
                         f"{len(test_records)}.")
    labels_all = sorted({r["label"] for r in records})
    num_classes = labels_all[-1] + 1
    names: dict[int, str] = {}
    for record in records:  # the first name given for a label; a missing, null, empty or non-text group names nothing
        group = record.get("group")
        if isinstance(group, str) and group.strip():
            names.setdefault(record["label"], group.strip())
    classes = [names.get(k, str(k)) for k in range(num_classes)]

    if val_size is None:
        val_size = min(NEWSGROUPS_VAL_SIZE, len(train_records) // 10 or 1)
    train_idx, val_idx = shuffled_split(
        len(train_records), val_size=val_size, seed=seed, train_subset=train_subset, what="20newsgroups"
    )

    def tokens_of(record: dict[str, Any]) -> list[str]:
        return tokenize(strip_header(record["text"]) if strip_headers else record["text"])

    train_tokens_all = [tokens_of(r) for r in train_records]
    test_tokens = [tokens_of(r) for r in test_records]
    train_tokens = [train_tokens_all[i] for i in train_idx]
    val_tokens = [train_tokens_all[i] for i in val_idx]
    if not any(train_tokens):
        # Every input would be padding: a model could only learn the class frequencies, and would say nothing.
        stripped = " after their headers were stripped (strip_headers=False keeps them)" if strip_headers else ""
        raise InputError(f"Expected words in the training texts of {source}, got none{stripped}.")
    vocab = build_vocab(train_tokens, min_count=min_count, max_vocab=max_vocab)
    train_labels = np.asarray([r["label"] for r in train_records], dtype=np.int64)
    test_labels = np.asarray([r["label"] for r in test_records], dtype=np.int64)

    def split(tokens: list[list[str]], labels: np.ndarray) -> Split:
        return Split(encode(tokens, vocab, max_length=max_length), torch.from_numpy(np.ascontiguousarray(labels)))

    train = split(train_tokens, train_labels[train_idx])
    val = split(val_tokens, train_labels[val_idx])
    test = split(test_tokens, test_labels)
    return Dataset(
        name="20newsgroups",
        kind="text",
        num_classes=num_classes,
        classes=classes,
        input_shape=(max_length,),
        train=train,
        val=val,
        test=test,
        split_info=split_record(
            source=source, seed=seed, val_size=val_size, train_subset=train_subset,
            train_pool=len(train_records) - int(val_size), train=train, val=val, test=test,
            method="bydate train shuffled with numpy default_rng(seed): first val_size -> val, the rest -> train "
            "(train_subset keeps its first N); bydate test -> test; vocabulary from the train split only",
            max_length=max_length,
            max_vocab=max_vocab,
            min_count=min_count,
            strip_headers=strip_headers,
            vocab_size=len(vocab),
        ),
        extra={"vocab_size": len(vocab), "vocab": vocab, "max_length": max_length, "pad_id": PAD_ID,
               "unknown_id": UNKNOWN_ID},
    )
