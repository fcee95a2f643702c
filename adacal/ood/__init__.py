"""Out-of-distribution detection from a classifier's logits: scores, AUROC / AUPR / FPR@95, before and after T-scaling.

The paper's test (AdaFocal §5, PAPER.md "OOD detection"): score every image by the entropy of its softmax, with the
in-distribution test set as negatives and the OOD set (SVHN, CIFAR-10-C Gaussian noise severity 5) as positives, and
report AUROC before and after temperature scaling. Higher score = more OOD throughout.

Two ways in, both ending in `detect_ood` (the results block of ood.json):
- from saved logits of any model (`load_ood_logits`), or
- from an adacal checkpoint or run folder (`ood_from_model`), which scores the in-distribution test set and the OOD set.
The math of each score and metric lives in `adacal.metrics.ood`; this package validates, wires and reports:
`scores` (scores, `detect_ood`, the temperature, saved logits) and `model` (from a checkpoint); `adacal ood` itself is
`adacal.commands.ood.run_ood`. Every public name is importable from `adacal.ood`.
"""

from adacal.ood.scores import (
    OOD_SCORES,
    DEFAULT_CORRUPTION,
    DEFAULT_SEVERITY,
    SEVERITIES,
    TEMPERATURE_SOURCES,
    FIT_OBJECTIVE,
    OOD_REPORT_PREFIX,
    check_score_names,
    ood_scores,
    detect_ood,
    ood_report,
    check_temperature,
    temperature_from_calibration,
    fit_temperature,
    temperature_edge,
    resolve_temperature,
    load_ood_logits,
    load_validation_predictions,
)
from adacal.ood.model import (
    check_ood_options,
    ood_report_name,
    ood_report_paths,
    run_ood_reports,
    resolve_checkpoint,
    ood_from_model,
)

__all__ = [
    "OOD_SCORES",
    "DEFAULT_CORRUPTION",
    "DEFAULT_SEVERITY",
    "SEVERITIES",
    "TEMPERATURE_SOURCES",
    "FIT_OBJECTIVE",
    "OOD_REPORT_PREFIX",
    "check_score_names",
    "ood_scores",
    "detect_ood",
    "ood_report",
    "check_temperature",
    "temperature_from_calibration",
    "fit_temperature",
    "temperature_edge",
    "resolve_temperature",
    "load_ood_logits",
    "load_validation_predictions",
    "check_ood_options",
    "ood_report_name",
    "ood_report_paths",
    "run_ood_reports",
    "resolve_checkpoint",
    "ood_from_model",
]
