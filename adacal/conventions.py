"""Conventions shared across layers (metrics, losses, training, CLI). Imports nothing, so any module can use them,
the torch-free CLI included."""

DEFAULT_N_BINS = 15  # bins of the binned metrics (ECE, reliability diagrams) and of AdaFocal / CalFocal, as the paper
DEFAULT_RUNS_DIR = "runs"  # where `adacal train` puts run folders without --out (and where `ood` looks for examples)

# How each loss option (a keyword of the loss's __init__) is spelled on the command line: `adacal train` reads its
# loss flags through this table and error messages name what the user typed.
LOSS_OPTION_FLAGS = {
    "gamma": "--gamma",
    "lam": "--lam",
    "gamma_max": "--gamma-max",
    "gamma_min": "--gamma-min",
    "switch_threshold": "--switch-threshold",
    "n_bins": "--n-bins",
    "gamma_init": "--gamma-init",
    "weight": "--mmce-weight",
    "alpha": "--smoothing",
    "margin": "--margin",
    "margin_weight": "--margin-weight",
    "pos_lambda": "--acls-pos-lambda",
    "neg_lambda": "--acls-neg-lambda",
    "beta": "--beta",
    "base": "--mdca-base",
    "lambda_min": "--cals-lambda-min",
    "lambda_max": "--cals-lambda-max",
    "rho_min": "--cals-rho-min",
    "rho_max": "--cals-rho-max",
    "rho_every": "--cals-rho-every",
    "rho_growth": "--cals-rho-growth",
    "tau": "--cals-tau",
}

# The classification losses `mdca` adds its batch term to (`--mdca-base`, `MDCALoss(base=...)`).
MDCA_BASES = ("ce", "focal", "label-smoothing")

# Deprecated spellings of loss options → the option's name. `build_loss` and the binned losses accept them with a
# DeprecationWarning; config.json / checkpoints that say `num_bins` read as `n_bins`; `adacal train --num-bins` is a
# hidden alias of `--n-bins`.
LOSS_OPTION_ALIASES = {"num_bins": "n_bins"}
