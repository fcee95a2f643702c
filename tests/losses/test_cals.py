"""CALS (Liu et al., CVPR 2023) against a transcription of its authors' code, its special cases, its state and its
record kind through `adacal train`."""

import json
from typing import Tuple

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from adacal.cli import app
from adacal.errors import CheckpointError, InputError
from adacal.losses import CALSLoss, MissingUpdateWarning, build_loss
from adacal.losses.records import MultiplierUpdate, update_record_from_dict

from cli_helpers import one_line_error, runner

# ---------------------------------------------------------------------------------------------------------------
# The authors' code, re-typed from github.com/by-liu/CALS @ d72b31f6067f3f934480bec1ac88007778af83bd:
# calibrate/lagrangian/penalty.py (`phr`), calibrate/lagrangian/aug_lagrangian.py (`get_constraints`) and
# calibrate/lagrangian/aug_lagrangian_class.py (`AugLagrangianClass`), with `.cuda()` and the torch.distributed
# reduction (a no-op on one process) left out. Their trainer (calibrate/engine/distributed_lagrangian_trainer.py)
# minimises `loss_func(outputs, targets) + penalty` with CE as loss_func, and after every validation epoch calls
# reset_update_lambd, update_lambd per batch, then set_lambd and update_rho.


def phr(h: Tensor, lambd: Tensor, rho: Tensor) -> Tuple[Tensor, Tensor]:
    x = lambd + rho * h
    y_sup = 1 / (2 * rho) * (x ** 2 - lambd ** 2)
    y_inf = - 1 / (2 * rho) * (lambd ** 2)

    grad_y_sup = x
    grad_y_inf = torch.zeros_like(h)

    sup = x >= 0
    return (
        torch.where(sup, y_sup, y_inf),
        torch.where(sup, grad_y_sup, grad_y_inf)
    )


class AugLagrangianClass:
    def __init__(self, num_classes=10, margin=10, penalty="phr", lambd_min=1e-6, lambd_max=1e6, lambd_step=1,
                 rho_min=1, rho_max=10, rho_step=-1, gamma=1.2, tao=0.9, normalize=True):
        self.num_classes = num_classes
        self.margin = margin
        self.penalty_func = phr
        self.lambd_min = lambd_min
        self.lambd_max = lambd_max
        self.lambd_step = lambd_step
        self.rho_min = rho_min
        self.rho_max = rho_max
        self.rho_update = rho_step > 0
        self.rho_step = rho_step
        self.gamma = gamma
        self.tao = tao
        self.normalize = normalize

        self.lambd = self.lambd_min * torch.ones(self.num_classes, requires_grad=False, dtype=torch.float64)
        self.rho = self.rho_min * torch.ones(self.num_classes, requires_grad=False, dtype=torch.float64)
        self.prev_constraints, self.curr_constraints = None, None

    def get_constraints(self, logits, dim: int = -1):
        max_values = logits.amax(dim=dim, keepdim=True)
        diff = max_values - logits
        constraints = diff - self.margin
        if self.normalize:
            constraints = constraints / self.margin
        return constraints

    def get(self, logits):
        logits = logits.movedim(1, -1)
        h = self.get_constraints(logits)
        p, _ = self.penalty_func(h, self.lambd, self.rho)
        penalty = p.mean()
        constraint = h.mean()
        return penalty, constraint

    def reset_update_lambd(self, epoch):
        self.grad_p_sum = torch.zeros_like(self.lambd)
        self.sample_num = 0
        self.curr_constraints = torch.zeros_like(self.rho)

    def update_lambd(self, logits, epoch):
        logits = logits.movedim(1, -1)
        h = self.get_constraints(logits)
        _, grad_p = self.penalty_func(h, self.lambd, self.rho)
        grad_p = torch.clamp(grad_p, min=self.lambd_min, max=self.lambd_max)
        grad_p = grad_p.flatten(start_dim=0, end_dim=-2)
        self.grad_p_sum += grad_p.sum(dim=0)
        self.sample_num += grad_p.shape[0]
        h = h.flatten(start_dim=0, end_dim=-2)
        self.curr_constraints += h.sum(dim=0)

    def set_lambd(self, epoch):
        if (epoch + 1) % self.lambd_step == 0:
            grad_p_mean = self.grad_p_sum / self.sample_num
            self.lambd = torch.clamp(grad_p_mean, min=self.lambd_min, max=self.lambd_max).detach()

    def update_rho(self, epoch):
        if self.rho_update:
            self.curr_constraints = self.curr_constraints / self.sample_num
            if (epoch + 1) % self.rho_step == 0 and self.prev_constraints is not None:
                self.rho = torch.where(
                    self.curr_constraints > (self.prev_constraints.clamp(min=0) * self.tao),
                    self.gamma * self.rho,
                    self.rho
                )
                self.rho = torch.clamp(self.rho, min=self.rho_min, max=self.rho_max).detach()
            self.prev_constraints = self.curr_constraints


