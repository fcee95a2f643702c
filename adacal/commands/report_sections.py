"""The sections of `adacal report`, one function each, every one calling what its own command calls (never a metric
of its own): `run_evaluate` for the metrics and selective prediction, `adacal.plots` for the figures (rendered in
memory, `adacal.plots.style.render_figure`), `compare_calibrators` for the post-hoc comparison, `ConformalPredictor`
and `coverage_report` for the conformal sets.

Each builder takes a `ReportInput` and returns an `adacal.report_page.Section`: done, with its tables, figures and
the numbers behind them (for report.json), or skipped, with the reason (an `InputError` the input raised, one line).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import DataUnavailableError, InputError
from adacal.report_page import Picture, Section, Table, skipped

SELECTIVE_METRICS = "aurc,e-aurc,augrc,auroc-correct,auprc-errors,risk@80,coverage@5"
CONFORMAL_SCORES = ("thr", "aps")
CONFORMAL_ALPHA = 0.1
GAMMA_PANELS = 5  # bins drawn in the γ figure (one panel each)
SHIFT_QUICK_LIMIT = 500  # --quick: a seeded random 500 of the test images, the same in every shifted set
OOD_ROC_CORRUPTION = "gaussian_noise"  # the OOD set of the paper's CIFAR-10-C entry: its ROC at every severity
DPI = 110  # figures embedded in the page: sharp on screen, small in the file


@dataclass
class ReportInput:
    """One input of the report and the options every section reads it with; what one section read (the validation
    and test predictions) is kept for the next (`cache`)."""

    path: Path
    val: Path | None = None
    options: Any = None
    bootstrap: int = 1000
    band_samples: int = 1000
    seed: int = 0
    method: str = "all"
    quick: bool = False
    device: str = "auto"
    # the data folder a run's model reads its test split (and Hendrycks' files) from; None: the one its checkpoint
    # records (a moved data folder needs it)
    data_dir: Path | None = None
    # step(what): told what a long section is doing now (the shifted set being scored), for the progress bar
    step: Any = None
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def run_root(self) -> Path | None:
        from adacal.runs import is_run_folder

        return self.path if self.path.is_dir() and is_run_folder(self.path) else None

    def shown(self) -> str:
        """The input as a shell argument (with --val when given)."""
        return shlex.quote(str(self.path)) + (f" --val {shlex.quote(str(self.val))}" if self.val else "")

    def calibration_input(self) -> Any:
        """The validation and test predictions (`resolve_calibration_input`), read once; an InputError once is an
        InputError every time it is asked for."""
        if "calibration" not in self.cache:
            from adacal.commands.inputs import resolve_calibration_input
            from adacal.sources import ReadOptions

            try:
                self.cache["calibration"] = resolve_calibration_input(self.path, val=self.val,
                                                                      options=self.options or ReadOptions(),
                                                                      data_dir=self.data_dir, device=self.device)
            except InputError as exc:
                self.cache["calibration"] = exc
        found = self.cache["calibration"]
        if isinstance(found, InputError):
            raise found
        return found


def section_command(key: str, item: ReportInput) -> str:
    """The command line (or Python call) that reproduces section `key` of `item` alone."""
    path = shlex.quote(str(item.path))
    val = f", val={str(item.val)!r}" if item.val else ""
    return {
        "evaluate": f"adacal evaluate {path} --bootstrap {item.bootstrap} --seed {item.seed}",
        "reliability": f"adacal plot reliability {path} --bands consistency --band-samples {item.band_samples} "
                       f"--seed {item.seed}",
        "calibrate": f"adacal calibrate {item.shown()} --method {item.method} --seed {item.seed}",
        "selective": f"adacal evaluate {path} --metrics {SELECTIVE_METRICS} --bootstrap {item.bootstrap} --seed "
                     f"{item.seed}\nadacal plot risk-coverage {path}",
        "conformal": "python -c \"from adacal.commands.inputs import resolve_calibration_input as r; "
                     "from adacal.conformal import ConformalPredictor as C, coverage_report as c; "
                     f"i = r({str(item.path)!r}{val}); "
                     f"print(c(C('aps', alpha={CONFORMAL_ALPHA}).fit(i.val.logits, i.val.labels)"
                     ".predict_sets(i.test.logits), i.test.labels))\"",
        "curves": f"adacal plot curves {path}",
        "adafocal": f"adacal plot gamma {path}",
        "ood": (f"adacal ood --model {path} --out cifar10-c --corruption {OOD_ROC_CORRUPTION} --severity 5"
                + _shift_options(item)) if item.run_root else
               f"adacal ood --in-preds {path} --out-preds OOD_PREDICTIONS",
        "shift": f"adacal shift {path}{_shift_options(item)}\nadacal plot shift {path}",
    }[key]


def _shift_options(item: ReportInput) -> str:
    data = f" --data-dir {shlex.quote(str(item.data_dir))}" if item.data_dir is not None else ""
    return data + (f" --limit {SHIFT_QUICK_LIMIT} --seed {item.seed}" if item.quick else "")


def guarded(key: str, title: str, build: Any, item: ReportInput) -> Section:
    """`build(item)`, or the section skipped with the one-line reason the input raised."""
    try:
        return build(item)
    except (InputError, DataUnavailableError) as exc:
        return skipped(key, title, section_command(key, item), str(exc))


def _picture(figure: Any, alt: str, caption: str = "") -> Picture:
    from adacal.plots.style import render_figure

    return Picture(alt=alt, png=render_figure(figure, dpi=DPI), caption=caption)


def _value(name: str, value: Any) -> str:
    from adacal.metrics.calibration import is_fraction_metric

    if value is None:
        return "–"
    if is_fraction_metric(name):
        return f"{100 * value:.2f} %"
    return f"{value:.4f}"


def metrics_table(report: dict[str, Any], caption: str) -> Table:
    """An evaluate report's metrics as rows: name, value and (with a bootstrap) its interval; an ECE-DEBIAS clipped
    at 0 reads "≤ 0", as in every table (`adacal.commands.evaluate.debias_below_resolution`)."""
    from adacal.commands.evaluate import debias_below_resolution
    from adacal.metrics.calibration import display_name, metric_key

    config, results = report["config"], report["results"]
    intervals = results.get("bootstrap") or {}
    header = ["metric", "value"] + ([f"{round(100 * config['confidence'])} % CI"] if intervals else [])
    rows = []
    for name in config["metrics"]:
        key = metric_key(name)
        if key not in results["metrics"]:
            continue
        clipped = key == "ece_debias" and debias_below_resolution(results)
        row = [display_name(name), "≤ 0" if clipped else _value(name, results["metrics"][key])]
        if intervals:
            ci = intervals.get(key)
            row.append(f"{_value(name, ci['low'])} – {_value(name, ci['high'])}" if ci else "–")
        rows.append(row)
    return Table(caption, header, rows)


def evaluate_section(item: ReportInput) -> Section:
    """The metrics `adacal evaluate` reports, with their bootstrap intervals and the lines naming their Brier / ECE
    conventions (`adacal.commands.evaluate.convention_lines`)."""
    from adacal.commands.evaluate import convention_lines, run_evaluate

    command = section_command("evaluate", item)
    run = run_evaluate(item.path, bootstrap=item.bootstrap, seed=item.seed, options=item.options)
    item.cache["evaluation"] = run
    results = run.report["results"]
    numbers = {"config": run.report["config"], "metrics": results["metrics"],
               "bootstrap": results.get("bootstrap"), "n_samples": results.get("n_samples"),
               "num_classes": results.get("num_classes"), "input": results.get("input"),
               "conventions": results.get("conventions")}
    return Section("evaluate", "Calibration metrics", command,
                   tables=[metrics_table(run.report, f"Test predictions ({results.get('n_samples')} samples)")],
                   notes=list(dict.fromkeys(convention_lines(results) + run.reading + run.notes)), numbers=numbers)


def _bins_numbers(panel: Any) -> dict[str, Any]:
    stats = panel.stats
    numbers = {"label": panel.label, "edges": stats.edges, "counts": stats.counts,
               "mean_confidence": stats.mean_confidence, "accuracy": stats.accuracy,
               "ece_em": panel.ece_em, "ece_ew": panel.ece_ew}
    if panel.bands is not None:
        numbers["bands"] = {"kind": panel.bands.kind, "level": panel.bands.level, "lower": panel.bands.lower,
                            "upper": panel.bands.upper, "n_samples": panel.bands.n_samples}
    return numbers


def reliability_section(item: ReportInput) -> Section:
    """The reliability diagram with consistency bands, as `adacal plot reliability --bands consistency` draws it."""
    from adacal import plots
    from adacal.commands.plot import held_warnings

    command = section_command("reliability", item)
    notes: list[str] = []
    request = plots.ReliabilityRequest([item.path], bands="consistency", band_samples=item.band_samples,
                                       seed=item.seed, options=item.options)
    with held_warnings():
        panels = plots.reliability_inputs(request, notes_out=notes)
        figure = plots.reliability_diagram(panels)
        picture = _picture(figure, "Reliability diagram of the test predictions: accuracy per confidence bin against "
                                   "the diagonal, with 90 % consistency bands and the confidence histogram beneath")
    return Section("reliability", "Reliability diagram", command, pictures=[picture], notes=notes,
                   numbers={"panels": [_bins_numbers(panel) for panel in panels]})


def _read_kind(predictions: Any) -> str:
    record = getattr(predictions, "interpretation", None)
    return record.scores_kind if record is not None else "auto"


def calibrate_section(item: ReportInput) -> Section:
    """The post-hoc comparison `adacal calibrate --method all` runs, the calibrator it selects and the reliability
    diagram of the test predictions before and after it."""
    from adacal import plots
    from adacal.calibrators import compare_calibrators
    from adacal.calibrators.compare import DEFAULT_FOLDS, DEFAULT_SELECTION_METRIC
    from adacal.commands.calibrate import calibration_methods, convergence_notes, ece_noise_notes
    from adacal.commands.plot import held_warnings
    from adacal.evaluation import calibrated_probs
    from adacal.plots.reliability_diagrams import panel_from_scores

    methods = calibration_methods(item.method)
    inputs = item.calibration_input()
    objective = "nll" if "temperature" in methods else None
    comparison = compare_calibrators(
        inputs.val.logits, inputs.val.labels, inputs.test.logits, inputs.test.labels, methods=methods,
        objective=objective, n_bins=DEFAULT_N_BINS, folds=DEFAULT_FOLDS, metric=DEFAULT_SELECTION_METRIC,
        seed=item.seed, scores_kind=_read_kind(inputs.val), test_scores_kind=_read_kind(inputs.test),
    )
    results = comparison.results
    best = comparison.best
    rows, chosen = [], []
    selection = results["selection"]
    cv = selection.get("cv_scores") or {}
    for index, (name, entry) in enumerate(results["calibrators"].items()):
        before, after = entry.get("test_pre") or {}, entry.get("test_post") or {}
        if name == best:
            chosen.append(index)
        rows.append([name + (" (selected)" if name == best else ""),
                     f"{cv[name]:.4f}" if cv.get(name) is not None else "–",
                     _value("ece-em", before.get("ece_em")), _value("ece-em", after.get("ece_em")),
                     _value("nll", after.get("nll")), _value("error", after.get("error"))])
    metric = selection.get("metric") or "nll"
    table = Table(f"Calibrators fitted on {len(inputs.val)} validation samples, measured on {len(inputs.test)} test "
                  "samples", ["calibrator", f"CV {metric.upper()}", "test ECE-EM before", "test ECE-EM after",
                               "test NLL after", "test error after"], rows, chosen)
    with held_warnings():
        test_kind = _read_kind(inputs.test)
        probs = calibrated_probs(comparison.fitted[best], inputs.test.logits, scores_kind=test_kind)
        panels = [panel_from_scores(inputs.test.logits, inputs.test.labels, label="before", scores_kind=test_kind),
                  panel_from_scores(probs, inputs.test.labels, label=f"after {best}", scores_kind="probs")]
        picture = _picture(plots.reliability_diagram(panels),
                           f"Reliability diagrams of the test predictions before and after the selected calibrator, "
                           f"{best}")
    command = section_command("calibrate", item)
    reason = selection.get("reason")
    notes = [f"selected: {best}" + (f" ({reason})" if reason else ""), *convergence_notes(results),
             *ece_noise_notes(results)]
    return Section("calibrate", "Post-hoc calibration", command, tables=[table], pictures=[picture], notes=notes,
                   numbers={"methods": methods, "best": best, "results": results,
                            "after": [_bins_numbers(panel) for panel in panels]})


def selective_section(item: ReportInput) -> Section:
    """Selective prediction: AURC and its kin with bootstrap intervals (`adacal evaluate --metrics ...`) and the
    risk–coverage curve (`adacal plot risk-coverage`)."""
    from adacal.commands.evaluate import run_evaluate
    from adacal.commands.plot import held_warnings
    from adacal.plots.risk_coverage import aurc_of_curve, risk_coverage_figure, risk_coverage_inputs

    command = section_command("selective", item)
    run = run_evaluate(item.path, metrics=SELECTIVE_METRICS, bootstrap=item.bootstrap, seed=item.seed,
                       options=item.options)
    with held_warnings():
        curves = risk_coverage_inputs([(item.path, run.source.predictions)])
        picture = _picture(risk_coverage_figure(curves), "Risk–coverage curve of the test predictions: the error "
                                                         "among the most confident samples kept, against the share "
                                                         "kept, with the oracle and random references")
    results = run.report["results"]
    numbers = {"metrics": results["metrics"], "bootstrap": results.get("bootstrap"),
               "curves": [{"label": curve.label, "coverage": curve.curve.coverage, "risk": curve.curve.risk,
                           "aurc": aurc_of_curve(curve.curve)} for curve in curves]}
    return Section("selective", "Selective prediction", command, pictures=[picture], numbers=numbers,
                   tables=[metrics_table(run.report, "Ranking right above wrong by confidence")])


def conformal_section(item: ReportInput) -> Section:
    """Split-conformal prediction sets at α = 0.1 with the thr and aps scores, fitted on the validation predictions,
    their coverage measured on the test predictions (`adacal.conformal`)."""
    from adacal.conformal import ConformalPredictor, coverage_report

    inputs = item.calibration_input()
    rows, numbers = [], {"alpha": CONFORMAL_ALPHA, "scores": {}}
    for score in CONFORMAL_SCORES:
        predictor = ConformalPredictor(score, alpha=CONFORMAL_ALPHA, seed=item.seed).fit(
            inputs.val.logits, inputs.val.labels, scores_kind=_read_kind(inputs.val))
        sets = predictor.predict_sets(inputs.test.logits, scores_kind=_read_kind(inputs.test))
        coverage = coverage_report(sets, inputs.test.labels)
        numbers["scores"][score] = {"predictor": predictor.to_dict(), "coverage": coverage}
        low, high = coverage["coverage_interval"]
        rows.append([score, f"{100 * coverage['coverage']:.2f} %", f"{100 * low:.2f} – {100 * high:.2f} %",
                     f"{coverage['mean_set_size']:.2f}", f"{100 * coverage['singleton_rate']:.1f} %",
                     f"class {coverage['worst_class']['class']}: {100 * coverage['worst_class']['coverage']:.1f} %"])
    table = Table(f"Sets fitted on {len(inputs.val)} validation samples for ≥ {100 * (1 - CONFORMAL_ALPHA):.0f} % "
                  f"coverage, measured on {len(inputs.test)} test samples",
                  ["score", "coverage", "95 % CI", "mean set size", "singletons", "worst class"], rows)
    command = section_command("conformal", item)
    return Section("conformal", "Conformal prediction sets", command, tables=[table], numbers=numbers)


def _run_only(item: ReportInput, what: str) -> Path:
    root = item.run_root
    if root is None:
        raise InputError(f"Expected a run folder written by 'adacal train' for {what}, got {item.path.name}, which "
                         "holds no training history.")
    return root


def curves_section(item: ReportInput) -> Section:
    """The run's training curves (error and ECE-EM per epoch), as `adacal plot curves` draws them."""
    from adacal import plots
    from adacal.commands.plot import held_warnings
    from adacal.plots.curves import choose_curve_split

    root = _run_only(item, "the training curves")
    with held_warnings():
        inputs = plots.curve_inputs([root])
        figure = plots.training_curves(inputs.runs, losses=inputs.losses)
        picture = _picture(figure, "Training curves: error and ECE-EM per epoch")
    split = choose_curve_split(inputs.runs, "auto")
    numbers: dict[str, Any] = {"split": split, "lines": {}}
    for label, histories in inputs.runs.items():
        numbers["lines"][label] = {}
        for metric in ("error", "ece_em"):
            curve = plots.summarize_curve(histories, split, metric)
            numbers["lines"][label][metric] = {"epochs": curve.epochs, "mean": curve.mean}
    return Section("curves", "Training curves", section_command("curves", item), pictures=[picture],
                   notes=inputs.notes + plots.curve_notes(inputs.runs, split="auto", folders=inputs.folders),
                   numbers=numbers)


