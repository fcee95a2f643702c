"""Models by name: `build_model(name, num_classes=..., input_shape=..., **options)` over the MODELS registry.

Every factory takes keyword-only `num_classes` and `input_shape` (per sample: (C, H, W) images, (D,) feature vectors,
(L,) token ids) plus its own options; `build_model` checks the name, the shape family and the options before building.
"""

from __future__ import annotations

import difflib
import numbers
import operator
from collections.abc import Sequence
from typing import Any

from torch import nn

from adacal.errors import InputError, UnknownNameError, unknown_name
from adacal.models.densenet import DenseNet
from adacal.models.resnet import Bottleneck, CifarResNet, KuangliuResNet
from adacal.models.small import MLP, build_text_cnn, dropout_option, integer_list_option
from adacal.models.wide_resnet import WideResNet
from adacal.registry import Registry

MODELS: Registry[nn.Module] = Registry("model")

TORCHVISION_PREFIX = "torchvision:"

# What each registered model reads: "image" (C, H, W) uint8-derived floats, "vector" (D,), "text" (L,) token ids.
MODEL_INPUT_KINDS: dict[str, str] = {}

# Options that only shape initialisation: the weights carry their effect, so drop them to rebuild from a checkpoint.
INIT_ONLY_OPTIONS = ("embeddings", "vocab")

MIN_IMAGE_SIDE = 8

_DEFAULT_MODELS = {
    "digits": "mlp",
    # The paper trains ResNet-50 (and ResNet-110, WRN-26-10, DenseNet-121) on these; resnet20 is the CPU default.
    "cifar10": "resnet20",
    "cifar100": "resnet20",
    "svhn": "resnet20",
    "20newsgroups": "textcnn",
    "tiny-imagenet": "torchvision:resnet50",
    "imagenet": "torchvision:resnet50",
}


def _register(name: str, kind: str):
    MODEL_INPUT_KINDS[name] = kind
    return MODELS.register(name)


def _image_channels(input_shape: tuple[int, ...]) -> int:
    return int(input_shape[0])


