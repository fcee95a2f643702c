"""Checkpoints: weights_only round trips, RNG states, and refusal of pickled code, corrupt and foreign files."""

import random

import numpy as np
import pytest
import torch

from adacal.errors import CheckpointError
from adacal.training.checkpoints import (
    capture_rng_state,
    load_checkpoint,
    make_checkpoint,
    resolve_checkpoint_path,
    restore_rng_state,
    save_checkpoint,
)


class _CreatesAFile:
    """Unpickling this object would create a file: the classic pickle payload."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _checkpoint(model):
    return make_checkpoint(
        model_name="mlp", model_options={"hidden": [4]}, dataset="digits", num_classes=3, input_shape=(5,),
        config={"epochs": 2, "milestones": [1]}, epoch=2, model_state=model.state_dict(),
        best_metric={"name": "val_accuracy", "value": 0.5, "epoch": 1},
    )


def test_round_trip_loads_with_weights_only(tmp_path):
    model = torch.nn.Linear(5, 3)
    path = save_checkpoint(_checkpoint(model), tmp_path / "checkpoints" / "last.pt")
    plain = torch.load(path, weights_only=True)  # what any user can do
    assert plain["format"] == "adacal-checkpoint" and plain["format_version"] == 1
    loaded = load_checkpoint(path)
    assert loaded["epoch"] == 2 and loaded["input_shape"] == [5] and loaded["config"]["milestones"] == [1]
    torch.testing.assert_close(loaded["model_state"]["weight"], model.weight.detach())
    assert not list(path.parent.glob(".*tmp"))  # the temp file was renamed away
    assert resolve_checkpoint_path(tmp_path) == path


def test_rng_states_survive_weights_only_and_replay():
    random.random(), np.random.rand(), torch.rand(1)
    state = capture_rng_state()
    first = (random.random(), random.gauss(0, 1), np.random.rand(3), torch.rand(3))
    buffer = __import__("io").BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    restore_rng_state(torch.load(buffer, weights_only=True))
    again = (random.random(), random.gauss(0, 1), np.random.rand(3), torch.rand(3))
    assert first[:2] == again[:2]
    np.testing.assert_array_equal(first[2], again[2])
    torch.testing.assert_close(first[3], again[3])


def test_pickle_payload_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned.txt"
    path = tmp_path / "evil.pt"
    torch.save({"format": "adacal-checkpoint", "payload": _CreatesAFile(marker)}, path)
    with pytest.raises(CheckpointError, match="Refusing to load .*weights_only=True"):
        load_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_files_are_checkpoint_errors(tmp_path, damage):
    path = save_checkpoint(_checkpoint(torch.nn.Linear(5, 3)), tmp_path / "last.pt")
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"not a checkpoint" * 10, "empty": b""}[damage])
    with pytest.raises(CheckpointError, match="truncated or corrupt") as info:
        load_checkpoint(path)
    assert "\n" not in str(info.value)


def test_foreign_files_are_refused(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError, match="not"):
        load_checkpoint(path)
    torch.save({**_checkpoint(torch.nn.Linear(5, 3)), "format_version": 99}, path)
    with pytest.raises(CheckpointError, match="format_version 1, got 99"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="has none"):
        resolve_checkpoint_path(tmp_path)


@pytest.mark.parametrize(
    "partial, expected",
    [
        ({"epoch": 2, "batch": 1, "loss_sum": 1.0, "correct": 1, "seen": 2, "updates": []}, "partial_epoch.epoch"),
        ({"epoch": 3, "batch": 0, "loss_sum": 1.0, "correct": 1, "seen": 2, "updates": []}, "partial_epoch.batch"),
        ({"epoch": 3, "batch": 1, "loss_sum": float("nan"), "correct": 1, "seen": 2, "updates": []},
         "partial_epoch.loss_sum"),
        ({"epoch": 3, "batch": 1, "loss_sum": 1.0, "correct": 3, "seen": 2, "updates": []}, "at most its 'seen'"),
        ({"epoch": 3, "batch": 1, "loss_sum": 1.0, "correct": 1, "seen": 2, "updates": [1]}, "partial_epoch.updates"),
        ({"epoch": 3, "batch": 1, "loss_sum": 1.0, "correct": 1, "seen": 2}, "partial_epoch.updates"),
        ([3, 1], "'partial_epoch' .* to be a dict"),
    ],
)
def test_mid_epoch_checkpoints_are_checked(tmp_path, partial, expected):
    path = tmp_path / "interrupted.pt"
    good = {"epoch": 3, "batch": 1, "loss_sum": 1.5, "correct": 1, "seen": 2, "updates": [{"gammas": [1.0]}]}
    save_checkpoint({**_checkpoint(torch.nn.Linear(5, 3)), "partial_epoch": good}, path)
    assert load_checkpoint(path)["partial_epoch"] == good
    save_checkpoint({**_checkpoint(torch.nn.Linear(5, 3)), "partial_epoch": partial}, path)
    with pytest.raises(CheckpointError, match=expected):
        load_checkpoint(path)