def gamma_bins(n_bins: int) -> list[int]:
    """The bins the page draws γ for: at most GAMMA_PANELS, evenly spaced from the first to the last (every bin's
    numbers go to report.json).

        >>> gamma_bins(15), gamma_bins(3)
        ([0, 4, 7, 10, 14], [0, 1, 2])
    """
    return sorted({round(i * (n_bins - 1) / (GAMMA_PANELS - 1)) for i in range(GAMMA_PANELS)}) if n_bins > \
        GAMMA_PANELS else list(range(n_bins))


def adafocal_section(item: ReportInput) -> Section:
    """AdaFocal's γ and E_val per validation bin over training, as `adacal plot gamma` draws them."""
    from adacal import plots
    from adacal.commands.plot import held_warnings

    root = _run_only(item, "AdaFocal's γ dynamics")
    _, history = plots.read_adafocal_run(root, "gamma")
    with held_warnings():
        series = plots.adafocal_series(history)
        bins = gamma_bins(series.n_bins)
        picture = _picture(plots.gamma_dynamics(history, bins),
                           f"AdaFocal's dynamics in validation bins {', '.join(map(str, bins))} of {series.n_bins}: "
                           "E_val, γ and the bin boundaries at each update")
    numbers = {"update_epochs": series.update_epochs, "edges": series.edges, "gammas": series.gammas,
               "calibration_error": series.calibration_error, "counts": series.counts}
    command = f"{section_command('adafocal', item)} --bins {','.join(map(str, bins))}"
    return Section("adafocal", "AdaFocal γ dynamics", command,
                   pictures=[picture], numbers=numbers)


