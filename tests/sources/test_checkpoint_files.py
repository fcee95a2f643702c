"""Checkpoint files as `adacal.training.checkpoints.load_checkpoint` reads them through `adacal.sources.files`:
every field and weight is checked (counts, shapes, the model built on the meta device against memory, dense real
tensors) before anything is allocated, in seconds."""

from __future__ import annotations

import time

import pytest
import torch

from adacal.errors import InputError


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from adacal.models import build_model
    from adacal.training.checkpoints import make_checkpoint

    model = build_model("mlp", num_classes=3, input_shape=(8,))
    return make_checkpoint(model_name="mlp", model_options={}, dataset="digits", num_classes=3, input_shape=(8,),
                           config={}, epoch=1, model_state=model.state_dict())


@pytest.mark.parametrize("change, match", [
    ({"num_classes": 10**12}, "'num_classes' .* integer from 2 to 10000000"),
    ({"input_shape": [10**6, 10**6]}, "'input_shape' .* at most 268435456 values"),
    ({"model_options": {"hidden": [10**6, 10**6]}}, "the model 'mlp' .* to fit in memory, but it would need"),
    ({"model_options": {"hidden": 10**12}}, "model option 'hidden'"),
    ({"model_options": {"dropout": float("inf")}}, "model option 'dropout'"),
    ({"num_classes": 5}, "weights to fit model 'mlp', but they do not .* has shape"),
    ({"model_state": {"w": [1, 2]}}, "'model_state' .* dict of tensors"),
    ("sparse", "to be a dense tensor, got a sparse_coo one"),
    ("complex", "to be a real tensor"),
    ("missing", "missing"),
])
def test_checkpoint_contents(tmp_path, checkpoint, change, match):
    from adacal.training.checkpoints import check_weights_fit, load_checkpoint

    if change == "sparse":
        key = next(iter(checkpoint["model_state"]))
        change = {"model_state": {**checkpoint["model_state"], key: checkpoint["model_state"][key].to_sparse()}}
    elif change == "complex":
        key = next(iter(checkpoint["model_state"]))
        change = {"model_state": {**checkpoint["model_state"], key: checkpoint["model_state"][key].to(torch.complex64)}}
    elif change == "missing":
        state = dict(checkpoint["model_state"])
        state.pop(next(iter(state)))
        change = {"model_state": state}
    torch.save({**checkpoint, **change}, tmp_path / "c.pt")
    started = time.monotonic()
    with pytest.raises(InputError, match=match):
        load_checkpoint(tmp_path / "c.pt")
        check_weights_fit(torch.load(tmp_path / "c.pt", weights_only=True), tmp_path / "c.pt")
    assert time.monotonic() - started < 5


def test_good_checkpoint_loads(tmp_path, checkpoint):
    from adacal.training.checkpoints import load_checkpoint

    torch.save(checkpoint, tmp_path / "c.pt")
    assert load_checkpoint(tmp_path / "c.pt")["num_classes"] == 3
