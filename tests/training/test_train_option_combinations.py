"""Option combinations of `adacal train` found broken by probing, each checked against an independent truth: a progress
listener the events cannot be sent to, --print-config agreeing with what a run refuses, resume conflicts that name the
option typed, the γ-update note for a huge --epochs, the dataset-size options named as flags, run folders whose names
look like rich markup, and a summed, clipped step written out by hand."""

from __future__ import annotations

import copy
import json
import time
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from adacal.cli import app
from adacal.errors import InputError
from adacal.training import TrainConfig, Trainer, TrainingProgress, resolve_config, resolved_config, train
from adacal.training.resume_config import merge_resume_config
from adacal.training.update_schedule import idle_update_epochs, parse_update_every
from adacal.training.progress import ProgressDispatcher

from cli_helpers import one_line_error, runner

TINY = ["--device", "cpu", "--model", "mlp", "--train-subset", "200", "--epochs", "1", "-q"]


def _train(*args: str):
    return runner.invoke(app, ["train", *args])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished two-epoch run, runs/r1 (about a second on one CPU thread)."""
    out = tmp_path_factory.mktemp("runs")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = _train(*TINY, "--epochs", "2", "--out", str(out), "--name", "r1", "--loss-reduction", "sum",
                        "--grad-clip", "2")
    finally:
        torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    return out / "r1"


# ------------------------------------------------------------------------------------------------ progress listeners


def _no_args():
    return None


def _one_arg(event):
    return None


def _keywords_only(event, **info):
    return None


class _NarrowMethod:
    def on_epoch_end(self, record):  # the event sends epoch, epochs, record, seconds
        return None


class _NoEvents:
    pass


@pytest.mark.parametrize("listener, fragment", [
    (_no_args, "progress(event, info)"),
    (_one_arg, "progress(event, info)"),
    (_keywords_only, "progress(event, info)"),
    (_NarrowMethod(), "progress.on_epoch_end to take the keyword arguments epoch, epochs, record, seconds"),
    (_NoEvents(), "or an object with on_<event> methods"),
    (5, "or an object with on_<event> methods"),
])
def test_a_progress_listener_the_events_cannot_reach_is_refused_before_any_work(tmp_path, listener, fragment):
    with pytest.raises(InputError, match=None) as caught:
        train(TrainConfig(out=str(tmp_path), epochs=1, train_subset=200, model="mlp", device="cpu"), progress=listener)
    assert fragment in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # no run folder, not even an empty one
    with pytest.raises(InputError):
        ProgressDispatcher(listener)  # Trainer(progress=...) refuses it the same way


def test_listeners_that_take_the_events_are_accepted():
    from adacal.cli.train import PlainProgress

    class Partial:  # only some events, with the keywords it needs and **rest
        def on_epoch_end(self, *, epoch, record, **rest):
            return None

    for listener in (None, lambda event, info: None, TrainingProgress(), PlainProgress(), Partial(), print):
        ProgressDispatcher(listener)
    calls = []
    ProgressDispatcher(lambda event, info: calls.append((event, info)))("epoch_start", epoch=1, epochs=2, batches=3)
    assert calls == [("epoch_start", {"epoch": 1, "epochs": 2, "batches": 3})]


# ------------------------------------------------------------------------------------------------ --print-config


def test_print_config_refuses_what_a_run_refuses(tmp_path, finished_run):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    line = one_line_error(_train("--print-config", "--out", str(a_file)), "--out", "is a file")
    assert str(a_file) in line
    one_line_error(_train("--print-config", "--out", str(finished_run.parent), "--name", "r1"),
                   "--name r1 to be a new run folder", "already exists")
    # a finished 2-epoch run cannot be "resumed" to fewer epochs: the real command says so, the dry run too
    for command in (["--print-config"], []):
        one_line_error(_train(*command, "--resume", str(finished_run), "--epochs", "1", "--device", "cpu"),
                       "Expected --epochs to be at least the 2 epoch(s)")


def test_print_config_of_a_new_run_writes_nothing_and_records_reduction_and_clip(tmp_path):
    out = tmp_path / "not_yet"
    result = _train("--print-config", "--out", str(out), "--loss-reduction", "sum", "--grad-clip", "0.5")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert (printed["loss_reduction"], printed["grad_clip"]) == ("sum", 0.5)
    assert not out.exists()


def test_a_taken_name_is_refused_before_the_data_is_loaded(tmp_path, monkeypatch):
    (tmp_path / "taken").mkdir()
    import adacal.data

    def no_loading(*args, **kwargs):
        raise AssertionError("the data was loaded before the --name check")

    monkeypatch.setattr(adacal.data, "load_dataset", no_loading)
    with pytest.raises(InputError, match="--name taken to be a new run folder"):
        train(TrainConfig(out=str(tmp_path), name="taken", device="cpu"))
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


# ------------------------------------------------------------------------------------------------ resume


def _saved(**options) -> dict:
    """What a run's checkpoint records: its resolved config (no training needed to compare options)."""
    return resolve_config(TrainConfig(device="cpu", **options)).to_dict()


