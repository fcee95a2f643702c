"""What the tests of the losses checked against their authors' code share: a seeded float64 batch of logits and
labels, and a loss's value with its gradient in the logits. Test modules in tests/losses/ import it by name
(`from loss_batches import batch, value_and_grad`), as tests/integrations/ imports lightning_modules."""

from __future__ import annotations

import torch


def batch(n: int = 64, k: int = 10, scale: float = 2.0, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, k) float64 logits drawn from N(0, scale²) and (n,) labels in 0..k-1, the same for a seed."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, k, generator=generator, dtype=torch.float64) * scale
    return logits, torch.randint(0, k, (n,), generator=generator)


def value_and_grad(loss, logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`loss(logits, labels)` (the first item where it returns a tuple, as the authors' modules do) and its gradient
    in the logits; the logits given are not touched."""
    logits = logits.clone().requires_grad_(True)
    value = loss(logits, labels)
    value = value[0] if isinstance(value, tuple) else value
    return value, torch.autograd.grad(value, logits)[0]
