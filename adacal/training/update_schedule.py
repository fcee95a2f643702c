"""When a loss that learns from validation (AdaFocal, CalFocal) updates: `--update-every`, parsed and checked.

- "epoch" (default): one update after every epoch, from the epoch's validation pass.
- an integer N: an update after every N training batches (plus none at the epoch end).
- "paper": the reference code's schedule, the same as "epoch:25,100:40,1": every epoch for epochs 1-25, every 100
  batches for epochs 26-40, then every batch.
- a general spec: comma-separated `RULE:LAST_EPOCH` segments, RULE being "epoch" or a batch count, each applying up to
  and including epoch LAST_EPOCH (1-based); the final segment may omit `:LAST_EPOCH` and applies to the rest.

Losses that do not learn from validation ignore the schedule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from adacal.errors import InputError


@dataclass(frozen=True)
class UpdateSchedule:
    """When a validation-driven loss updates: per segment, every epoch (None) or every N batches, up to an epoch."""

    segments: tuple[tuple[int | None, int | None], ...]  # (batches or None for "epoch", last epoch or None = forever)
    spec: str

    def batches_for_epoch(self, epoch: int) -> int | None:
        """Update every N batches in this (1-based) epoch, or None for one update at the epoch end."""
        for every, last in self.segments:
            if last is None or epoch <= last:
                return every
        return self.segments[-1][0]


PAPER_UPDATE_SPEC = "epoch:25,100:40,1"


def parse_update_every(value: Any) -> UpdateSchedule:
    """Parse --update-every: "epoch", an integer N, "paper", or a spec like "epoch:25,100:40,1"."""
    text = str(value).strip().lower()
    original = text
    if text == "paper":
        text = PAPER_UPDATE_SPEC
    problem = (
        f"Expected --update-every to be 'epoch', a positive number of batches, 'paper' or a spec like "
        f"'epoch:25,100:40,1', got {value!r}."
    )
    segments: list[tuple[int | None, int | None]] = []
    parts = text.split(",")
    previous_last = 0
    for index, part in enumerate(parts):
        match = re.fullmatch(r"\s*(epoch|\d+)\s*(?::\s*(\d+)\s*)?", part, re.ASCII)  # ASCII: not "٣"
        if not match:
            raise InputError(problem)
        rule, last = match.group(1), match.group(2)
        every = None if rule == "epoch" else int(rule)
        if every is not None and every < 1:
            raise InputError(problem)
        if last is None:
            if index != len(parts) - 1:
                raise InputError(
                    "Expected every --update-every segment but the last to end with ':LAST_EPOCH', got "
                    f"{part.strip()!r}."
                )
            segments.append((every, None))
        else:
            last_epoch = int(last)
            if last_epoch < 1:
                raise InputError(f"Expected the epochs in --update-every to be positive (epochs count from 1), got "
                                 f"{last_epoch} in {part.strip()!r}.")
            if last_epoch <= previous_last:
                raise InputError(
                    f"Expected the epochs in --update-every to increase, got {last_epoch} after {previous_last}."
                )
            previous_last = last_epoch
            segments.append((every, last_epoch))
    canonical = "epoch" if segments == [(None, None)] else original
    return UpdateSchedule(segments=tuple(segments), spec=canonical)


def idle_update_epochs(update_every: Any, *, epochs: int, batches_per_epoch: int) -> list[str]:
    """A note when --update-every asks for a γ-update every N batches in epochs whose N exceeds the batches an epoch
    has: the counter restarts each epoch, so those epochs update γ never (not even at their end), else nothing."""
    schedule = parse_update_every(update_every)
    epochs = int(epochs)
    # Segment by segment (not epoch by epoch: --epochs may be huge): the epochs first..last of each idle segment.
    # Past the last segment's epoch its rule goes on (`batches_for_epoch`): one more, open-ended segment of that rule.
    ranges: list[tuple[int, int]] = []
    first = 1
    for every, last in (*schedule.segments, (schedule.segments[-1][0], None)):
        if first > epochs:
            break
        end = epochs if last is None else min(int(last), epochs)
        if end >= first and every is not None and every > batches_per_epoch:
            if ranges and ranges[-1][1] == first - 1:
                ranges[-1] = (ranges[-1][0], end)
            else:
                ranges.append((first, end))
        first = max(first, end + 1)
    if not ranges:
        return []
    spans = [str(start) if start == stop else f"{start}-{stop}" for start, stop in ranges]
    several = len(ranges) > 1 or ranges[0][0] != ranges[0][1]
    shown = ", ".join(spans[:4]) + (", ..." if len(spans) > 4 else "")
    return [f"--update-every {schedule.spec} asks for more batches than an epoch has ({batches_per_epoch}) in "
            f"epoch{'s' if several else ''} {shown}: γ is not updated there (the count restarts every epoch); "
            f"use at most {batches_per_epoch}, or 'epoch'"]


__all__ = ["PAPER_UPDATE_SPEC", "UpdateSchedule", "idle_update_epochs", "parse_update_every"]
