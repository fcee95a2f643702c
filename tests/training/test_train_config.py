"""TrainConfig resolution and validation, presets, the --update-every schedule and the LR schedule."""

import pytest
import torch

from adacal.errors import InputError
from adacal.training.config import PAPER_PRESETS, TrainConfig, resolve_config
from adacal.training.resume_config import merge_resume_config
from adacal.training.schedules import build_scheduler, lr_at_epoch
from adacal.training.update_schedule import parse_update_every


def test_defaults_resolve_to_the_quick_digits_preset():
    config = resolve_config(TrainConfig())
    assert (config.dataset, config.loss, config.preset) == ("digits", "adafocal", "quick")
    assert config.epochs == 30 and config.batch_size == 32 and config.optimizer == "sgd" and config.momentum == 0.9
    assert config.milestones == (20,) and config.update_every == "epoch" and config.select == "last"
    assert config.seed == 0 and config.device == "auto" and config.grad_clip is None


def test_paper_preset_matches_the_protocol_and_explicit_options_win():
    config = resolve_config(TrainConfig(dataset="cifar10", preset="paper"))
    assert (config.optimizer, config.momentum, config.batch_size, config.epochs) == ("sgd", 0.9, 128, 350)
    assert (config.lr, config.milestones, config.lr_decay, config.weight_decay) == (0.1, (150, 250), 0.1, 5e-4)
    tiny = resolve_config(TrainConfig(dataset="tiny-imagenet", preset="paper", epochs=5))
    assert tiny.epochs == 5 and tiny.batch_size == 64 and tiny.milestones == (40, 60) and tiny.select == "best-val"
    imagenet = resolve_config(TrainConfig(dataset="imagenet", preset="paper"))
    assert (imagenet.lr, imagenet.weight_decay, imagenet.milestones) == (0.01, 1e-4, (30, 60))
    news = resolve_config(TrainConfig(dataset="20newsgroups", preset="paper"))
    assert (news.optimizer, news.lr, news.epochs) == ("adam", 1e-3, 50)
    assert set(PAPER_PRESETS) == {"cifar10", "cifar100", "tiny-imagenet", "imagenet", "20newsgroups"}


def test_paper_preset_for_a_dataset_without_one_is_an_error():
    with pytest.raises(InputError, match="paper preset has settings for"):
        resolve_config(TrainConfig(dataset="digits", preset="paper"))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"epochs": 0}, "Expected --epochs to be a positive integer, got 0"),
        ({"lr": 0.0}, "Expected --lr to be a positive number"),
        ({"lr": float("nan")}, "Expected --lr to be a positive number"),
        ({"batch_size": 0}, "Expected --batch-size to be a positive integer"),
        ({"milestones": (5, 3)}, "strictly increasing"),
        ({"milestones": (0,)}, "positive epoch numbers"),
        ({"optimizer": "rmsprop"}, "--optimizer to be one of sgd, adam, adamw"),
        ({"optimizer": "adam", "momentum": 0.9}, "--momentum applies to --optimizer sgd only"),
        ({"select": "best"}, "--select to be one of last, best-val"),
        ({"device": "tpu"}, "--device to be auto, cpu or cuda"),
        ({"grad_clip": -1.0}, "--grad-clip to be a positive number"),
        ({"update_every": "0"}, "--update-every"),
        ({"loss_options": {"switch_threshold": 0.0}}, "--switch-threshold to be positive"),
        ({"loss_options": {"n_bins": 0}}, "--n-bins to be a positive integer"),
        ({"seed": -1}, "--seed"),
    ],
)
def test_bad_options_are_one_sentence_input_errors(options, message):
    with pytest.raises(InputError, match=message) as info:
        resolve_config(TrainConfig(**options))
    assert "\n" not in str(info.value)


def test_loss_options_must_fit_the_loss():
    from adacal.training.config import check_loss_options

    with pytest.raises(InputError, match="--gamma does not apply to --loss ce"):
        check_loss_options("ce", {"gamma": 2.0})
    with pytest.raises(InputError, match="--gamma-max to be greater than --gamma-min"):
        check_loss_options("adafocal", {"gamma_max": -3.0})
    check_loss_options("adafocal", {"gamma_max": 10.0, "n_bins": 10})