@_register("resnet20", "image")
def resnet20(*, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """He et al. CIFAR ResNet-20 (0.27M parameters): the fast CPU default for 32x32 images."""
    return CifarResNet(20, num_classes=num_classes, in_channels=_image_channels(input_shape))


@_register("resnet110", "image")
def resnet110(*, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """He et al. CIFAR ResNet-110 (1.7M parameters). See resnet110-bottleneck for the reference code's 'resnet110'."""
    return CifarResNet(110, num_classes=num_classes, in_channels=_image_channels(input_shape))


@_register("resnet50", "image")
def resnet50(*, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """CIFAR ResNet-50 (kuangliu form, 23.5M parameters): the paper's main model."""
    return KuangliuResNet(Bottleneck, [3, 4, 6, 3], num_classes=num_classes, in_channels=_image_channels(input_shape))


@_register("resnet110-bottleneck", "image")
def resnet110_bottleneck(*, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """The AdaFocal / focal_calibration reference code's 'resnet110': Bottleneck [3, 4, 26, 3], 45.9M parameters."""
    return KuangliuResNet(Bottleneck, [3, 4, 26, 3], num_classes=num_classes, in_channels=_image_channels(input_shape))


@_register("wrn-26-10", "image")
def wrn_26_10(*, num_classes: int, input_shape: tuple[int, ...], dropout: float = 0.0) -> nn.Module:
    """Wide-ResNet-26-10 as in the reference code (36.5M parameters); `dropout` inside blocks, 0 by default."""
    dropout = dropout_option(dropout)
    return WideResNet(26, 10, num_classes=num_classes, in_channels=_image_channels(input_shape), dropout=dropout)


@_register("densenet121", "image")
def densenet121(*, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """CIFAR DenseNet-121 (growth 32, blocks [6, 12, 24, 16]; 7.0M parameters)."""
    return DenseNet((6, 12, 24, 16), growth_rate=32, num_classes=num_classes, in_channels=_image_channels(input_shape))


@_register("mlp", "vector")
def mlp(
    *, num_classes: int, input_shape: tuple[int, ...], hidden: Sequence[int] = (128, 128), dropout: float = 0.0
) -> nn.Module:
    """Multi-layer perceptron on feature vectors (D,): ReLU hidden layers of widths `hidden`."""
    widths = integer_list_option("hidden", hidden, minimum=-(2**63))
    if any(h < 1 for h in widths):
        raise InputError(f"Expected hidden layer widths to be positive integers, got {list(hidden)}.")
    dropout = dropout_option(dropout)
    return MLP(int(input_shape[0]), widths, num_classes=num_classes, dropout=dropout)


@_register("textcnn", "text")
def textcnn(
    *,
    num_classes: int,
    input_shape: tuple[int, ...],
    vocab_size: int | None = None,
    embedding_dim: int | None = None,
    kernel_sizes: Sequence[int] = (3, 4, 5),
    num_filters: int = 100,
    dropout: float = 0.5,
    embeddings: str | None = None,
    vocab: Sequence[str] | None = None,
    freeze_embeddings: bool = False,
) -> nn.Module:
    """Global-pooling text CNN on token ids (L,): embedding (dim 100, or the GloVe file's), Conv1d 3/4/5 x 100, max
    over time, dropout 0.5, linear. `embeddings` = a GloVe text file initialises the rows of `vocab` words it has
    (needs `vocab`, the dataset's extra['vocab']); by default embeddings are trained from scratch."""
    return build_text_cnn(
        num_classes=num_classes, seq_length=int(input_shape[0]), vocab_size=vocab_size, embedding_dim=embedding_dim,
        kernel_sizes=kernel_sizes, num_filters=num_filters, dropout=dropout, embeddings=embeddings, vocab=vocab,
        freeze_embeddings=freeze_embeddings,
    )


# ---------------------------------------------------------------------------------------------------- public API


def model_names(*, include_torchvision: bool = False) -> list[str]:
    """Registered names; with include_torchvision, also 'torchvision:<name>' for every torchvision classifier."""
    names = MODELS.names()
    if include_torchvision:
        names += [TORCHVISION_PREFIX + n for n in torchvision_model_names()]
    return names


def torchvision_model_names() -> list[str]:
    """The torchvision classification models `build_model("torchvision:<name>")` can build, sorted."""
    import torchvision.models

    return sorted(torchvision.models.list_models(module=torchvision.models))


def default_model(dataset_name: str) -> str:
    """The model a dataset trains with when none is named (CPU-friendly; the paper used resnet50 on CIFAR)."""
    key = str(dataset_name).lower()
    if key not in _DEFAULT_MODELS:
        raise unknown_name("dataset", str(dataset_name), _DEFAULT_MODELS)
    return _DEFAULT_MODELS[key]


def model_input_kind(name: str) -> str:
    """'image', 'vector' or 'text': what the model named `name` reads."""
    key = str(name).lower()
    if key.startswith(TORCHVISION_PREFIX):
        return "image"
    if key not in MODEL_INPUT_KINDS:
        raise _unknown_model(key)
    return MODEL_INPUT_KINDS[key]


def check_input_shape(name: str, input_shape: Sequence[int], *, kind: str | None = None) -> tuple[int, ...]:
    """Check that the model named `name` can read samples of `input_shape` (and of data `kind`, when given).

    Returns the shape as a tuple of ints; raises a one-sentence InputError otherwise, e.g. "Model 'mlp' reads
    feature vectors of shape (D,), got input shape (3, 32, 32)."
    """
    expected = model_input_kind(name)
    shape = _as_shape(input_shape)
    if kind is not None and kind != expected:
        raise InputError(f"Model '{name}' reads {_KIND_WORDS[expected]}, but the dataset holds "
                         f"{_KIND_WORDS.get(kind, kind)}.")
    if expected == "image":
        if len(shape) != 3:
            raise InputError(f"Model '{name}' reads images of shape (C, H, W), got input shape {shape}.")
        channels, height, width = shape
        if str(name).lower().startswith(TORCHVISION_PREFIX) and channels != 3:
            raise InputError(f"Model '{name}' reads RGB images (3, H, W), got input shape {shape}.")
        if min(height, width) < MIN_IMAGE_SIDE:
            raise InputError(f"Model '{name}' needs images of at least {MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE}, got input "
                             f"shape {shape}.")
    elif expected == "vector" and len(shape) != 1:
        raise InputError(f"Model '{name}' reads feature vectors of shape (D,), got input shape {shape}.")
    elif expected == "text" and len(shape) != 1:
        raise InputError(f"Model '{name}' reads token-id sequences of shape (L,), got input shape {shape}.")
    return shape


def build_model(name: str, *, num_classes: int, input_shape: Sequence[int], **options: Any) -> nn.Module:
    """Build the model `name` for `num_classes` classes and per-sample `input_shape`.

    Names: resnet20, resnet110, resnet50, resnet110-bottleneck, wrn-26-10, densenet121 (32x32 CIFAR forms), mlp,
    textcnn, and 'torchvision:<name>' for any torchvision classifier (weights=None; options go to
    torchvision.models.get_model). The result records `adacal_model_name` and `adacal_input_shape`, which
    `check_model_input` compares against data later.
    """
    key = str(name).lower()
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 2:
        raise InputError(f"Expected num_classes to be an integer of at least 2, got {num_classes!r}.")
    num_classes = int(num_classes)  # a numpy integer (a dataset's label count) builds the same model
    if not key.startswith(TORCHVISION_PREFIX) and key not in MODELS:
        raise _unknown_model(key)
    shape = check_input_shape(key, input_shape)
    try:
        if key.startswith(TORCHVISION_PREFIX):
            model = _build_torchvision(key[len(TORCHVISION_PREFIX) :], num_classes=num_classes, **options)
        else:
            model = MODELS.build(key, num_classes=num_classes, input_shape=shape, **options)
    except InputError:  # (a ValueError too) an option the factory does not take, already named
        raise
    except (TypeError, ValueError, OverflowError, RuntimeError, MemoryError) as exc:
        # Option values of the wrong type or range reach layer constructors ("abc" hidden sizes, negative filter
        # counts, a size no memory holds): one sentence naming the model and what it was given.
        reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        given = ", ".join(f"{k}={v!r}" for k, v in options.items() if k not in INIT_ONLY_OPTIONS) or "no options"
        raise InputError(f"Expected options that build model {key} for {num_classes} classes and inputs of shape "
                         f"{shape}, got {given}, which fail ({reason[:160]}).") from None
    model.adacal_model_name = key
    model.adacal_input_shape = shape
    return model


def check_model_input(model: nn.Module, input_shape: Sequence[int]) -> None:
    """Raise InputError when data of per-sample `input_shape` does not fit the shape `model` was built for."""
    built = getattr(model, "adacal_input_shape", None)
    shape = _as_shape(input_shape)
    if built is None:
        return
    name = getattr(model, "adacal_model_name", type(model).__name__)
    kind = model_input_kind(name)
    fits = shape == built if kind != "image" else shape[0] == built[0] and len(shape) == 3
    if not fits:
        raise InputError(f"Model '{name}' was built for inputs of shape {built}, got inputs of shape {shape}.")


def rebuild_options(options: dict[str, Any], model: nn.Module | None = None) -> dict[str, Any]:
    """Options to rebuild a model whose weights come from a checkpoint: init-only ones (GloVe file, vocab) dropped.

    Pass the built `model` to keep what an init-only option decided: a textcnn whose embeddings came from a GloVe
    file has that file's embedding_dim, which the rebuilt model needs.
    """
    kept = {k: v for k, v in options.items() if k not in INIT_ONLY_OPTIONS}
    embedding = getattr(model, "embedding", None)
    if options.get("embeddings") is not None and isinstance(embedding, nn.Embedding):
        kept.setdefault("embedding_dim", int(embedding.embedding_dim))
    return kept


def model_options_for_dataset(name: str, dataset: Any, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """`options` completed with what the model needs from the dataset (textcnn: vocab_size; vocab with embeddings)."""
    merged = dict(options or {})
    if str(name).lower() == "textcnn":
        extra = getattr(dataset, "extra", {}) or {}
        merged.setdefault("vocab_size", extra.get("vocab_size"))
        if merged.get("embeddings") is not None and "vocab" not in merged:
            merged["vocab"] = extra.get("vocab")
    return merged


def count_parameters(model: nn.Module, *, trainable_only: bool = False) -> int:
    """The number of parameters of `model` (only those that require gradients with `trainable_only`)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


# ---------------------------------------------------------------------------------------------------------- helpers

_KIND_WORDS = {"image": "images (C, H, W)", "vector": "feature vectors (D,)", "text": "token-id sequences (L,)"}


def _as_shape(input_shape: Sequence[int]) -> tuple[int, ...]:
    # Integers only: int() read (5.5,) as (5,) and the string "64" as the shape (6, 4).
    if isinstance(input_shape, (str, bytes)) or not hasattr(input_shape, "__iter__"):
        raise InputError(f"Expected input_shape to be a tuple of positive integers, got {input_shape!r}.")
    try:
        if any(isinstance(v, bool) for v in input_shape):
            raise TypeError
        shape = tuple(operator.index(v) for v in input_shape)  # ints, numpy and 0-d tensor integers; not floats
    except TypeError:
        raise InputError(f"Expected input_shape to be a tuple of positive integers, got {input_shape!r}.") from None
    if not shape or min(shape) < 1:
        raise InputError(f"Expected input_shape to be a tuple of positive integers, got {input_shape!r}.")
    return shape


def _unknown_model(key: str) -> UnknownNameError:
    error = unknown_name("model", key, MODELS.names())
    return UnknownNameError(f"{error} Any torchvision classifier works as torchvision:<name>.")


_AUX_LOGIT_MODELS = ("googlenet", "inception_v3")


def _build_torchvision(name: str, *, num_classes: int, **options: Any) -> nn.Module:
    import torchvision.models

    available = torchvision_model_names()
    if name not in available:
        suggestion = difflib.get_close_matches(name, available, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join('torchvision:' + s for s in suggestion)}?" if suggestion else ""
        raise UnknownNameError(
            f"Unknown torchvision model '{name}'.{hint} See torchvision.models.list_models() for the {len(available)} "
            "names."
        )
    if "weights" in options and options["weights"] is not None:
        raise InputError("Expected no pretrained weights for torchvision models (adacal trains from scratch), got "
                         "weights.")
    options.pop("weights", None)
    if name in _AUX_LOGIT_MODELS:
        # In training mode these return (logits, aux_logits) tuples, which no adacal loss reads: build them without the
        # auxiliary classifiers (the main classifier is the same).
        if options.get("aux_logits"):
            raise InputError(f"Expected aux_logits=False for torchvision model '{name}' (adacal trains on the main "
                             "logits only), got aux_logits=True.")
        options["aux_logits"] = False
    try:
        return torchvision.models.get_model(name, weights=None, num_classes=num_classes, **options)
    except TypeError as exc:
        raise InputError(f"torchvision model '{name}' does not take these options ({exc}).") from None

