"""Every registered loss builds, runs and back-propagates; names and options fail with one clear sentence."""

import pytest
import torch

from adacal.errors import InputError, UnknownNameError
from adacal.losses import LOSSES, AdaFocalLoss, CalibrationLoss, build_loss, loss_names

NAMES = ["ce", "focal", "flsd-53", "inverse-focal", "calfocal", "adafocal", "brier", "mmce", "label-smoothing",
         "dual-focal", "mbls", "acls", "cals", "mdca", "confidence-penalty"]


def _batch(n=64, k=10, seed=0, scale=2.0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, k, generator=generator) * scale, torch.randint(0, k, (n,), generator=generator)


def test_all_paper_losses_are_registered():
    assert sorted(NAMES) == loss_names() == LOSSES.names()


@pytest.mark.parametrize("name", NAMES)
def test_every_loss_runs_forward_and_backward_with_finite_values(name):
    loss = build_loss(name)
    assert isinstance(loss, CalibrationLoss) and isinstance(loss, torch.nn.Module)
    assert loss.needs_validation == (name in ("calfocal", "adafocal", "cals"))
    if loss.needs_validation:
        record = loss.update(*_batch(n=300, seed=1))
        assert record == loss.history[-1] and isinstance(record, loss.record_type)
        assert len(record["edges"]) == 16 if "edges" in record else len(record["multipliers"]) == 10
    logits, labels = _batch()
    logits.requires_grad_(True)
    value = loss(logits, labels)
    assert value.ndim == 0 and value.dtype == torch.float32
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


@pytest.mark.parametrize("name", NAMES)
def test_under_cpu_autocast_the_loss_is_computed_in_float32(name):
    loss = build_loss(name)
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 10)
    inputs, labels = torch.randn(32, 8), torch.randint(0, 10, (32,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = layer(inputs)
        assert logits.dtype == torch.bfloat16
        value = loss(logits, labels)
    assert value.dtype == torch.float32
    torch.testing.assert_close(value, loss(logits.float(), labels))
    value.backward()
    assert torch.isfinite(layer.weight.grad).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", NAMES)
def test_every_loss_runs_on_cuda_under_autocast(name):
    loss = build_loss(name).cuda()
    logits, labels = _batch()
    if loss.needs_validation:
        loss.update(*[t.cuda() for t in _batch(n=300, seed=1)])
        cpu_loss = build_loss(name)
        cpu_loss.update(*_batch(n=300, seed=1))
        torch.testing.assert_close(loss.bin_edges.cpu(), cpu_loss.bin_edges, rtol=0, atol=1e-6)
    logits = logits.cuda().half().requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.float16):
        value = loss(logits, labels.cuda())
    assert value.dtype == torch.float32
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()
    if isinstance(loss, AdaFocalLoss):
        assert sum(loss.pop_train_statistics()["train_counts"]) == 64


def test_unknown_name_suggests_the_closest_and_lists_choices():
    expected = (r"Unknown loss 'adafocl'\. Did you mean 'adafocal'\? Choices: acls, adafocal, brier, calfocal, "
                r"cals, ce, conf")
    with pytest.raises(UnknownNameError, match=expected):
        build_loss("adafocl")


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("focal", {"gamma": -1}, r"Expected gamma to be at least 0, got -1\."),
        ("inverse-focal", {"gamma": float("inf")}, "Expected gamma to be a finite number"),
        ("label-smoothing", {"alpha": 1.5}, r"Expected alpha to be between 0 and 1, got 1\.5\."),
        ("mmce", {"weight": -2}, r"Expected weight to be at least 0, got -2\."),
        ("adafocal", {"n_bins": 0}, r"Expected n_bins to be a positive integer, got 0\."),
        (
            "adafocal",
            {"gamma_max": 1, "gamma_min": 2},
            r"Expected gamma_max to be greater than gamma_min, got gamma_max=1 and gamma_min=2\.",
        ),
        ("calfocal", {"mode": "per-sample"}, "Expected mode to be one of 'bin', 'sample'"),
        ("ce", {"gamma": 2}, r"Loss 'ce' does not take option\(s\) gamma; it takes: ignore_index, reduction\."),
        ("focal", {"gama": 2}, r"does not take option\(s\) gama; it takes: gamma, ignore_index, reduction\."),
    ],
)
def test_bad_options_raise_input_error(name, options, match):
    with pytest.raises(InputError, match=match):
        build_loss(name, **options)


@pytest.mark.parametrize(
    ("logits", "labels", "match"),
    [
        (torch.zeros(4), torch.zeros(4, dtype=torch.long), r"logits of shape \(N, K\)"),
        (torch.zeros(4, 1), torch.zeros(4, dtype=torch.long), r"K >= 2, got shape \(4, 1\)"),
        (torch.zeros(4, 3), torch.zeros(3, dtype=torch.long), r"labels of shape \(4,\) to match logits"),
        (torch.zeros(4, 3), torch.zeros(4), "labels to be an integer tensor"),
        (torch.zeros(4, 3, dtype=torch.long), torch.zeros(4, dtype=torch.long), "floating-point"),
        # With ignore_index=None every label must be a class: -100 is refused with a hint (the default skips it).
        (torch.zeros(4, 3), torch.tensor([0, -100, 1, 2]),
         r"labels in \[0, 2\], got values from -100 to 2: -100 marks"),
        (torch.zeros(4, 3), torch.tensor([0, 3, 1, 2]), r"labels in \[0, 2\], got values from 0 to 3"),
        (torch.zeros(4, 3), torch.tensor([0, 1, 2, 3], dtype=torch.uint8),
         r"labels in \[0, 2\], got values from 0 to 3"),
    ],
)
def test_bad_batches_raise_input_error(logits, labels, match):
    for name in NAMES:
        with pytest.raises(InputError, match=match):
            build_loss(name, ignore_index=None)(logits, labels)
