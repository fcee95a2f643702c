"""Every adacal command as one library call — what the CLI calls, and what a user can call from Python:

- `adacal.commands.train.run_train` (`adacal train`);
- `adacal.commands.evaluate.run_evaluate` (`adacal evaluate`);
- `adacal.commands.calibrate.run_calibrate` (`adacal calibrate`);
- `adacal.commands.conformal.run_conformal` (`adacal conformal`);
- `adacal.commands.ood.run_ood` (`adacal ood`);
- `adacal.commands.shift.run_shift` (`adacal shift`);
- `adacal.commands.report.run_report` (`adacal report`: one HTML page of every section the input allows, with
  `report_sections` building each section);
- `adacal.commands.plot.run_plot_reliability`, `run_plot_adafocal` (gamma, correspondence), `run_plot_curves`,
  `run_plot_roc`, `run_plot_shift` (`adacal plot ...`);
- `adacal.commands.inputs`: what a path given to a command stands for (a predictions file, a checkpoint, a run
  folder), resolved to the predictions the command needs.

Each `run_*` checks everything cheap first, never prints, and returns a record of what it did (the report, the files
written). The modules are imported on first use, so `import adacal.commands` stays light.

This package is the CLI's one door into the library: the few names the CLI needs to show results (metric display
names, the reading options, whether an output is standard output) are reached through it as well (`SHOWN`).
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"run_train": "train", "run_evaluate": "evaluate", "run_calibrate": "calibrate", "run_ood": "ood",
          "run_conformal": "conformal", "ConformalRun": "conformal",
          "EvaluationRun": "evaluate", "CalibrationRun": "calibrate", "OodRun": "ood",
          "run_plot_reliability": "plot", "run_plot_adafocal": "plot", "run_plot_curves": "plot",
          "run_plot_roc": "plot", "run_plot_shift": "plot", "PlotRun": "plot", "run_shift": "shift",
          "ShiftRun": "shift", "run_report": "report", "ReportRun": "report"}

# What the CLI shows and parses, from where it is defined (loaded on first use, like the commands).
SHOWN = {
    "display_name": "adacal.metrics.calibration", "metric_key": "adacal.metrics.calibration",
    "resolve_metric_names": "adacal.metrics.calibration", "FRACTION_METRICS": "adacal.metrics.calibration",
    "is_fraction_metric": "adacal.metrics.calibration",
    "ReadOptions": "adacal.sources.formats", "is_stdout": "adacal.writing", "check_name_lengths": "adacal.writing",
    "EVALUATE_FILE": "adacal.runs", "UPDATES_KEY": "adacal.losses.records", "BinnedLossEpoch": "adacal.losses.records",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"adacal.commands.{_HOMES[name]}"), name)
    if name in SHOWN:
        return getattr(importlib.import_module(SHOWN[name]), name)
    raise AttributeError(f"module 'adacal.commands' has no attribute {name!r}")
