"""`adacal conformal` as one library call: split-conformal prediction sets fitted on the validation predictions
(optionally after a saved calibrator) and judged on test, for one or several α (`adacal.conformal`).

The inputs are those `calibrate` reads (`adacal.commands.inputs.resolve_calibration_input`: a run folder, a file of
val_/test_ arrays, or test predictions with `val`); with `predictor` (a file `--save` wrote) nothing is fitted and
the test predictions are read as `evaluate` reads them. `run_conformal` never prints; the CLI prints its record.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adacal.errors import InputError

__all__ = ["CONFORMAL_KIND", "ConformalRun", "parse_alphas", "run_conformal"]

CONFORMAL_KIND = "conformal"
DEFAULT_ALPHA = "0.1"
DEFAULT_SCORE = "aps"


@dataclass(frozen=True)
class ConformalRun:
    """What `run_conformal` did: the report, the fitted (or loaded) predictors, one per α, and what was written."""

    report: dict[str, Any]
    predictors: list[Any]
    n_val: int | None  # None with a saved predictor (nothing fitted)
    n_test: int
    written: Path | None = None  # the JSON report (--json), None when not saved
    saved: Path | None = None  # the fitted predictors (--save)
    notes: list[str] = field(default_factory=list)
    reading: list[str] = field(default_factory=list)

    @property
    def results(self) -> dict[str, Any]:
        return self.report["results"]


def parse_alphas(text: Any) -> list[float]:
    """α levels from "0.05,0.1,0.2" (or a number, or a list of numbers; each in (0, 1), no repeats), in the order
    given.

    Example:
        >>> from adacal.commands.conformal import parse_alphas
        >>> parse_alphas("0.05, 0.1,0.2"), parse_alphas([0.2, 0.1])
        ([0.05, 0.1, 0.2], [0.2, 0.1])
    """
    if isinstance(text, (list, tuple)):
        text = ",".join(map(repr, text))
    values: list[float] = []
    for token in str(text).split(","):
        token = token.strip()
        if not re.fullmatch(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?", token) or not 0 < float(token) < 1:
            raise InputError(f"Expected --alpha to be numbers in (0, 1) separated by commas, such as 0.05,0.1,0.2, "
                             f"got {text!r}: each alpha is a miscoverage level (0.1 for 90 % coverage).")
        if float(token) in values:
            raise InputError(f"Expected each --alpha once, got {float(token):g} twice in {text!r}.")
        values.append(float(token))
    return values


def _score_options(score: str, k_reg: Any, lam: Any, randomized: bool | None) -> dict[str, Any]:
    """The options of the score: RAPS selects k_reg and λ on validation unless given; APS/RAPS are randomised unless
    told otherwise."""
    from adacal.conformal import SCORES

    name = SCORES.key(score) if score in SCORES else None
    if name is None:
        from adacal.errors import unknown_name

        raise unknown_name("conformal score (--score)", score, SCORES.names())
    if name != "raps" and (k_reg is not None or lam is not None):
        raise InputError(f"Expected --k-reg and --lam only with --score raps, got --score {score}.")
    if name not in ("aps", "raps") and randomized is not None:
        raise InputError(f"Expected --randomized/--no-randomized only with --score aps or raps, got --score {score}.")
    options: dict[str, Any] = {}
    if name == "raps":
        options = {"k_reg": "auto" if k_reg is None else k_reg, "lam": "auto" if lam is None else lam}
    if randomized is not None:
        options["randomized"] = randomized
    if name in ("aps", "raps"):
        from adacal.conformal import build_score

        try:  # checks the values
            build_score(name, **{key: value for key, value in options.items() if value != "auto"})
        except InputError as exc:
            message = str(exc).replace("Expected lam", "Expected --lam").replace("lam=", "--lam ")
            raise InputError(message.replace("k_reg", "--k-reg")) from None
    return options


def _class_scores(predictions: Any, path: Path) -> Any:
    """Refuse top-label (confidence, correct) pairs: a set needs every class's score."""
    if not hasattr(predictions, "logits"):
        raise InputError(f"Expected class scores (logits or probabilities, N x K) in {path.name}, but it holds "
                         "top-label confidences (confidence, correct): conformal sets need every class's score; give "
                         "the model's full outputs.")
    return predictions