def shift_run(item: ReportInput) -> Any:
    """The run's model scored once on every generated shifted set (`run_shift`, its logits kept, nothing written
    into the run folder; --quick: a seeded `SHIFT_QUICK_LIMIT` of the test images), shared by the shift and OOD
    sections; an error once is that error every time it is asked for."""
    if "shift" not in item.cache:
        from adacal.commands.shift import run_shift

        root = item.run_root
        if root is None:
            raise InputError("needs a run folder (a model to run on the generated shift sets), and a predictions "
                             "file holds none")

        def progress(done: int, total: int, what: str) -> None:
            if item.step is not None and done < total:
                item.step(f"{what} ({done + 1}/{total})")

        try:
            item.cache["shift"] = run_shift(root, limit=SHIFT_QUICK_LIMIT if item.quick else None, seed=item.seed,
                                            data_dir=item.data_dir, device=item.device, download=False,
                                            write=False, keep_logits=True, progress=progress)
        except (InputError, DataUnavailableError) as exc:
            item.cache["shift"] = exc
    found = item.cache["shift"]
    if isinstance(found, (InputError, DataUnavailableError)):
        raise found
    return found


def _spread_cell(stat: dict[str, Any] | None, scale: float = 100.0) -> str:
    """"median [min – max]" of a `spread` block, in % (or as is with scale 1)."""
    if not stat or stat.get("median") is None:
        return "–"
    return f"{scale * stat['median']:.2f} [{scale * stat['min']:.2f} – {scale * stat['max']:.2f}]"


