"""Training losses by name: cross-entropy, focal family, CalFocal, AdaFocal and calibration baselines (Brier, MMCE,
label smoothing, and those published after AdaFocal: dual focal, MbLS, ACLS, CALS, MDCA, confidence penalty).

    from adacal.losses import build_loss
    loss_fn = build_loss("adafocal", n_bins=10)
    loss = loss_fn(logits, labels)                 # scalar mean, float32 even under autocast
    if loss_fn.needs_validation:
        record = loss_fn.update(val_logits, val_labels)   # or loss_fn.update_from(model, val_loader)

Every loss is an nn.Module with keyword-only options checked in __init__ (InputError on a bad value) and
`needs_validation` (True for losses that learn from the validation set: calfocal, adafocal, cals). Each takes what
`torch.nn.CrossEntropyLoss` takes: `ignore_index` (default -100), `reduction` and (N, K, d1, ...) logits.
"""

from adacal.losses.registry import LOSSES, build_loss, loss_names
from adacal.losses.adafocal import AdaFocalLoss, adafocal_gamma_update
from adacal.losses.base import CalibrationLoss
from adacal.losses.binned import MissingUpdateWarning, ValidationBinnedLoss
from adacal.losses.brier import BrierLoss, brier_score
from adacal.losses.calfocal import CalFocalLoss
from adacal.losses.cals import CALSLoss, cals_constraints, phr_penalty
from adacal.losses.confidence_penalty import ConfidencePenaltyLoss, softmax_entropy
from adacal.losses.dual_focal import DualFocalLoss, dual_focal_terms
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
from adacal.losses.margin import ACLSLoss, MbLSLoss, acls_penalty, margin_penalty
from adacal.losses.mdca import MDCALoss, mdca_penalty
from adacal.losses.mmce import MMCELoss, mmce_weighted

__all__ = [
    "LOSSES",
    "ACLSLoss",
    "AdaFocalLoss",
    "BrierLoss",
    "CALSLoss",
    "CalFocalLoss",
    "CalibrationLoss",
    "ConfidencePenaltyLoss",
    "CrossEntropyLoss",
    "DualFocalLoss",
    "FLSD53Loss",
    "FocalLoss",
    "InverseFocalLoss",
    "LabelSmoothingLoss",
    "MDCALoss",
    "MMCELoss",
    "MbLSLoss",
    "MissingUpdateWarning",
    "ValidationBinnedLoss",
    "acls_penalty",
    "adafocal_gamma_update",
    "brier_score",
    "build_loss",
    "cals_constraints",
    "dual_focal_terms",
    "loss_names",
    "margin_penalty",
    "mdca_penalty",
    "mmce_weighted",
    "phr_penalty",
    "signed_focal_loss",
    "signed_focal_terms",
    "softmax_entropy",
    "true_class_log_probs",
]
