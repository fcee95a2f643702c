"""The learning-rate schedule: step decay by `lr_decay` at each milestone epoch (torch's MultiStepLR)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def build_scheduler(
    optimizer: torch.optim.Optimizer, milestones: Sequence[int], lr_decay: float
) -> torch.optim.lr_scheduler.MultiStepLR:
    """Stepped once per epoch: epochs 1..m1 use lr, m1+1..m2 use lr·decay, ... (milestones count completed epochs).

    Milestones at or beyond the last epoch simply never fire, so a run can be planned for a later `--resume`.
    Its state_dict (a Counter, ints and floats) loads under torch.load(weights_only=True).
    """
    return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=list(milestones), gamma=lr_decay)


def lr_at_epoch(base_lr: float, milestones: Sequence[int], lr_decay: float, epoch: int) -> float:
    """The learning rate of 1-based `epoch` under the schedule above (for reports and tests)."""
    passed = sum(1 for milestone in milestones if epoch > milestone)
    return base_lr * lr_decay**passed
