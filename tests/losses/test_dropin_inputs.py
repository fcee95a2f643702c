"""Every loss takes what torch.nn.CrossEntropyLoss takes: ignore_index, reduction, (N, K, d1, ...) logits.

Cross-entropy and label smoothing are checked against F.cross_entropy itself; the other losses against a flattened
reference: positions permuted to (N·d, K), the ignored ones dropped, the existing 2-D code run on what is left (one
row at a time for the per-position values, so the reference never uses the new reduction code)."""

import math

import pytest
import torch
import torch.nn.functional as F

from adacal.errors import InputError
from adacal.losses import AdaFocalLoss, CalFocalLoss, MMCELoss, build_loss, loss_names

PER_SAMPLE = ["ce", "focal", "flsd-53", "inverse-focal", "calfocal", "adafocal", "brier", "label-smoothing",
              "dual-focal", "mbls", "acls", "cals", "confidence-penalty"]
REDUCTIONS = ["mean", "sum", "none"]


def _segmentation(n=3, k=4, spatial=(5, 2), seed=0, ignored=0.3, ignore_index=-100):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, k, *spatial, generator=generator, dtype=torch.float64) * 2
    labels = torch.randint(0, k, (n, *spatial), generator=generator)
    drop = torch.rand(labels.shape, generator=generator) < ignored
    return logits, labels.masked_fill(drop, ignore_index)


def _flat(logits, labels):
    k = logits.shape[1]
    return logits.movedim(1, -1).reshape(-1, k), labels.reshape(-1)


def _fitted(name, **options):
    """A loss whose validation state is not the initial one (γ differs per bin), for the binned losses."""
    loss = build_loss(name, **options)
    if getattr(loss, "needs_validation", False):
        generator = torch.Generator().manual_seed(7)
        loss.update(torch.randn(200, 4, generator=generator) * 3, torch.randint(0, 4, (200,), generator=generator))
    return loss


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("spatial", [(), (6,), (5, 2)])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_ce_and_label_smoothing_equal_torch_values_and_gradients(reduction, spatial, ignore_index):
    logits, labels = _segmentation(spatial=spatial, ignore_index=ignore_index, seed=len(spatial))
    for name, extra in (("ce", {}), ("label-smoothing", {"alpha": 0.1})):
        ours_in = logits.clone().requires_grad_(True)
        ref_in = logits.clone().requires_grad_(True)
        loss = build_loss(name, ignore_index=ignore_index, reduction=reduction, **extra)
        ours = loss(ours_in, labels)
        ref = F.cross_entropy(ref_in, labels, ignore_index=ignore_index, reduction=reduction,
                              label_smoothing=extra.get("alpha", 0.0))
        assert ours.shape == ref.shape
        torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)
        weights = torch.rand(ref.shape, dtype=ref.dtype) if reduction == "none" else 1.0
        (ours * weights).sum().backward()
        (ref * weights).sum().backward()
        torch.testing.assert_close(ours_in.grad, ref_in.grad, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", PER_SAMPLE)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_every_loss_equals_the_flattened_reference_without_ignored_positions(name, reduction):
    logits, labels = _segmentation(seed=3)
    flat_logits, flat_labels = _flat(logits, labels)
    keep = flat_labels != -100
    assert 0 < int(keep.sum()) < keep.numel()
    ours_in = logits.clone().requires_grad_(True)
    ours = _fitted(name, reduction=reduction)(ours_in, labels)

    reference = _fitted(name)  # the 2-D mean of the existing code, on the kept rows only
    ref_in = flat_logits.clone().requires_grad_(True)
    rows = [reference(ref_in[i : i + 1], flat_labels[i : i + 1]) for i in keep.nonzero().flatten().tolist()]
    per_row = torch.stack(rows)
    if reduction == "mean":
        expected = reference(ref_in[keep], flat_labels[keep])
        torch.testing.assert_close(expected, per_row.mean(), rtol=0, atol=1e-12)  # the mean is of positions
    elif reduction == "sum":
        expected = per_row.sum()
    else:
        expected = torch.zeros(flat_labels.shape, dtype=per_row.dtype).masked_scatter(keep, per_row)
        expected = expected.reshape(labels.shape)
    assert ours.shape == expected.shape
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-10)
    weights = torch.rand(expected.shape, dtype=expected.dtype, generator=torch.Generator().manual_seed(1))
    (ours * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(ours_in.grad, ref_in.grad.reshape(3, 5, 2, 4).movedim(-1, 1), rtol=0, atol=1e-10)
    assert ours_in.grad.movedim(1, -1).reshape(-1, 4)[~keep].abs().max() == 0  # ignored positions: no gradient


def test_adafocal_bins_each_position_by_its_own_confidence():
    logits, labels = _segmentation(n=4, spatial=(7,), seed=5)
    flat_logits, flat_labels = _flat(logits, labels)
    keep = flat_labels != -100
    ours, reference = _fitted("adafocal", reduction="sum"), _fitted("adafocal")
    assert len(set(ours.gammas.tolist())) > 3  # the per-bin γ differ, so a wrong bin would change the value
    ours(logits, labels)
    reference(flat_logits[keep], flat_labels[keep])
    got, want = ours.pop_train_statistics(), reference.pop_train_statistics()
    assert got["train_counts"] == want["train_counts"] and sum(got["train_counts"]) == int(keep.sum())
    assert got["train_confidence"] == pytest.approx(want["train_confidence"], abs=1e-12)


def test_update_reads_positions_and_leaves_out_ignored_labels():
    logits, labels = _segmentation(n=20, spatial=(6,), seed=8)
    flat_logits, flat_labels = _flat(logits, labels)
    keep = flat_labels != -100
    for name in ("adafocal", "calfocal"):
        ours, reference = build_loss(name), build_loss(name)
        got, want = ours.update(logits, labels), reference.update(flat_logits[keep], flat_labels[keep])
        assert got.to_dict() == want.to_dict() and sum(got["counts"]) == int(keep.sum())


def test_every_position_ignored_matches_torch():
    logits = torch.randn(3, 4, 2, requires_grad=True)
    labels = torch.full((3, 2), -100)
    torch_mean = F.cross_entropy(logits, labels)
    assert math.isnan(torch_mean.item())
    for name in PER_SAMPLE + ["mmce", "mdca"]:
        mean = build_loss(name)(logits, labels)
        assert math.isnan(mean.item())
        (grad,) = torch.autograd.grad(mean, logits)
        assert torch.equal(grad, torch.zeros_like(logits))  # as torch: NaN value, zero gradient
        assert build_loss(name, reduction="sum")(logits, labels).item() == 0.0
        if name not in ("mmce", "mdca"):
            assert torch.equal(build_loss(name, reduction="none")(logits, labels), torch.zeros(3, 2))


def test_mmce_sum_is_the_mean_times_the_positions_kept():
    logits, labels = _segmentation(seed=11)
    flat_logits, flat_labels = _flat(logits, labels)
    keep = flat_labels != -100
    expected = MMCELoss()(flat_logits[keep], flat_labels[keep]) * int(keep.sum())
    torch.testing.assert_close(MMCELoss(reduction="sum")(logits, labels), expected, rtol=0, atol=1e-12)


def test_a_plain_batch_keeps_the_existing_code_bit_for_bit():
    generator = torch.Generator().manual_seed(2)
    logits, labels = torch.randn(64, 10, generator=generator), torch.randint(0, 10, (64,), generator=generator)
    assert build_loss("ce")(logits, labels).item() == F.cross_entropy(logits, labels).item()
    for name in loss_names():
        assert build_loss(name)(logits, labels).item() == build_loss(name, ignore_index=None)(logits, labels).item()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"reduction": "avg"}, r"Expected reduction to be one of 'mean', 'sum', 'none', got 'avg'\."),
        ({"ignore_index": 1.5}, r"Expected ignore_index to be an integer label \(or None\), got 1\.5"),
        ({"ignore_index": True}, r"Expected ignore_index to be an integer label"),
        ({"warn_after_steps": 0}, r"Expected warn_after_steps to be a positive integer, got 0: pass None"),
    ],
)
def test_bad_input_options_are_one_line_errors(options, match):
    with pytest.raises(InputError, match=match):
        AdaFocalLoss(**options)