def shift_section(item: ReportInput) -> Section:
    """Calibration under dataset shift (Ovadia et al. 2019), as `adacal shift` measures it and `adacal plot shift`
    draws it: ECE-EM and error per severity over the corruptions, before and after the run's temperature."""
    from adacal.commands.plot import held_warnings
    from adacal.plots.shift import ShiftGroup, shift_figure

    run = shift_run(item)
    results, config = run.results, run.config
    rows = [["clean", f"{100 * results['clean']['pre']['error']:.2f}",
             f"{100 * results['clean']['pre']['ece_em']:.2f}", f"{100 * results['clean']['post']['ece_em']:.2f}"]]
    for severity, block in results["by_severity"].items():
        pre, post = block.get("pre") or {}, block.get("post") or {}
        rows.append([f"severity {severity} ({block['sets']} sets)", _spread_cell(pre.get("error")),
                     _spread_cell(pre.get("ece_em")), _spread_cell(post.get("ece_em"))])
    corruptions = sorted({entry["corruption"] for entry in results["sets"]})
    table = Table(f"{results['n']} test images per set, {len(corruptions)} corruptions; median [min – max] over the "
                  f"corruptions, in %; T = {results['temperature']:.3g} ({results['temperature_source']})",
                  ["set", "error", "ECE-EM before T", "ECE-EM after T"], rows)
    with held_warnings():
        figure = shift_figure([ShiftGroup(label=_label_of(item), results=[results], loss=config.get("loss"))],
                              metric="ece_em")
        picture = _picture(figure, "ECE-EM of the test images under each corruption, per severity: boxes over the "
                                   "corruptions, the clean set first, before and after temperature scaling")
    return Section("shift", "Calibration under dataset shift", section_command("shift", item), tables=[table],
                   pictures=[picture], notes=list(run.notes),
                   numbers={"config": config, "results": results})