def test_update_every_schedules():
    assert parse_update_every("epoch").batches_for_epoch(7) is None
    every5 = parse_update_every(5)
    assert every5.batches_for_epoch(1) == 5 and every5.spec == "5"
    paper = parse_update_every("paper")
    assert paper == parse_update_every("epoch:25,100:40,1").__class__(paper.segments, "paper")
    assert [paper.batches_for_epoch(e) for e in (1, 25, 26, 40, 41, 350)] == [None, None, 100, 100, 1, 1]
    assert parse_update_every("epoch:2, 3").batches_for_epoch(3) == 3
    # a spec whose last segment has an end keeps its last rule afterwards
    assert parse_update_every("epoch:2,10:4").batches_for_epoch(9) == 10


@pytest.mark.parametrize("spec", ["0", "abc", "epoch:5,epoch:3,1", "epoch,1", "-2", "epoch:0", ""])
def test_bad_update_every_specs(spec):
    with pytest.raises(InputError, match="--update-every"):
        parse_update_every(spec)


def test_lr_schedule_steps_after_each_milestone_epoch():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = build_scheduler(optimizer, (2, 4), 0.1)
    seen = []
    for epoch in range(1, 7):
        seen.append(optimizer.param_groups[0]["lr"])
        assert seen[-1] == pytest.approx(lr_at_epoch(0.1, (2, 4), 0.1, epoch))
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001, 0.001])


def test_resume_takes_options_from_the_run_and_refuses_conflicts():
    saved = resolve_config(TrainConfig(epochs=2, lr=0.01, optimizer="adam")).to_dict()
    merged = merge_resume_config(saved, TrainConfig(resume="x", epochs=5, lr=0.01, device="cpu"))
    assert merged.epochs == 5 and merged.lr == 0.01 and merged.device == "cpu" and merged.optimizer == "adam"
    assert merged.momentum is None
    with pytest.raises(InputError, match="--lr 0.5 conflicts with the resumed run's 0.01"):
        merge_resume_config(saved, TrainConfig(resume="x", epochs=5, lr=0.5))


def test_resuming_a_run_saved_before_loss_reduction_existed_uses_the_mean():
    from adacal.training.resume_config import merge_resume_config

    saved = resolve_config(TrainConfig()).to_dict()
    del saved["loss_reduction"], saved["name"]
    merged = merge_resume_config(saved, TrainConfig(epochs=40))
    assert merged.loss_reduction == "mean" and merged.epochs == 40


@pytest.mark.parametrize(("options", "match"), [
    ({"loss": ["ce"]}, "loss to be a name"),
    ({"loss_options": "gamma=2"}, "loss_options to be a dict"),
    ({"model_options": [1, 2]}, "model_options to be a dict"),
    ({"out": 5}, "out to be a path"),
    ({"milestones": 5}, "milestones to be a sequence of epoch numbers"),
    ({"milestones": "15"}, "milestones to be a sequence"),  # int() of each character gave epochs 1 and 5
    ({"milestones": (1.5,)}, "milestones to be a sequence"),  # silently epoch 1
    ({"milestones": (True,)}, "milestones to be a sequence"),
])
def test_a_train_config_built_in_python_with_wrong_containers_is_one_sentence(options, match):
    from adacal.training import train
    from adacal.training.entry import resolved_config

    for call in (resolve_config, train, resolved_config):
        with pytest.raises(InputError, match=match):
            call(TrainConfig(**options))
    with pytest.raises(InputError, match="Expected a TrainConfig .* got dict"):
        train({"dataset": "digits"})


def test_numpy_scalars_are_read_as_the_numbers_they_are():
    """np.int64(3) epochs (from a numpy grid of settings) was refused as "not a positive integer, got np.int64(3)"."""
    import numpy as np

    resolved = resolve_config(TrainConfig(epochs=np.int64(3), lr=np.float32(0.5), milestones=(np.int64(2),)))
    assert (resolved.epochs, resolved.lr, resolved.milestones) == (3, 0.5, (2,)) and type(resolved.epochs) is int