def test_mmce_refuses_reduction_none_in_one_line():
    with pytest.raises(InputError, match=r"Expected reduction to be 'mean' or 'sum' for MMCELoss, got 'none'"):
        build_loss("mmce", reduction="none")


def test_labels_that_do_not_match_the_positions_are_refused():
    with pytest.raises(InputError, match=r"Expected labels of shape \(3, 5\) \(logits \(3, 4, 5\) without the class"):
        build_loss("focal")(torch.zeros(3, 4, 5), torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(InputError, match=r"labels in \[0, 3\], got values from 0 to 7"):
        build_loss("focal")(torch.zeros(2, 4), torch.tensor([0, 7]))  # a label neither a class nor ignore_index


@pytest.mark.parametrize(("typed", "name"), [("AdaFocal", "adafocal"), ("FLSD-53", "flsd-53"),
                                             ("Label_Smoothing", "label-smoothing"), (" CalFocal ", "calfocal")])
def test_registry_names_are_case_insensitive(typed, name):
    assert type(build_loss(typed)) is type(build_loss(name))


def test_an_unknown_name_in_capitals_still_gets_a_suggestion():
    with pytest.raises(InputError, match=r"Unknown loss 'AdaFocl'\. Did you mean 'adafocal'\?"):
        build_loss("AdaFocl")


def test_calfocal_takes_the_inputs_too():
    logits, labels = _segmentation(seed=4)
    assert CalFocalLoss(reduction="none")(logits, labels).shape == labels.shape


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cuda_adafocal_with_ignored_positions_matches_the_cpu(reduction):
    logits, labels = _segmentation(seed=9)
    logits = logits.float()
    cpu_loss, cuda_loss = _fitted("adafocal", reduction=reduction), _fitted("adafocal", reduction=reduction).cuda()
    cpu_in, cuda_in = logits.clone().requires_grad_(True), logits.cuda().requires_grad_(True)
    cpu_value, cuda_value = cpu_loss(cpu_in, labels), cuda_loss(cuda_in, labels.cuda())
    torch.testing.assert_close(cuda_value.cpu(), cpu_value, rtol=1e-5, atol=1e-6)
    cpu_value.sum().backward()
    cuda_value.sum().backward()
    torch.testing.assert_close(cuda_in.grad.cpu(), cpu_in.grad, rtol=1e-5, atol=1e-6)
    assert cuda_loss.pop_train_statistics()["train_counts"] == cpu_loss.pop_train_statistics()["train_counts"]


def test_the_trainer_records_the_registered_spelling_of_a_loss_name():
    from adacal.training.config import TrainConfig, check_names, resolve_config

    for typed, name in (("AdaFocal", "adafocal"), ("FLSD_53", "flsd-53")):
        resolved = resolve_config(TrainConfig(loss=typed, dataset="digits"))
        assert resolved.loss == name
        check_names(resolved)
    with pytest.raises(InputError, match=r"Unknown loss 'AdaFocl'\. Did you mean 'adafocal'\?"):
        check_names(resolve_config(TrainConfig(loss="AdaFocl", dataset="digits")))