def authors_validation_epoch(lagrangian, val_logits, epoch, batch_size=50):
    lagrangian.reset_update_lambd(epoch)
    for start in range(0, val_logits.shape[0], batch_size):
        lagrangian.update_lambd(val_logits[start:start + batch_size], epoch)
    lagrangian.set_lambd(epoch)
    lagrangian.update_rho(epoch)


def authors_loss(lagrangian, logits, labels):
    penalty, _ = lagrangian.get(logits)
    return F.cross_entropy(logits, labels) + penalty


# ---------------------------------------------------------------------------------------------------------------

K = 6
MARGIN = 4.0


def _batch(seed, n=64, scale=4.0):
    generator = torch.Generator().manual_seed(seed)
    logits = scale * torch.randn(n, K, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, K, (n,), generator=generator)
    return logits, labels


def _value_and_grad(fn, logits, labels):
    logits = logits.clone().requires_grad_(True)
    value = fn(logits, labels)
    (grad,) = torch.autograd.grad(value, logits)
    return value.detach(), grad


def _drifting_validation(update):
    """Validation logits whose spread grows from update to update (so constraints worsen for some classes, and ρ
    grows), then shrinks."""
    logits, _ = _batch(100 + update, n=120, scale=1.0)
    spread = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=torch.float64)
    factor = update if update <= 4 else 8 - update
    return logits * spread * (1.0 + factor)


