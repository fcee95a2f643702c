"""`Trainer._step`, the one optimiser step of every batch, against the two branches it replaced (a plain backward and
step; a float16 GradScaler's scaled backward, unscale before clipping, step and update): the same parameters, optimiser
state and scaler state after a few steps, with and without --grad-clip, with and without a step of Inf gradients.

The GPU runs the scaled branch (float16 AMP); here it runs through torch's CPU GradScaler, so CI checks it too."""

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from adacal.training.loop import Trainer


def _reference_step(net, optimizer, scaler, objective, grad_clip):
    optimizer.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(objective).backward()
        if grad_clip is not None:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
    else:
        objective.backward()
        if grad_clip is not None:
            nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
        optimizer.step()


def _train(step, *, scaled, grad_clip, inf_at):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", enabled=scaled, init_scale=2.0**8, growth_interval=2)
    generator = torch.Generator().manual_seed(1)
    for batch in range(6):
        inputs, labels = torch.randn(8, 5, generator=generator), torch.randint(0, 3, (8,), generator=generator)
        loss = nn.functional.cross_entropy(net(inputs), labels)
        if batch == inf_at:
            loss = loss * float("inf")
        step(net, optimizer, scaler, loss, grad_clip)
    return [p.detach().clone() for p in net.parameters()], optimizer.state_dict(), scaler.state_dict()


def _one_step(net, optimizer, scaler, objective, grad_clip):
    trainer = SimpleNamespace(net=net, optimizer=optimizer, scaler=scaler, config=SimpleNamespace(grad_clip=grad_clip))
    Trainer._step(trainer, objective)


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("grad_clip", [None, 0.5])
@pytest.mark.parametrize("inf_at", [None, 2])
def test_one_step_path_equals_the_plain_and_the_scaled_branch(scaled, grad_clip, inf_at):
    def reference(net, optimizer, scaler, objective, clip):
        _reference_step(net, optimizer, scaler if scaled else None, objective, clip)

    expected = _train(reference, scaled=scaled, grad_clip=grad_clip, inf_at=inf_at)
    found = _train(_one_step, scaled=scaled, grad_clip=grad_clip, inf_at=inf_at)
    for want, got in zip(expected[0], found[0]):
        assert torch.equal(want.isnan(), got.isnan()) and torch.equal(want.nan_to_num(), got.nan_to_num())
    assert str(found[1]) == str(expected[1])
    assert found[2] == expected[2]
    if scaled and inf_at is not None:  # the scaler skipped that step and backed off its scale
        assert found[2]["scale"] < 2.0**8 * 2**3
