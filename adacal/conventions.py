"""Conventions shared across layers (metrics, losses, training, CLI). Imports nothing, so any module can use them,
the torch-free CLI included."""

DEFAULT_N_BINS = 15  # bins of the binned metrics (ECE, reliability diagrams) and of AdaFocal / CalFocal, as the paper

# How each loss option (a keyword of the loss's __init__) is spelled on the command line: `adacal train` reads its
# loss flags through this table and error messages name what the user typed.
LOSS_OPTION_FLAGS = {
    "gamma": "--gamma",
    "lam": "--lam",
    "gamma_max": "--gamma-max",
    "gamma_min": "--gamma-min",
    "switch_threshold": "--switch-threshold",
    "num_bins": "--num-bins",
    "gamma_init": "--gamma-init",
    "weight": "--mmce-weight",
    "alpha": "--smoothing",
}