def _kind(predictions: Any) -> str:
    record = getattr(predictions, "interpretation", None)
    return record.scores_kind if record is not None else "auto"


def _prepared(predictions: Any, fitted: Any, calibrator: Path | None) -> tuple[Any, str]:
    """The scores the predictor reads, and their kind: the calibrator's probabilities when there is one."""
    if fitted is None:
        return predictions.logits, _kind(predictions)
    from adacal.evaluation import calibrated_probs

    record = predictions.interpretation
    return calibrated_probs(fitted, predictions.logits, calibrator_path=calibrator,
                            scores_kind=record.scores_kind if record is not None else None), "probs"


def _level(predictor: Any, test_scores: Any, test_kind: str, labels: Any, path: Path) -> dict[str, Any]:
    """One α's entry of results.levels: the fit (threshold, calibration rows, RAPS's selection) and the test
    report (`coverage_report`)."""
    from adacal.conformal import coverage_report

    try:
        sets = predictor.predict_sets(test_scores, scores_kind=test_kind)
    except InputError as exc:
        raise InputError(f"{str(exc).rstrip('.')} ({path.name}).") from None
    saved = predictor.to_dict()
    return {"alpha": saved["alpha"], "target_coverage": 1 - saved["alpha"], "quantile": saved["quantile"],
            "n_calibration": saved["n_calibration"], "score_options": saved["score_options"],
            "tuning": saved.get("tuning"), **coverage_report(sets, labels)}