def _label_of(item: ReportInput) -> str:
    return item.path.name or str(item.path)


def ood_section(item: ReportInput) -> Section:
    """OOD detection by the softmax entropy's AUROC (`detect_ood`, as `adacal ood` computes it): the clean test
    images (in) against each generated shifted set (out), from the logits the shift section scored (none twice)."""
    from adacal.commands.plot import held_warnings
    from adacal.ood import detect_ood
    from adacal.plots.roc import RocInput, roc_curves
    from adacal.shift import spread

    if item.run_root is None:
        raise InputError("needs a run folder (a model to run on the generated shift sets) or the model's outputs on "
                         "OOD inputs: run its command alone with --out-preds")
    run = shift_run(item)
    results, logits = run.results, run.logits
    temperature = results["temperature"]
    per_set: dict[str, Any] = {}
    for entry in results["sets"]:
        name = f"{entry['corruption']} s{entry['severity']}"
        per_set[name] = detect_ood(logits["clean"], logits[name], scores=("entropy",), temperature=temperature,
                                   temperature_source=results["temperature_source"],
                                   in_name=f"{results['dataset']} test", out_name=name)
    rows, by_severity = [], {}
    for severity in sorted({entry["severity"] for entry in results["sets"]}):
        names = [f"{e['corruption']} s{e['severity']}" for e in results["sets"] if e["severity"] == severity]
        stats = {stage: spread(per_set[n]["scores"]["entropy"][stage]["auroc"] for n in names)
                 for stage in ("pre", "post")}
        by_severity[str(severity)] = stats
        rows.append([f"severity {severity} ({len(names)} sets)", _spread_cell(stats["pre"]),
                     _spread_cell(stats["post"])])
    table = Table(f"Entropy AUROC, clean test images (in) against their corrupted copies (out), {results['n']} "
                  "each; median [min – max] over the corruptions, in %; 50 % is chance",
                  ["out set", "AUROC before T", "AUROC after T"], rows)
    corruption = OOD_ROC_CORRUPTION if any(e["corruption"] == OOD_ROC_CORRUPTION for e in results["sets"]) else \
        results["sets"][0]["corruption"]
    from adacal.plots.readers import ood_source

    curves = [RocInput(label=f"{e['corruption']} s{e['severity']}", results=per_set[f"{e['corruption']} s"
                                                                                   f"{e['severity']}"],
                       source=ood_source({"out_source": e["source"], "out_table": e.get("table")}))
              for e in results["sets"] if e["corruption"] == corruption]
    with held_warnings():
        picture = _picture(roc_curves(curves, score="entropy"),
                           f"ROC curves of OOD detection by softmax entropy: clean test images against {corruption} "
                           "at each severity, before (solid) and after (dashed) temperature scaling")
    numbers = {"temperature": temperature, "n": results["n"], "by_severity": by_severity,
               "sets": {name: {stage: {k: v for k, v in (block["scores"]["entropy"][stage] or {}).items()
                                       if k != "roc"} for stage in ("pre", "post")}
                        for name, block in per_set.items()},
               "roc": {name: per_set[name]["scores"]["entropy"] for name in per_set if name.startswith(
                   f"{corruption} s")}}
    notes = ["the OOD sets are the shift section's: each corrupted copy of the test images is scored once for both"]
    return Section("ood", "Out-of-distribution detection", section_command("ood", item), tables=[table],
                   pictures=[picture], notes=notes, numbers=numbers)


