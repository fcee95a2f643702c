"""`update_from(model, val_loader)`: the same γ as `update` on the same data, the model's modes restored, one-line
errors for loaders without labels, the validation statistics gathered across gloo ranks; and the warning when a
validation-driven loss trains on without any update (never in `adacal train`)."""

import json
import socket
import warnings

import pytest
import torch
from torch import nn

import adacal.losses
from adacal.errors import InputError
from adacal.losses import AdaFocalLoss, CalFocalLoss, MissingUpdateWarning


def _data(n=90, d=6, k=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=generator), torch.randint(0, k, (n,), generator=generator)


def _model(d=6, k=4, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, k))


def _batches(inputs, labels, size=32):
    return [(inputs[i : i + size], labels[i : i + size]) for i in range(0, len(labels), size)]


@pytest.mark.parametrize("cls", [AdaFocalLoss, CalFocalLoss])
def test_update_from_gives_exactly_the_update_of_the_same_logits(cls):
    inputs, labels = _data()
    model = _model()
    model.eval()
    with torch.no_grad():
        logits = model(inputs)
    model.train()
    expected = cls(n_bins=5).update(logits, labels)
    got = cls(n_bins=5).update_from(model, _batches(inputs, labels))
    assert got.to_dict() == expected.to_dict()  # eval mode (dropout off, BN running stats): the very same logits
    assert model.training and all(m.training for m in model.modules())


def test_update_from_restores_each_modules_mode_also_on_an_exception():
    model = _model()
    model[1].eval()  # a frozen batch norm stays frozen
    loss = AdaFocalLoss(n_bins=3)
    loss.update_from(model, _batches(*_data()))
    assert model.training and not model[1].training and model[2].training

    def broken():
        for inputs, labels in _batches(*_data()):
            yield inputs, labels
            raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        loss.update_from(model, broken())
    assert model.training and not model[1].training
    assert torch.is_grad_enabled()  # no_grad did not leak


def test_update_from_takes_a_callable_dict_batches_and_amp():
    inputs, labels = _data()
    model = _model().eval()
    with torch.no_grad():
        logits = model(inputs)
    expected = AdaFocalLoss().update(logits, labels).to_dict()
    assert AdaFocalLoss().update_from(None, lambda: (logits, labels)).to_dict() == expected

    class Keyword(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, features):
            return type("Output", (), {"logits": self.net(features)})()  # a Hugging Face style output

    batches = [{"features": x, "labels": y} for x, y in _batches(inputs, labels)]
    assert AdaFocalLoss().update_from(Keyword(), batches).to_dict() == expected
    record = AdaFocalLoss().update_from(model, _batches(inputs, labels), amp_dtype=torch.bfloat16)
    assert sum(record["counts"]) == len(labels)


@pytest.mark.parametrize(
    ("loader", "match"),
    [
        ([], r"Expected val_loader to yield at least one batch, got none"),
        ([torch.zeros(4, 6)], r"Expected val_loader to yield \(inputs, labels\) pairs, got Tensor without labels"),
        ([(torch.zeros(4, 6),)], r"got a batch of 1 item\(s\) without labels: pass a loader whose batches carry"),
        ([{"features": torch.zeros(4, 6)}], r"Expected every val_loader batch to hold labels, got a dict with keys"),
        (torch.zeros(4, 6), r"Expected val_loader to be an iterable of \(inputs, labels\) batches or a callable"),
    ],
)
def test_loaders_without_labels_are_one_line_errors(loader, match):
    with pytest.raises(InputError, match=match):
        AdaFocalLoss().update_from(_model(), loader)


def test_update_from_handles_sequence_logits_with_ignored_positions():
    generator = torch.Generator().manual_seed(3)
    tokens = torch.randn(10, 7, 6, generator=generator)  # (N, T, d): a linear layer gives (N, T, K)
    labels = torch.randint(0, 4, (10, 7), generator=generator)
    labels[:, 5:] = -100  # padding
    head = nn.Linear(6, 4)

    def sequence_logits():
        return head(tokens).transpose(1, 2), labels  # (N, K, T), as CrossEntropyLoss takes it

    with torch.no_grad():
        flat = head(tokens).reshape(-1, 4)
    keep = labels.reshape(-1) != -100
    expected = AdaFocalLoss().update(flat[keep], labels.reshape(-1)[keep])
    got = AdaFocalLoss().update_from(head, sequence_logits)
    assert got.to_dict() == expected.to_dict() and sum(got["counts"]) == 50


# --- the warning --------------------------------------------------------------------------------------------------


