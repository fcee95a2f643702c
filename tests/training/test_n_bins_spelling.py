"""`n_bins` is the one name of the bin count; `num_bins`, its deprecated spelling, still reads everywhere: a run whose
config.json and checkpoints say `num_bins` resumes, `build_loss` and the binned losses take it with a warning."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from adacal.errors import InputError
from adacal.losses import AdaFocalLoss, CalFocalLoss, build_loss
from adacal.training import TrainConfig, train
from adacal.training.checkpoints import load_checkpoint, save_checkpoint
from adacal.training.config import resolve_config
from adacal.training.resume_config import merge_resume_config


def _spelled_the_old_way(options: dict) -> dict:
    return {("num_bins" if key == "n_bins" else key): value for key, value in options.items()}


def test_a_run_written_with_num_bins_resumes_with_its_bin_count(tmp_path):
    config = TrainConfig(dataset="digits", model="mlp", loss="adafocal", loss_options={"n_bins": 4}, epochs=1,
                         batch_size=64, train_subset=128, device="cpu", out=str(tmp_path), name="run", seed=0)
    run = train(config).run_dir
    # Rewrite the run as config.json and checkpoints spelled it with num_bins.
    document = json.loads((run / "config.json").read_text())
    assert document["config"]["loss_options"]["n_bins"] == 4
    document["config"]["loss_options"] = _spelled_the_old_way(document["config"]["loss_options"])
    (run / "config.json").write_text(json.dumps(document))
    for path in (run / "checkpoints").glob("*.pt"):
        checkpoint = load_checkpoint(path)
        checkpoint["config"]["loss_options"] = _spelled_the_old_way(checkpoint["config"]["loss_options"])
        save_checkpoint(checkpoint, path)
    assert "num_bins" in load_checkpoint(run / "checkpoints" / "last.pt")["config"]["loss_options"]

    with warnings.catch_warnings():
        # Reading a run's own files is not a deprecated call: no warning about the spelling.
        warnings.filterwarnings("error", message=".*num_bins", category=DeprecationWarning)
        resumed = train(TrainConfig(resume=str(run), epochs=2, device="cpu"))
    assert resumed.run_dir == run
    lines = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert [line["epoch"] for line in lines] == [1, 2]
    last = load_checkpoint(run / "checkpoints" / "last.pt")
    assert last["epoch"] == 2 and last["config"]["loss_options"]["n_bins"] == 4
    assert tuple(last["loss_state"]["bin_edges"].shape) == (5,)
    # Typing the saved bin count again (either name) agrees with the run; another count conflicts.
    saved = json.loads((run / "config.json").read_text())["config"]
    for options in ({"n_bins": 4}, {"num_bins": 4}):
        merge_resume_config(saved, TrainConfig(resume=str(run), epochs=3, loss_options=options))
    with pytest.raises(InputError, match="--n-bins 5 conflicts with the resumed run's 4"):
        merge_resume_config(saved, TrainConfig(resume=str(run), epochs=3, loss_options={"num_bins": 5}))


def test_train_config_reads_num_bins_as_n_bins_and_refuses_two_different_values():
    assert TrainConfig(loss_options={"num_bins": 7}).loss_options == {"n_bins": 7}
    read = TrainConfig.from_dict({"loss_options": {"num_bins": 7, "lam": 2.0}})
    assert read.loss_options == {"n_bins": 7, "lam": 2.0}
    assert resolve_config(TrainConfig(loss="adafocal", loss_options={"num_bins": 7})).loss_options == {"n_bins": 7}
    with pytest.raises(InputError, match="one value for n_bins"):
        TrainConfig(loss_options={"num_bins": 7, "n_bins": 8})


@pytest.mark.parametrize("name, cls", [("adafocal", AdaFocalLoss), ("calfocal", CalFocalLoss)])
def test_num_bins_builds_the_same_loss_with_a_deprecation_warning(name, cls):
    with pytest.warns(DeprecationWarning, match="'num_bins' is deprecated; use 'n_bins'"):
        old = build_loss(name, num_bins=3)
    with pytest.warns(DeprecationWarning, match="'num_bins' is deprecated"):
        direct = cls(num_bins=3)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*num_bins", category=DeprecationWarning)
        new = build_loss(name, n_bins=3)
        assert old.n_bins == direct.n_bins == new.n_bins == 3
        assert torch.equal(old.bin_edges, new.bin_edges)
        assert repr(old) == repr(new)
    with pytest.warns(DeprecationWarning):
        assert new.num_bins == 3
    with pytest.warns(DeprecationWarning), pytest.raises(InputError, match="one value for n_bins"):
        build_loss(name, num_bins=3, n_bins=4)
    # Signatures, help() and the registry's option list show the current name only.
    import inspect

    from adacal.registry import option_names

    assert "n_bins" in inspect.signature(cls).parameters and "num_bins" not in inspect.signature(cls).parameters
    assert "num_bins" not in option_names(cls)