def _dig(numbers: dict[str, Any], *path: Any) -> Any:
    for step in path:
        if not isinstance(numbers, dict) or step not in numbers:
            return None
        numbers = numbers[step]
    return numbers


def _calibrated_ece(numbers: dict[str, Any]) -> Any:
    return _dig(numbers, "results", "calibrators", numbers.get("best"), "test_post", "ece_em")


def _percent(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


# The headline table: (column, section key, the value from that section's numbers, its format). Every value is one
# a section computed and shows; none is computed again.
HEADLINE = (
    ("error %", "evaluate", lambda n: _dig(n, "metrics", "error"), _percent),
    ("NLL", "evaluate", lambda n: _dig(n, "metrics", "nll"), lambda v: "–" if v is None else f"{v:.4f}"),
    ("ECE-EM %", "evaluate", lambda n: _dig(n, "metrics", "ece_em"), _percent),
    ("selected calibrator", "calibrate", lambda n: n.get("best"), lambda v: "–" if v is None else str(v)),
    ("ECE-EM after it %", "calibrate", _calibrated_ece, _percent),
    ("AURC %", "selective", lambda n: _dig(n, "metrics", "aurc"), _percent),
    (f"APS set size (α = {CONFORMAL_ALPHA:g})", "conformal",
     lambda n: _dig(n, "scores", "aps", "coverage", "mean_set_size"), lambda v: "–" if v is None else f"{v:.2f}"),
    ("ECE-EM at severity 5 %", "shift", lambda n: _dig(n, "results", "by_severity", "5", "pre", "ece_em", "median"),
     _percent),
    ("OOD AUROC at severity 5 %", "ood", lambda n: _dig(n, "by_severity", "5", "pre", "median"), _percent),
)


def record_name(column: str) -> str:
    """A headline column's key in report.json: its name without the page's " %" (the values there are fractions).

    >>> record_name("error %"), record_name("NLL")
    ('error', 'NLL')
    """
    return column[:-2] if column.endswith(" %") else column


def headline(labels: list[str], columns: list[list[Section]]) -> tuple[Table, list[dict[str, Any]]]:
    """One row per input of the figures a reader compares first, taken from its sections' numbers ("–" where the
    section was skipped), and the same as report.json rows."""
    header = ["input", *(name for name, _, _, _ in HEADLINE)]
    rows, records = [], []
    for label, column in zip(labels, columns):
        by_key = {section.key: section for section in column}
        values = [None if by_key.get(key) is None or by_key[key].status != "done" else get(by_key[key].numbers)
                  for _, key, get, _ in HEADLINE]
        rows.append([label, *(fmt(value) for value, (_, _, _, fmt) in zip(values, HEADLINE))])
        # The JSON keeps fractions (as every other report figure), so its keys drop the page's "%".
        records.append({"label": label, **{record_name(name): value
                                           for value, (name, _, _, _) in zip(values, HEADLINE)}})
    notes = ("shift and OOD: median over the corruptions at severity 5, before temperature scaling"
             if any(r.get("ECE-EM at severity 5") is not None for r in records) else "")
    caption = "The test figures each section below reports" + (f"; {notes}" if notes else "")
    return Table(caption, header, rows), records


# The report's sections in page order: (key, title, builder).
SECTIONS = (
    ("evaluate", "Calibration metrics", evaluate_section),
    ("reliability", "Reliability diagram", reliability_section),
    ("calibrate", "Post-hoc calibration", calibrate_section),
    ("selective", "Selective prediction", selective_section),
    ("conformal", "Conformal prediction sets", conformal_section),
    ("curves", "Training curves", curves_section),
    ("adafocal", "AdaFocal γ dynamics", adafocal_section),
    ("ood", "Out-of-distribution detection", ood_section),
    ("shift", "Calibration under dataset shift", shift_section),
)

__all__ = ["CONFORMAL_ALPHA", "CONFORMAL_SCORES", "HEADLINE", "ReportInput", "SECTIONS", "SELECTIVE_METRICS",
           "guarded", "headline", "metrics_table", "section_command", "shift_run"]
