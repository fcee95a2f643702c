"""20 Newsgroups from a tiny JSON-lines file: split, vocabulary from train only, padding, truncation, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from adacal.data import build_vocab, encode, load_dataset, tokenize
from adacal.errors import DataUnavailableError, InputError

GROUPS = ["alt.atheism", "comp.graphics", "sci.space"]


def write_jsonl(path: Path, records) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def records():
    out = []
    for i in range(60):
        label = i % 3
        body = f"common words {GROUPS[label].split('.')[-1]} topic number{i % 5} again"
        out.append({"split": "train", "label": label, "group": GROUPS[label], "id": i,
                    "text": f"From: someone\nSubject: headerword\n\n{body}"})
    for i in range(15):
        out.append({"split": "test", "label": i % 3, "group": GROUPS[i % 3], "id": 100 + i,
                    "text": "Subject: x\n\ncommon testonlyword " + "space " * 30})
    return out


@pytest.fixture()
def news_dir(tmp_path):
    write_jsonl(tmp_path / "20newsgroups.jsonl.gz", records())
    return tmp_path


def test_tokenizer_and_vocab_helpers():
    assert tokenize("Hello, WORLD! don't  stop-42") == ["hello", "world", "don't", "stop", "42"]
    vocab = build_vocab([["b", "a", "a", "c"], ["b", "a", "d"]], min_count=2, max_vocab=10)
    assert vocab == ["<pad>", "<unk>", "a", "b"]
    assert build_vocab([["b", "a", "a"], ["b", "a"]], min_count=1, max_vocab=3) == ["<pad>", "<unk>", "a"]
    ids = encode([["a", "zzz"], ["b"] * 5], vocab, max_length=3)
    assert ids.dtype == torch.int64 and ids.tolist() == [[2, 1, 0], [3, 3, 3]]


def test_newsgroups_splits_vocab_and_encoding(news_dir):
    data = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, max_length=12, download=False)
    assert data.kind == "text" and data.num_classes == 3 and data.classes == GROUPS
    assert (len(data.train), len(data.val), len(data.test)) == (50, 10, 15)
    assert data.input_shape == (12,) and data.train.inputs.shape == (50, 12) and data.train.inputs.dtype == torch.int64
    vocab = data.extra["vocab"]
    assert data.extra["vocab_size"] == len(vocab) and vocab[:2] == ["<pad>", "<unk>"]
    assert "testonlyword" not in vocab and "headerword" not in vocab  # test words unseen; headers stripped
    assert "common" in vocab and "space" in vocab
    assert data.split_info["sizes"] == {"train": 50, "val": 10, "test": 15} and data.split_info["strip_headers"]
    # test docs: 'common' known, 'testonlyword' unknown (1), then 'space' until truncation at 12 tokens
    row = data.test.inputs[0].tolist()
    assert row[0] == vocab.index("common") and row[1] == 1 and len(row) == 12 and 0 not in row
    # train docs are shorter than 12 tokens: padded with 0 at the end
    assert (data.train.inputs[:, -1] == 0).all()


def test_newsgroups_vocab_ignores_validation_words(news_dir):
    data = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, min_count=1, download=False)
    # number0..number4 each occur 12 times in 60 docs; a word in val only would map to 1. Check vocab built from train:
    train_words = set()
    for text_ids in data.train.inputs.tolist():
        train_words |= {data.extra["vocab"][i] for i in text_ids if i > 1}
    assert set(data.extra["vocab"][2:]) == train_words


def test_newsgroups_determinism_and_seed(news_dir):
    a = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, seed=0, download=False)
    b = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, seed=0, download=False)
    c = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, seed=1, download=False)
    assert torch.equal(a.train.inputs, b.train.inputs) and torch.equal(a.val.labels, b.val.labels)
    assert not torch.equal(a.val.inputs, c.val.inputs)
    keep = load_dataset("20newsgroups", data_dir=news_dir, val_size=10, strip_headers=False, download=False)
    assert "headerword" in keep.extra["vocab"]


def test_newsgroups_missing_and_bad_files(tmp_path):
    with pytest.raises(DataUnavailableError, match=r"Put 20newsgroups\.jsonl\.gz .* in "):
        load_dataset("20newsgroups", data_dir=tmp_path, download=False)
    write_jsonl(tmp_path / "20newsgroups.jsonl.gz", [{"split": "dev", "label": 0, "text": "x"}])
    with pytest.raises(InputError, match="train or test"):
        load_dataset("20newsgroups", data_dir=tmp_path, download=False)
    (tmp_path / "20newsgroups.jsonl.gz").write_bytes(b"plain text, not gzip")
    with pytest.raises(InputError, match="gzip"):
        load_dataset("20newsgroups", data_dir=tmp_path, download=False)
    # Labels beyond the 20 groups (1-based, or another corpus) made phantom classes: refused
    write_jsonl(tmp_path / "20newsgroups.jsonl.gz", [{"split": "train", "label": 57, "text": "x"}])
    with pytest.raises(InputError, match=r"'label' on line 1 .* class index in \[0, 19\] .* got 57"):
        load_dataset("20newsgroups", data_dir=tmp_path, download=False)
    # A damaged deflate stream (zlib.error, not an OSError) raised a traceback
    records = [{"split": "train", "label": i % 20, "text": f"w{i} common words here"} for i in range(200)]
    write_jsonl(tmp_path / "20newsgroups.jsonl.gz", records)
    damaged = bytearray((tmp_path / "20newsgroups.jsonl.gz").read_bytes())
    for i in range(100, 140):
        damaged[i] ^= 0x5A
    (tmp_path / "20newsgroups.jsonl.gz").write_bytes(bytes(damaged))
    with pytest.raises(InputError, match="gzip-compressed JSON lines"):
        load_dataset("20newsgroups", data_dir=tmp_path, download=False)


@pytest.mark.slow  # tokenising the full corpus takes ~5 s of CPU
def test_real_newsgroups_sizes(real_data_file):
    data = load_dataset("20newsgroups", data_dir=real_data_file("20newsgroups.jsonl.gz").parent, max_length=50,
                        download=False)
    assert (len(data.train), len(data.val), len(data.test)) == (10414, 900, 7532)
    assert data.num_classes == 20 and data.classes[0] == "alt.atheism" and data.extra["vocab_size"] == 30000


def test_a_failed_download_leaves_nothing_in_an_existing_data_folder(tmp_path, monkeypatch):
    """scikit-learn creates scikit_learn_data/20news_home before it downloads; a failure left it in the user's
    folder."""
    import sklearn.datasets

    from adacal.errors import DataUnavailableError

    def failing_fetch(*, data_home, **_):
        (Path(data_home) / "20news_home").mkdir(parents=True)
        raise OSError("no network")

    monkeypatch.setattr(sklearn.datasets, "fetch_20newsgroups", failing_fetch)
    with pytest.raises(DataUnavailableError, match="Could not download 20 Newsgroups"):
        load_dataset("20newsgroups", data_dir=tmp_path, download=True)
    assert list(tmp_path.iterdir()) == []
