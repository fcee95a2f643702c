"""Training losses by name: cross-entropy, focal family, CalFocal, AdaFocal and calibration baselines.

    from adacal.losses import build_loss
    loss_fn = build_loss("adafocal", n_bins=10)
    loss = loss_fn(logits, labels)                 # scalar mean, float32 even under autocast
    if loss_fn.needs_validation:
        record = loss_fn.update(val_logits, val_labels)   # or loss_fn.update_from(model, val_loader)

Every loss is an nn.Module with keyword-only options checked in __init__ (InputError on a bad value) and
`needs_validation` (True for losses that learn from the validation set: calfocal, adafocal). Each takes what
`torch.nn.CrossEntropyLoss` takes: `ignore_index` (default -100), `reduction` and (N, K, d1, ...) logits.
"""

from adacal.losses.registry import LOSSES, build_loss, loss_names
from adacal.losses.adafocal import AdaFocalLoss, adafocal_gamma_update
from adacal.losses.base import CalibrationLoss
from adacal.losses.binned import MissingUpdateWarning, ValidationBinnedLoss
from adacal.losses.brier import BrierLoss, brier_score
from adacal.losses.calfocal import CalFocalLoss
from adacal.losses.focal import (
    CrossEntropyLoss,
    FLSD53Loss,
    FocalLoss,
    InverseFocalLoss,
    signed_focal_loss,
    signed_focal_terms,
    true_class_log_probs,
)
from adacal.losses.label_smoothing import LabelSmoothingLoss
from adacal.losses.mmce import MMCELoss, mmce_weighted

__all__ = [
    "LOSSES",
    "AdaFocalLoss",
    "BrierLoss",
    "CalFocalLoss",
    "CalibrationLoss",
    "CrossEntropyLoss",
    "FLSD53Loss",
    "FocalLoss",
    "InverseFocalLoss",
    "LabelSmoothingLoss",
    "MMCELoss",
    "MissingUpdateWarning",
    "ValidationBinnedLoss",
    "adafocal_gamma_update",
    "brier_score",
    "build_loss",
    "loss_names",
    "mmce_weighted",
    "signed_focal_loss",
    "signed_focal_terms",
    "true_class_log_probs",
]
