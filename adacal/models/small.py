"""Small CPU-friendly models: an MLP for feature vectors and the global-pooling text CNN (Kim 2014 style)."""

from __future__ import annotations

import gzip
import math
import numbers
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from adacal.errors import InputError


# Option checks for the layer constructors: a wrong type raises TypeError and a wrong value ValueError, which
# `build_model` turns into one sentence naming the model and its options. Without them int() truncated 64.7 to 64,
# read "345" as kernel sizes 3, 4, 5, and built layers of zero filters that failed only in the first forward pass.


def integer_option(name: str, value: object, *, minimum: int) -> int:
    """`value` as an int (Python or numpy integer, not bool) of at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def integer_list_option(name: str, values: object, *, minimum: int) -> list[int]:
    """A sequence of integers (a list or tuple; not a string, not a single number)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a list of integers, got {values!r}")
    return [integer_option(name, v, minimum=minimum) for v in values]


def dropout_option(value: object) -> float:
    """A dropout probability in [0, 1); a string or bool is a TypeError, NaN or a value outside an InputError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"dropout must be a number in [0, 1), got {value!r}")
    if not 0 <= value < 1:
        raise InputError(f"Expected dropout in [0, 1), got {value}.")
    return float(value)


class MLP(nn.Module):
    """Flatten → [Linear → ReLU (→ Dropout)] per hidden width → Linear to num_classes."""

    def __init__(self, in_features: int, hidden: Sequence[int], *, num_classes: int, dropout: float = 0.0) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(inplace=True)]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = size
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class TextCNN(nn.Module):
    """Token ids (N, L) int64 → embedding (padding_idx 0) → parallel Conv1d (kernel sizes k, `num_filters` each)
    → ReLU → max over time → concat → dropout → linear."""

    def __init__(
        self,
        vocab_size: int,
        *,
        num_classes: int,
        embedding_dim: int = 100,
        kernel_sizes: Sequence[int] = (3, 4, 5),
        num_filters: int = 100,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(embedding_dim, num_filters, k) for k in kernel_sizes)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(num_filters * len(kernel_sizes), num_classes)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(token_ids.long()).transpose(1, 2)  # (N, E, L)
        pooled = [F.relu(conv(embedded)).amax(dim=2) for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


_FLOAT32_MAX = 3.4028234663852886e38


def read_glove(
    path: str | os.PathLike, vocab: Sequence[str], *, embedding_dim: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Vectors for `vocab` from a GloVe text file ('word v1 v2 ...' per line, optionally .gz; word2vec's text format,
    whose first line is '<words> <dimension>', too).

    Returns (vectors float32 (len(vocab), dim), found bool (len(vocab),)); rows of words not in the file are zero.
    The dimension is the file's; when `embedding_dim` is given it must match.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"Expected a GloVe embeddings text file at {path}, but it does not exist.")
    index = {word: i for i, word in enumerate(vocab)}
    vectors: torch.Tensor | None = None
    found = torch.zeros(len(vocab), dtype=torch.bool)
    dim = embedding_dim
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                word, _, rest = line.rstrip("\n").partition(" ")
                if not rest:
                    continue
                if number == 1 and word.isdigit() and rest.strip().isdigit():
                    continue  # word2vec's text format starts with "<words> <dimension>": a header, not a word
                if dim is None:
                    dim = len(rest.split())
                row = index.get(word)
                if row is None or found[row]:
                    continue
                values = rest.split()
                if len(values) != dim:
                    raise InputError(
                        f"Expected {dim} numbers per word in {path} (the embedding dimension), "
                        f"got {len(values)} on line {number}."
                    )
                if vectors is None:
                    vectors = torch.zeros(len(vocab), dim)
                try:
                    numbers = [float(v) for v in values]
                except ValueError:
                    raise InputError(f"Expected numbers after the word on line {number} of {path}.") from None
                if not all(math.isfinite(v) and abs(v) <= _FLOAT32_MAX for v in numbers):
                    # NaN, Inf or beyond float32 would only surface later as a NaN loss blamed on the learning rate.
                    raise InputError(f"Expected finite numbers (within float32's range) after the word on line "
                                     f"{number} of {path}, got NaN, Inf or an overflowing value.")
                vectors[row] = torch.tensor(numbers)
                found[row] = True
    except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged .gz stream
        problem = "damaged compressed data" if isinstance(exc, zlib.error) else exc.__class__.__name__
        raise InputError(f"Cannot read the embeddings file {path} ({problem}).") from None
    if dim is None:
        raise InputError(f"Expected word vectors in {path}, found none.")
    if vectors is None:
        vectors = torch.zeros(len(vocab), dim)
    return vectors, found


def build_text_cnn(
    *,
    num_classes: int,
    seq_length: int,
    vocab_size: int | None,
    embedding_dim: int | None,
    kernel_sizes: Sequence[int],
    num_filters: int,
    dropout: float,
    embeddings: str | os.PathLike | None,
    vocab: Sequence[str] | None,
    freeze_embeddings: bool,
) -> TextCNN:
    if vocab_size is None:
        raise InputError("Expected option vocab_size for model 'textcnn' (the dataset's extra['vocab_size']), got "
                         "none.")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral) or vocab_size < 2:
        raise InputError(f"Expected vocab_size to be an integer of at least 2, got {vocab_size!r}.")
    vocab_size = int(vocab_size)
    sizes = integer_list_option("kernel_sizes", kernel_sizes, minimum=1)
    if not sizes:
        raise InputError(f"Expected kernel_sizes to be positive integers, got {list(kernel_sizes)}.")
    num_filters = integer_option("num_filters", num_filters, minimum=1)
    if embedding_dim is not None:
        embedding_dim = integer_option("embedding_dim", embedding_dim, minimum=1)
    if not isinstance(freeze_embeddings, bool):
        raise TypeError(f"freeze_embeddings must be true or false, got {freeze_embeddings!r}")
    if max(sizes) > seq_length:
        raise InputError(
            f"Expected sequences at least as long as the largest kernel ({max(sizes)}), got input length {seq_length}."
        )
    dropout = dropout_option(dropout)
    vectors = found = None
    if embeddings is not None:
        if vocab is None:
            raise InputError("Expected option vocab (the dataset's extra['vocab']) with embeddings, got none.")
        if len(vocab) != vocab_size:
            raise InputError(f"Expected vocab to have vocab_size = {vocab_size} words, got {len(vocab)}.")
        vectors, found = read_glove(embeddings, vocab, embedding_dim=embedding_dim)
        embedding_dim = vectors.shape[1]
    embedding_dim = 100 if embedding_dim is None else int(embedding_dim)
    if embedding_dim < 1:
        raise InputError(f"Expected embedding_dim to be a positive integer, got {embedding_dim}.")
    model = TextCNN(
        vocab_size, num_classes=num_classes, embedding_dim=embedding_dim, kernel_sizes=sizes,
        num_filters=int(num_filters), dropout=float(dropout),
    )
    if vectors is not None:
        with torch.no_grad():
            weight = model.embedding.weight
            weight[found] = vectors[found]
            weight[0].zero_()  # padding stays zero
        model.embedding_coverage = float(found[2:].float().mean()) if vocab_size > 2 else 0.0
        if freeze_embeddings:
            model.embedding.weight.requires_grad_(False)
    return model