def test_a_loss_that_never_updates_warns_once_after_warn_after_steps():
    logits, labels = torch.randn(8, 3), torch.randint(0, 3, (8,))
    for cls in (AdaFocalLoss, CalFocalLoss):
        loss = cls(warn_after_steps=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss.eval()
            for _ in range(5):
                loss(logits, labels)  # a validation loss is not a training step
            loss.train()
            loss(logits, labels)
            loss(logits, labels)
            assert not caught
            loss(logits, labels)
            for _ in range(10):
                loss(logits, labels)
        assert [w.category for w in caught] == [MissingUpdateWarning]
        assert issubclass(MissingUpdateWarning, UserWarning)
        message = str(caught[0].message)
        assert "3 training steps without update()" in message and "update_from" in message


def test_an_update_restarts_the_count_and_none_never_warns():
    logits, labels = torch.randn(8, 3), torch.randint(0, 3, (8,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingUpdateWarning)
        loss = AdaFocalLoss(warn_after_steps=3)
        for _ in range(4):
            loss(logits, labels)
            loss(logits, labels)
            loss.update(logits, labels)
        quiet = AdaFocalLoss(warn_after_steps=None)
        for _ in range(50):
            quiet(logits, labels)
    with pytest.warns(MissingUpdateWarning):
        for _ in range(3):
            loss(logits, labels)


# Epoch-end γ of `adacal train` on tiny digits (2 epochs, seed 0), computed on main before the drop-in options were
# added: the trainer's γ trajectory is unchanged by them. float32 training on another CPU's kernels moves these by
# ~1e-9 (CI's machine: 1.2e-9 relative), a changed update rule by far more than 1e-6.
TINY_TRAIN_GAMMAS = [
    [0.8015471057120148, 0.9097165228588799, 1.075963307738216, 0.991029529811501, 0.9922312271734139],
    [0.6134732829533118, 0.7112185264175582, 0.7526124656762863, 0.6428744759977444, 0.8337806967511476],
]


def test_adacal_train_never_warns_and_keeps_its_gamma_trajectory(tmp_path, monkeypatch):
    from adacal.training import TrainConfig, train

    built = []
    original = adacal.losses.build_loss

    def eager_to_warn(name, **options):  # a loss that would warn at its first step, left alone
        loss = original(name, warn_after_steps=1, **options)
        built.append(loss)
        return loss

    monkeypatch.setattr(adacal.losses, "build_loss", eager_to_warn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingUpdateWarning)
        result = train(TrainConfig(out=str(tmp_path), epochs=2, dataset="digits", device="cpu", train_subset=320,
                                   batch_size=32, optimizer="sgd", lr=0.1))
    assert built and built[0].warn_after_steps is None
    history = [json.loads(line) for line in result.run_dir.joinpath("history.jsonl").read_text().splitlines()]
    gammas = [h["adafocal"]["updates"][-1]["gammas"][:5] for h in history]
    for got, want in zip(gammas, TINY_TRAIN_GAMMAS, strict=True):
        assert got == pytest.approx(want, rel=1e-6)
    config = json.loads(result.run_dir.joinpath("config.json").read_text())
    assert "ignore_index" not in json.dumps(config)  # the trainer's config records hyper-parameters only


# --- two gloo ranks -----------------------------------------------------------------------------------------------


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_worker(rank, world, port, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        inputs, labels = _data(n=151)
        mine = slice(0, 70) if rank == 0 else slice(70, None)  # uneven shards
        loss = AdaFocalLoss(n_bins=6)
        model = _model()
        record = loss.update_from(model, _batches(inputs[mine], labels[mine], size=16))
        alone = AdaFocalLoss(n_bins=6)
        alone.update(*_shard_logits(model, inputs[mine]), labels[mine])
        with open(f"{out_dir}/rank{rank}.json", "w") as handle:
            json.dump({"gammas": loss.gammas.tolist(), "counts": record["counts"],
                       "alone": alone.gammas.tolist()}, handle)
    finally:
        dist.destroy_process_group()


def _shard_logits(model, inputs):
    model.eval()
    with torch.no_grad():
        logits = model(inputs)
    model.train()
    return (logits,)


def test_two_gloo_ranks_apply_the_same_gamma_as_one_process_on_the_union(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    inputs, labels = _data(n=151)
    model = _model()
    # the union, scored in the very batches the ranks scored (a matmul's last bits depend on its batch size)
    batches = _batches(inputs[:70], labels[:70], size=16) + _batches(inputs[70:], labels[70:], size=16)
    logits = torch.cat([_shard_logits(model, x)[0] for x, _ in batches])
    expected = AdaFocalLoss(n_bins=6)
    expected.update(logits, labels)
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    assert ranks[0]["gammas"] == ranks[1]["gammas"] == expected.gammas.tolist()
    assert sum(ranks[0]["counts"]) == 151
    assert ranks[0]["alone"] != ranks[0]["gammas"]  # a rank's own shard alone would give another γ
