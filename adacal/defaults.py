"""Defaults shared across layers (metrics, losses, training, CLI). Imports nothing, so any module can use them."""

DEFAULT_N_BINS = 15  # bins of the binned metrics (ECE, reliability diagrams) and of AdaFocal / CalFocal, as the paper