def run_conformal(
    source: str | os.PathLike,
    *,
    alpha: str | None = None,
    score: str | None = None,
    class_conditional: bool = False,
    k_reg: int | None = None,
    lam: float | None = None,
    randomized: bool | None = None,
    seed: int = 0,
    calibrator: str | os.PathLike | None = None,
    val: str | os.PathLike | None = None,
    predictor: str | os.PathLike | None = None,
    json_path: str | os.PathLike | None = None,
    save: str | os.PathLike | None = None,
    force: bool = False,
    options: Any = None,
) -> ConformalRun:
    """Everything `adacal conformal` does, without printing.

    Fits one `ConformalPredictor` per α of `alpha` ("0.05,0.1"; default 0.1) with `score` (default aps) on the
    validation predictions of `source` (what `adacal calibrate` reads; `val`: a second file of validation
    predictions), after `calibrator` (a file `adacal calibrate --save` wrote) when given, and reports the sets on the
    test predictions (`coverage_report` per α, in results.levels). RAPS selects k_reg and λ on validation unless
    they are given. With `predictor` (a file `save` wrote) the saved predictors are applied to the test predictions
    of `source` instead, and `alpha`, `score`, `class_conditional`, `val` are refused. The report goes to
    `json_path` ("-": standard output), the fitted predictors to `save`. Every cheap check runs before anything is
    read, and nothing is written before the report exists.
    """
    from adacal.checks import check_integer
    from adacal.commands.inputs import describe_options, resolve_calibration_input, resolve_evaluation_input
    from adacal.conformal import ConformalPredictor, load_predictors, save_predictors
    from adacal.interpretation import reading_lines
    from adacal.reports import make_report, write_json
    from adacal.sources import ReadOptions, check_regular_file
    from adacal.writing import check_output, is_stdout

    source = Path(source)
    paths = {name: None if value is None else Path(value) for name, value in
             (("val", val), ("calibrator", calibrator), ("predictor", predictor), ("json", json_path), ("save", save))}
    options = options or ReadOptions()
    if not isinstance(class_conditional, bool):
        raise InputError(f"Expected class_conditional to be True or False, got {class_conditional!r}.")
    check_integer(seed, "--seed", minimum=0)
    if paths["predictor"] is not None:
        given = [flag for flag, value in (("--alpha", alpha), ("--score", score), ("--val", val),
                                          ("--k-reg", k_reg), ("--lam", lam), ("--randomized", randomized),
                                          ("--save", save)) if value is not None]
        given += ["--class-conditional"] if class_conditional else []
        if given:
            raise InputError(f"Expected no {given[0]} with --predictor, which applies the saved sets as fitted: drop "
                             f"{given[0]}, or fit anew without --predictor.")
        check_regular_file(paths["predictor"], "a conformal predictor file (--predictor)")
        alphas, score_options = [], {}
    else:
        alphas = parse_alphas(DEFAULT_ALPHA if alpha is None else alpha)
        score = DEFAULT_SCORE if score is None else score
        score_options = _score_options(score, k_reg, lam, randomized)
    if paths["calibrator"] is not None:
        check_regular_file(paths["calibrator"], "a calibrator file (--calibrator)")
    own_inputs = (source, paths["val"], paths["calibrator"], paths["predictor"], getattr(options, "labels_file", None))
    for flag, key in (("--json", "json"), ("--save", "save")):
        check_output(paths[key], flag=flag, inputs=own_inputs, force=force)
    if is_stdout(paths["json"]) and is_stdout(paths["save"]):
        raise InputError("Expected at most one of --json and --save to be '-' (standard output), got both.")
    if paths["json"] is not None and paths["save"] is not None and not is_stdout(paths["json"]) \
            and os.path.realpath(paths["json"]) == os.path.realpath(paths["save"]):
        raise InputError(f"Expected --json and --save to be different files, got {paths['save']} for both: one would "
                         "overwrite the other.")
    fitted_calibrator = None
    if paths["calibrator"] is not None:
        from adacal.calibrators import load_calibrator

        fitted_calibrator = load_calibrator(paths["calibrator"])
    loaded = load_predictors(paths["predictor"]) if paths["predictor"] is not None else None

    config: dict[str, Any] = {"input": str(source)}
    if loaded is not None:
        resolved = resolve_evaluation_input(source, options=options)
        test = _class_scores(resolved.predictions, source)
        predictors, val_predictions, input_path = loaded, None, resolved.data_path
        config.update({"predictor": str(paths["predictor"]), "alphas": [p.alpha for p in loaded]})
        notes = list(test.notes)
    else:
        inputs = resolve_calibration_input(source, val=paths["val"], options=options)
        val_predictions = _class_scores(inputs.val, paths["val"] or source)
        test = _class_scores(inputs.test, source)
        input_path = inputs.input_path
        val_scores, val_kind = _prepared(val_predictions, fitted_calibrator, paths["calibrator"])
        predictors = [ConformalPredictor(score, alpha=level, class_conditional=class_conditional, seed=seed,
                                         **score_options).fit(val_scores, val_predictions.labels,
                                                              scores_kind=val_kind) for level in alphas]
        config.update({"alphas": alphas, "score": score, "score_options": score_options,
                       "class_conditional": class_conditional, "seed": seed,
                       **({"val": str(paths["val"])} if paths["val"] is not None else {})})
        notes = list(inputs.notes)
    if paths["calibrator"] is not None:
        config["calibrator"] = str(paths["calibrator"])
    config.update(describe_options(options))
    test_scores, test_kind = _prepared(test, fitted_calibrator, paths["calibrator"])
    levels = [_level(fitted, test_scores, test_kind, test.labels, source) for fitted in predictors]
    first = predictors[0].to_dict()
    results: dict[str, Any] = {
        "score": first["score"], "class_conditional": first["class_conditional"],
        "calibrated": fitted_calibrator is not None, "num_classes": first["num_classes"],
        "n_val": None if val_predictions is None else len(val_predictions), "n_test": len(test), "levels": levels,
        "input": {name: split.interpretation.to_dict() for name, split in (("val", val_predictions), ("test", test))
                  if split is not None and split.interpretation is not None},
    }
    if test.classes is not None:
        results["classes"] = list(test.classes)
    report = make_report(CONFORMAL_KIND, config=config, results=results, input_path=input_path)
    if paths["json"] is not None:
        write_json(paths["json"], report)
    if paths["save"] is not None:
        save_predictors(predictors, paths["save"])
    records = [None if val_predictions is None else val_predictions.interpretation, test.interpretation]
    return ConformalRun(report=report, predictors=predictors, n_val=results["n_val"], n_test=len(test),
                        written=paths["json"], saved=paths["save"], notes=list(dict.fromkeys(notes)),
                        reading=reading_lines(*records, names=("val", "test")))