def test_values_gradients_and_updates_match_the_authors_code():
    ours = CALSLoss(margin=MARGIN, rho_every=2, rho_max=3.0)
    theirs = AugLagrangianClass(num_classes=K, margin=MARGIN, rho_step=2, rho_max=3.0)
    rho_grew = False
    for epoch in range(7):
        logits, labels = _batch(epoch)
        value, grad = _value_and_grad(ours, logits, labels)
        expected_value, expected_grad = _value_and_grad(lambda z, y: authors_loss(theirs, z, y), logits, labels)
        torch.testing.assert_close(value, expected_value, rtol=0, atol=1e-6)
        torch.testing.assert_close(grad, expected_grad, rtol=0, atol=1e-6)
        assert abs(value.item() - F.cross_entropy(logits, labels).item()) > 1e-3  # the penalty counts

        val_logits = _drifting_validation(epoch + 1)
        val_labels = torch.zeros(val_logits.shape[0], dtype=torch.long)
        record = ours.update(val_logits, val_labels)
        authors_validation_epoch(theirs, val_logits, epoch)
        np.testing.assert_allclose(record["multipliers"], theirs.lambd.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(record["rho"], theirs.rho.numpy(), rtol=1e-12)
        np.testing.assert_allclose(record["val_constraints"], theirs.curr_constraints.numpy(), rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(ours.multipliers.numpy(), theirs.lambd.numpy(), rtol=1e-12, atol=1e-15)
        rho_grew |= bool((theirs.rho > 1.0).any())
    assert rho_grew and max(ours.multipliers.tolist()) > 0.1  # both updates did something
    assert len(ours.history) == 7 and ours.update_count == 7


def test_float32_logits_match_the_float64_computation():
    ours = CALSLoss(margin=MARGIN)
    ours.update(_drifting_validation(2), torch.zeros(120, dtype=torch.long))
    logits, labels = _batch(3)
    value64 = ours(logits, labels)
    value32 = ours(logits.float(), labels)
    assert value32.dtype == torch.float32
    assert abs(value32.item() - value64.item()) < 1e-5


def test_zero_multipliers_and_a_vanishing_rho_give_cross_entropy():
    logits, labels = _batch(4, scale=10.0)
    ce_value, ce_grad = _value_and_grad(F.cross_entropy, logits, labels)
    loss = CALSLoss(margin=MARGIN, lambda_min=0.0, lambda_max=0.0, rho_min=1e-12, rho_max=1e-12)
    value, grad = _value_and_grad(loss, logits, labels)
    torch.testing.assert_close(value, ce_value, rtol=0, atol=1e-9)
    torch.testing.assert_close(grad, ce_grad, rtol=0, atol=1e-9)
    # with ρ = 1 the same logits are penalised: the limit is not trivially met
    assert CALSLoss(margin=MARGIN, lambda_min=0.0)(logits, labels).item() > ce_value.item() + 0.1


def test_a_margin_beyond_every_logit_distance_gives_cross_entropy():
    logits, labels = _batch(5, scale=10.0)
    loss = CALSLoss(margin=1e4)
    loss.update(_drifting_validation(3), torch.zeros(120, dtype=torch.long))  # λ stays λ_min: nothing violated
    np.testing.assert_allclose(loss.multipliers.numpy(), loss.lambda_min, rtol=1e-12)
    ce_value, ce_grad = _value_and_grad(F.cross_entropy, logits, labels)
    value, grad = _value_and_grad(loss, logits, labels)
    torch.testing.assert_close(value, ce_value, rtol=0, atol=1e-9)  # the constant −λ² / 2ρ = −5e-13 aside
    torch.testing.assert_close(grad, ce_grad, rtol=0, atol=1e-12)


def test_reductions_ignore_index_and_extra_dimensions_follow_torch():
    loss = CALSLoss(margin=MARGIN)
    loss.update(_drifting_validation(2), torch.zeros(120, dtype=torch.long))
    logits, labels = _batch(6, n=12)
    mean = loss(logits, labels)
    state = loss.state_dict()
    per_sample = CALSLoss(margin=MARGIN, reduction="none")
    per_sample.load_state_dict(state)
    summed = CALSLoss(margin=MARGIN, reduction="sum")
    summed.load_state_dict(state)
    terms = per_sample(logits, labels)
    assert terms.shape == (12,)
    torch.testing.assert_close(terms.mean(), mean)
    torch.testing.assert_close(summed(logits, labels), 12 * mean)
    ignored = labels.clone()
    ignored[::3] = -100
    keep = ignored != -100
    torch.testing.assert_close(loss(logits, ignored), loss(logits[keep], labels[keep]))
    # (N, K, d) logits: each position a sample, as torch's cross_entropy reads them
    images = logits.reshape(3, 4, K).movedim(2, 1)
    torch.testing.assert_close(loss(images, labels.reshape(3, 4)), mean)
    # an update leaves ignored positions out
    a, b = CALSLoss(margin=MARGIN), CALSLoss(margin=MARGIN)
    val = _drifting_validation(3)
    val_labels = torch.zeros(120, dtype=torch.long)
    val_labels[:40] = -100
    assert a.update(val, val_labels).to_dict() == b.update(val[40:], val_labels[40:]).to_dict()


def test_state_dict_round_trip_and_refusals():
    loss = CALSLoss(margin=MARGIN, rho_every=1)
    for update in (1, 2, 3):
        loss.update(_drifting_validation(update), torch.zeros(120, dtype=torch.long))
    state = loss.state_dict()
    restored = CALSLoss(margin=MARGIN, rho_every=1)
    restored.load_state_dict(state)
    for name in ("multipliers", "rho", "previous_constraints"):
        assert torch.equal(getattr(restored, name), getattr(loss, name))
    assert restored.update_count == 3 and [r.to_dict() for r in restored.history] == [
        r.to_dict() for r in loss.history]
    # the next update is the same on both (the update count and previous constraints came back too)
    val = _drifting_validation(4)
    zeros = torch.zeros(120, dtype=torch.long)
    assert restored.update(val, zeros).to_dict() == loss.update(val, zeros).to_dict()
    # a fresh state (before any update) loads into a used loss
    fresh = CALSLoss(margin=MARGIN)
    used = CALSLoss(margin=MARGIN)
    used.update(val, torch.zeros(120, dtype=torch.long))
    used.load_state_dict(fresh.state_dict())
    assert used.multipliers.numel() == 0 and used.update_count == 0
    bad = dict(state)
    bad["multipliers"] = -state["multipliers"] - 1
    target = CALSLoss(margin=MARGIN)
    with pytest.raises(CheckpointError, match="multipliers to be at least 0"):
        target.load_state_dict(bad)
    assert target.multipliers.numel() == 0  # refused before anything was copied
    bad = dict(state)
    bad["rho"] = state["rho"][:3]
    with pytest.raises(CheckpointError, match="one value per class"):
        target.load_state_dict(bad)
    bad = dict(state)
    bad["_extra_state"] = {"format_version": 1, "update_count": 1, "history": [{"gammas": [1.0]}]}
    with pytest.raises(CheckpointError, match="multipliers, rho and val_constraints"):
        target.load_state_dict(bad)


def test_update_from_is_update_on_the_models_validation_logits():
    torch.manual_seed(0)
    model = torch.nn.Linear(5, K)
    batches = [(torch.randn(16, 5), torch.randint(0, K, (16,))) for _ in range(3)]
    with torch.no_grad():
        logits = torch.cat([10 * model(x) for x, _ in batches])
    model.weight.data.mul_(10)
    model.bias.data.mul_(10)
    a, b = CALSLoss(margin=1.0), CALSLoss(margin=1.0)
    record = a.update_from(model, batches)
    assert isinstance(record, MultiplierUpdate) and model.training
    np.testing.assert_allclose(record["multipliers"], b.update(logits, torch.cat([y for _, y in batches]))[
        "multipliers"], rtol=1e-6)


def test_missing_update_warns_and_names_the_multipliers():
    loss = CALSLoss(warn_after_steps=2)
    with pytest.warns(MissingUpdateWarning, match="multipliers stays what the last update \\(or lambda_min\\)"):
        for _ in range(2):
            loss(torch.zeros(1, 3), torch.tensor([0]))


@pytest.mark.parametrize(("options", "fragment"), [
    ({"margin": 0}, "Expected margin to be greater than 0"),
    ({"lambda_min": -1}, "Expected lambda_min to be at least 0"),
    ({"lambda_min": 1.0, "lambda_max": 0.5}, "Expected lambda_max to be at least lambda_min (1)"),
    ({"rho_min": 2.0, "rho_max": 1.0}, "Expected rho_max to be at least rho_min (2)"),
    ({"rho_every": 0}, "rho_every"),
    ({"tau": float("nan")}, "Expected tau to be a finite number"),
])
def test_bad_options_are_one_line_errors(options, fragment):
    with pytest.raises(InputError, match=fragment.replace("(", "\\(").replace(")", "\\)")):
        build_loss("cals", **options)


def test_bad_inputs_to_update_and_forward():
    loss = CALSLoss()
    loss.update(torch.randn(8, 3), torch.zeros(8, dtype=torch.long))
    with pytest.raises(InputError, match="Expected logits with 3 classes"):
        loss(torch.randn(2, 4), torch.tensor([0, 1]))
    with pytest.raises(InputError, match="Expected val_logits with 3 classes"):
        loss.update(torch.randn(2, 4), torch.tensor([0, 1]))
    with pytest.raises(InputError, match="finite"):
        loss.update(torch.tensor([[float("nan"), 0.0, 0.0]]), torch.tensor([0]))
    with pytest.raises(InputError, match="val_labels"):
        loss.update(torch.randn(2, 3), torch.tensor([0, 5]))


def test_records_read_back_by_their_kind():
    record = MultiplierUpdate(multipliers=[0.5], rho=[1.0], val_constraints=[float("inf")])
    assert record.to_dict() == {"multipliers": [0.5], "rho": [1.0], "val_constraints": [None]}
    assert isinstance(update_record_from_dict(record.to_dict()), MultiplierUpdate)
    binned = {"edges": [0.0, 1.0], "gammas": [1.0], "val_confidence": [0.5], "val_accuracy": [0.5], "counts": [2]}
    assert type(update_record_from_dict(binned)).__name__ == "BinUpdate"


@pytest.mark.slow  # importing lightning and transformers
def test_the_integrations_log_the_multipliers():
    pytest.importorskip("lightning", reason="the Lightning callback's logged values")
    pytest.importorskip("transformers", reason="the Hugging Face Trainer's logged values")
    from adacal.integrations.huggingface import gamma_logs
    from adacal.integrations.lightning import loss_state

    loss = CALSLoss(margin=MARGIN)
    assert loss_state(loss) == {"cals/updates": 0.0}
    record = loss.update(_drifting_validation(3), torch.zeros(120, dtype=torch.long))
    state = loss_state(loss)
    assert state["cals/lambda_max"] == max(record["multipliers"]) and state["cals/rho_mean"] == 1.0
    assert state["cals/updates"] == 1.0
    logs = gamma_logs(record, "cals")
    assert [logs[f"cals_lambda_{j}"] for j in range(K)] == record["multipliers"]
    assert [logs[f"cals_rho_{j}"] for j in range(K)] == record["rho"] and len(logs) == 2 * K


# ---------------------------------------------------------------------------------------------------------------
# adacal train


def test_print_config_flags_and_one_line_errors():
    result = runner.invoke(app, ["train", "--print-config", "--loss", "cals"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["loss_options"] == {
        "margin": 10.0, "lambda_min": 1e-6, "lambda_max": 1e6, "rho_min": 1.0, "rho_max": 10.0, "rho_every": 10,
        "rho_growth": 1.2, "tau": 0.9}
    result = runner.invoke(app, ["train", "--print-config", "--loss", "cals", "--margin", "5", "--cals-lambda-min",
                                 "0.001", "--cals-rho-every", "3", "--cals-rho-growth", "2", "--cals-tau", "0.5"])
    options = json.loads(result.stdout)["loss_options"]
    assert (options["margin"], options["lambda_min"], options["rho_every"], options["rho_growth"],
            options["tau"]) == (5.0, 0.001, 3, 2.0, 0.5)
    assert repr(build_loss("cals", **options)) == repr(CALSLoss(margin=5, lambda_min=0.001, rho_every=3,
                                                                 rho_growth=2, tau=0.5))
    for args, fragment in [
        (["--margin", "0"], "Expected --margin to be greater than 0 for --loss cals"),
        (["--cals-rho-every", "0"], "--cals-rho-every"),
        (["--cals-rho-min", "0"], "Expected --cals-rho-min to be positive"),
        (["--cals-tau", "-1"], "Expected --cals-tau to be >= 0"),
        (["--cals-lambda-min", "5", "--cals-lambda-max", "1"], "Expected --cals-lambda-max to be at least "
                                                                "--cals-lambda-min"),
    ]:
        one_line_error(runner.invoke(app, ["train", "--print-config", "--loss", "cals", *args]), fragment)
    one_line_error(runner.invoke(app, ["train", "--print-config", "--loss", "mbls", "--cals-tau", "1"]),
                   "--cals-tau does not apply to --loss mbls")


TINY_RUN = ["--loss", "cals", "--device", "cpu", "--train-subset", "96", "--batch-size", "32",
            "--margin", "0.3", "--cals-rho-every", "2", "--update-every", "2", "--quiet"]


@pytest.mark.slow
def test_a_resumed_run_ends_as_one_trained_straight_through(tmp_path):
    """Digits, mlp, 3 batches an epoch, λ updated every 2 batches (one update an epoch, ρ every second one): two
    epochs straight through, and one epoch then a resume to two, give the same weights, loss state and history."""
    from adacal.training.checkpoints import load_checkpoint

    out = tmp_path / "runs"
    straight = runner.invoke(app, ["train", *TINY_RUN, "--epochs", "2", "--out", str(out), "--name", "a"])
    assert straight.exit_code == 0, straight.output
    first = runner.invoke(app, ["train", *TINY_RUN[:-1], "--epochs", "1", "--out", str(out), "--name", "b"])
    assert first.exit_code == 0, first.output
    assert "  λ 1e-06.." in first.output  # the epoch line shows the multipliers' range
    resumed = runner.invoke(app, ["train", "--resume", str(out / "b"), "--epochs", "2", "--quiet"])
    assert resumed.exit_code == 0, resumed.output

    a, b = load_checkpoint(out / "a" / "checkpoints" / "last.pt"), load_checkpoint(out / "b" / "checkpoints" /
                                                                                   "last.pt")
    for key, value in a["model_state"].items():
        assert torch.equal(value, b["model_state"][key]), key
    for key in ("multipliers", "rho", "previous_constraints"):
        assert torch.equal(a["loss_state"][key], b["loss_state"][key]), key
    assert a["loss_state"]["_extra_state"] == b["loss_state"]["_extra_state"]
    assert a["loss_state"]["_extra_state"]["update_count"] == 2

    def history(name):
        lines = [json.loads(line) for line in (out / name / "history.jsonl").read_text().splitlines()]
        return [{k: v for k, v in line.items() if k != "seconds"} for line in lines]

    assert history("a") == history("b")
    updates = [line["cals"]["updates"] for line in history("a")]
    assert [len(u) for u in updates] == [1, 1]
    assert set(updates[0][0]) == {"multipliers", "rho", "val_constraints"}
    assert max(updates[1][0]["multipliers"]) > 1e-3  # margin 0.3 on digits: some constraints are violated
    assert max(updates[1][0]["rho"]) == 1.2  # and ρ grew at the second update, after the resume
    # a mid-epoch checkpoint whose update records are not this loss's kind is refused on resume, in one line
    from adacal.training.checkpoints import save_checkpoint

    binned = {"edges": [0.0, 1.0], "gammas": [1.0], "val_confidence": [0.5], "val_accuracy": [0.5], "counts": [2]}
    b["partial_epoch"] = {"epoch": 3, "batch": 1, "seen": 32, "correct": 0, "loss_sum": 70.0, "updates": [binned]}
    save_checkpoint(b, out / "b" / "checkpoints" / "interrupted.pt")
    one_line_error(runner.invoke(app, ["train", "--resume", str(out / "b"), "--epochs", "3", "--quiet"]),
                   "Expected the mid-epoch checkpoint's update records to be MultiplierUpdates of --loss cals, got "
                   "one without 'multipliers'.")


def test_history_lines_of_a_cals_run_are_checked_when_read(tmp_path):
    from adacal.sources import read_history

    path = tmp_path / "history.jsonl"
    update = {"multipliers": [0.5, "x"], "rho": [1.0, 1.0], "val_constraints": [0.0, 0.1]}
    path.write_text(json.dumps({"epoch": 1, "cals": {"updates": [update]}}) + "\n")
    with pytest.raises(InputError, match=r"cals\.updates\[0\]\.multipliers\[1\]"):
        read_history(path)
    update["multipliers"][1] = 2.0
    path.write_text(json.dumps({"epoch": 1, "cals": {"updates": [update]}}) + "\n")
    assert read_history(path)[0]["cals"]["updates"][0]["multipliers"] == [0.5, 2.0]