def test_resume_with_embeddings_names_the_flag_not_model_options(tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("the 0.1 0.2\n")
    with pytest.raises(InputError) as caught:
        merge_resume_config(_saved(), TrainConfig(model_options={"embeddings": str(glove)}))
    message = str(caught.value)
    assert message.startswith(f"--embeddings '{glove}' conflicts with the resumed run, trained without --embeddings")
    assert "model-options" not in message and "model_options" not in message
    # the same file however it is spelled is no conflict
    saved = _saved(model="textcnn", dataset="20newsgroups", model_options={"embeddings": str(glove)})
    merged = merge_resume_config(saved, TrainConfig(model_options={"embeddings": str(tmp_path / "." / "glove.txt")}))
    assert merged.model_options == {"embeddings": str(glove)}
    with pytest.raises(InputError, match=r"--embeddings '/elsewhere.txt' conflicts with the resumed run's '"):
        merge_resume_config(saved, TrainConfig(model_options={"embeddings": "/elsewhere.txt"}))


def test_resume_conflicts_name_the_option_and_say_none_for_an_unset_one():
    with pytest.raises(InputError, match=r"^--grad-clip 3.0 conflicts with the resumed run's none;"):
        merge_resume_config(_saved(), TrainConfig(grad_clip=3.0))
    with pytest.raises(InputError, match=r"^--loss-reduction 'sum' conflicts with the resumed run's 'mean';"):
        merge_resume_config(_saved(), TrainConfig(loss_reduction="sum"))
    # a loss option the run's loss does not take: said as such, not as a conflict with "None"
    with pytest.raises(InputError, match=r"^--gamma does not apply to --loss adafocal"):
        merge_resume_config(_saved(), TrainConfig(loss_options={"gamma": 2.0}))


@pytest.mark.parametrize("saved, given", [("paper", "epoch:25,100:40,1"), ("epoch:25,100:40,1", "PAPER"),
                                          ("5", " 5 "), ("epoch", "epoch")])
def test_resume_accepts_the_same_update_schedule_spelled_otherwise(saved, given):
    merged = merge_resume_config(_saved(update_every=saved), TrainConfig(update_every=given))
    assert parse_update_every(merged.update_every).segments == parse_update_every(saved).segments
    with pytest.raises(InputError, match="--update-every '3' conflicts"):
        merge_resume_config(_saved(update_every=saved), TrainConfig(update_every="3"))


def test_resuming_a_finished_run_says_it_only_evaluates(finished_run):
    from adacal.cli.train import _start_line

    assert _start_line(start_epoch=0, epochs=3, resumed=False, device="cpu") == "Training to epoch 3 on cpu"
    assert _start_line(start_epoch=1, epochs=3, resumed=True, device="cpu") == "Resuming at epoch 2 to epoch 3 on cpu"
    result = runner.invoke(app, ["train", "--resume", str(finished_run), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("All 2 epochs are trained already; evaluating the run again on cpu")
    assert "Resuming at epoch 3 to epoch 2" not in result.stdout


# ------------------------------------------------------------------------------------------------ γ-update note


def _idle_reference(spec, epochs, batches_per_epoch):
    """The idle epochs one by one (what the note summarises), from `batches_for_epoch`."""
    schedule = parse_update_every(spec)
    return [e for e in range(1, epochs + 1)
            if (every := schedule.batches_for_epoch(e)) is not None and every > batches_per_epoch]


def _spans(idle):
    spans, start = [], idle[0]
    for previous, current in zip(idle, idle[1:] + [None]):
        if current != previous + 1:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
            start = current
    return ", ".join(spans[:4]) + (", ..." if len(spans) > 4 else "")


@pytest.mark.parametrize("spec", ["epoch", "3", "paper", "5:3,epoch", "epoch:2,9:4",
                                  "9:1,1:2,9:3,1:4,9:5,1:6,9:7,1:8,9", "2:3,9:5,epoch:7,9"])
@pytest.mark.parametrize("epochs", [1, 4, 9, 30, 45])
def test_the_idle_update_note_matches_the_epochs_counted_one_by_one(spec, epochs):
    idle = _idle_reference(spec, epochs, batches_per_epoch=4)
    notes = idle_update_epochs(spec, epochs=epochs, batches_per_epoch=4)
    if not idle:
        assert notes == []
    else:
        (note,) = notes
        assert f" in epoch{'s' if len(idle) > 1 else ''} {_spans(idle)}: " in note


def test_a_huge_epochs_value_does_not_stall_before_training():
    started = time.perf_counter()
    (note,) = idle_update_epochs("paper", epochs=10**20, batches_per_epoch=5)
    assert "epochs 26-40:" in note
    assert idle_update_epochs("7", epochs=10**20, batches_per_epoch=5)[0].count(f"1-{10**20}") == 1
    assert idle_update_epochs("epoch", epochs=10**20, batches_per_epoch=5) == []
    assert time.perf_counter() - started < 0.5


# ------------------------------------------------------------------------------------------------ dataset sizes


@pytest.mark.parametrize("args, fragment", [
    (["--train-subset", "100000"], "Expected --train-subset to be at most 1077"),
    (["--test-subset", "5"], "Expected --test-subset to be at least 10"),
    (["--test-subset", "100000"], "Expected --test-subset to be at most 360"),
    (["--val-size", "5000"], "Expected --val-size to be between 1 and 1436 for digits"),
])
def test_dataset_size_options_are_named_as_flags(tmp_path, args, fragment):
    base = [a for a in TINY if a not in ("--train-subset", "200")]
    one_line_error(_train(*base, "--out", str(tmp_path), *args), fragment)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------ markup-like names


def test_a_run_folder_named_like_rich_markup_is_printed_as_it_is(capsys, tmp_path):
    from adacal.cli.train import RichProgress, _print_summary

    folder = tmp_path / "a[/x][red]b"
    result = SimpleNamespace(test_metrics={"error": 0.1, "ece_em": 0.02, "nll": 0.3}, selected_epoch=1, select="last",
                             run_dir=folder, seconds=1.0)
    _print_summary(result, quiet=False)
    assert f"Run folder: {folder}" in " ".join(capsys.readouterr().out.split())
    progress = RichProgress()
    with progress:
        progress.on_train_start(run_dir=folder, start_epoch=0, epochs=1, resumed=False, device="cpu")


# ------------------------------------------------------------------------------------------------ sum + clip


def test_a_summed_clipped_step_equals_the_step_written_out(tmp_path):
    from adacal.data import load_dataset
    from adacal.losses import build_loss
    from adacal.runs import RunFolder

    config = resolve_config(TrainConfig(loss="ce", loss_reduction="sum", grad_clip=0.5, batch_size=64, milestones=(),
                                        lr=0.05, weight_decay=1e-3, device="cpu"))
    assert (config.loss_reduction, config.grad_clip, config.optimizer, config.momentum) == ("sum", 0.5, "sgd", 0.9)
    dataset = load_dataset("digits", train_subset=64, seed=0)
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 10)
    reference = copy.deepcopy(model)
    trainer = Trainer(config, dataset=dataset, model=model, loss=build_loss("ce"), model_name="linear",
                      model_options={}, device=torch.device("cpu"), run=RunFolder(tmp_path / "run"))
    trainer.train_loader.set_epoch(1)
    ((inputs, labels),) = list(trainer.train_loader.iterate(0))

    value = F.cross_entropy(reference(inputs), labels, reduction="sum")
    value.backward()
    norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
    assert norm > 0.5  # the clip acts
    torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3).step()

    trained = trainer.train_epoch(1)
    for ours, theirs in zip(trainer.net.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-7)
    assert trained["train"]["loss"] == pytest.approx(float(value.detach()) / 64, rel=1e-5)


def test_config_json_records_reduction_and_clip(finished_run):
    recorded = json.loads((finished_run / "config.json").read_text())["config"]
    assert (recorded["loss_reduction"], recorded["grad_clip"]) == ("sum", 2.0)
    assert resolved_config(TrainConfig(resume=str(finished_run)))["loss_reduction"] == "sum"
