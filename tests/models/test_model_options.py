"""Model options and shapes nobody had tried: numpy integers, floats and strings where integers belong, layers of
zero filters, and torchvision classifiers whose training-mode output is a tuple (GoogLeNet, Inception v3)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.models import build_model


@pytest.fixture(scope="module", autouse=True)
def _torchvision_imported():
    """Import torchvision's model zoo once, not inside the first test that builds one."""
    import torchvision.models  # noqa: F401

    torchvision.models.list_models(module=torchvision.models)


def test_numpy_integers_are_integers():
    """A dataset's label count or vocabulary size as a numpy integer was refused as 'not an integer'."""
    model = build_model("mlp", num_classes=np.int64(3), input_shape=np.array([5]), hidden=[np.int32(4)])
    assert model(torch.zeros(2, 5)).shape == (2, 3)
    text = build_model("textcnn", num_classes=2, input_shape=(6,), vocab_size=np.int64(12), kernel_sizes=(2, 3),
                       num_filters=np.int16(4), embedding_dim=np.int64(8))
    assert text(torch.randint(0, 12, (2, 6))).shape == (2, 2)
    assert build_model("mlp", num_classes=2, input_shape=torch.tensor([5])).adacal_input_shape == (5,)


@pytest.mark.parametrize("shape", [(5.5,), "64", (True,), 5, (3, 32.0, 32)])
def test_input_shape_must_hold_integers(shape):
    """int() read (5.5,) as (5,) and the string "64" as the shape (6, 4)."""
    name = "resnet20" if isinstance(shape, tuple) and len(shape) == 3 else "mlp"
    with pytest.raises(InputError, match="Expected input_shape to be a tuple of positive integers"):
        build_model(name, num_classes=2, input_shape=shape)


@pytest.mark.parametrize(("name", "shape", "options", "reason"), [
    ("mlp", (8,), {"hidden": (64.7,)}, "hidden must be an integer, got 64.7"),
    ("mlp", (8,), {"dropout": True}, r"dropout must be a number in \[0, 1\), got True"),
    ("textcnn", (8,), {"vocab_size": 10, "kernel_sizes": "345"}, "kernel_sizes must be a list of integers"),
    ("textcnn", (8,), {"vocab_size": 10, "kernel_sizes": (2.5,)}, "kernel_sizes must be an integer, got 2.5"),
    ("textcnn", (8,), {"vocab_size": 10, "num_filters": 0}, "num_filters must be at least 1, got 0"),
    ("textcnn", (8,), {"vocab_size": 10, "num_filters": 2.7}, "num_filters must be an integer, got 2.7"),
    ("textcnn", (8,), {"vocab_size": 10, "embedding_dim": 3.5}, "embedding_dim must be an integer, got 3.5"),
    ("textcnn", (8,), {"vocab_size": 10, "embedding_dim": "8"}, "embedding_dim must be an integer, got '8'"),
    ("textcnn", (8,), {"vocab_size": 10, "dropout": "0.5"}, r"dropout must be a number in \[0, 1\), got '0.5'"),
    ("textcnn", (8,), {"vocab_size": 10, "freeze_embeddings": "no"}, "freeze_embeddings must be true or false"),
])
def test_option_values_of_the_wrong_type_are_one_sentence(name, shape, options, reason):
    """They were truncated (64.7 → 64), read character by character ("345" → 3, 4, 5), taken as truthy ("no"), or
    built a layer of zero filters that failed only in the first forward pass."""
    with pytest.raises(InputError, match=f"Expected options that build model {name} .*which fail \\({reason}"):
        build_model(name, num_classes=2, input_shape=shape, **options)


def test_wrn_dropout_string_is_one_sentence():
    """Checked before the 36M-parameter network is built (it raised a bare TypeError comparing str and int)."""
    with pytest.raises(InputError, match=r"which fail \(dropout must be a number in \[0, 1\), got '0.1'\)"):
        build_model("wrn-26-10", num_classes=2, input_shape=(3, 8, 8), dropout="0.1")


@pytest.mark.parametrize(("name", "side"), [("googlenet", 32), ("inception_v3", 75)])
def test_torchvision_models_with_auxiliary_heads_train_on_plain_logits(name, side):
    """In training mode they returned GoogLeNetOutputs / InceptionOutputs tuples, which every loss failed on."""
    torch.manual_seed(0)
    model = build_model(f"torchvision:{name}", num_classes=3, input_shape=(3, side, side), init_weights=False)
    model.train()
    logits = model(torch.randn(2, 3, side, side))
    assert isinstance(logits, torch.Tensor) and logits.shape == (2, 3)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2])).backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_torchvision_aux_logits_true_is_refused():
    with pytest.raises(InputError, match="Expected aux_logits=False for torchvision model 'googlenet'"):
        build_model("torchvision:googlenet", num_classes=3, input_shape=(3, 32, 32), aux_logits=True)
