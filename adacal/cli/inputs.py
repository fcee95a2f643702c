"""Options every command that reads saved model outputs shares (evaluate, calibrate, ood): how to find the scores
and labels in a file from any framework. The reading itself is `adacal.sources`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

LogitsKey = Annotated[
    str | None,
    typer.Option("--logits-key", help="Key of the scores (logits or probabilities) in an .npz/.pt file "
                                      "(default: logits, probs, probabilities or scores).", show_default=False),
]
LabelsKey = Annotated[
    str | None,
    typer.Option("--labels-key", help="Key of the labels in an .npz/.pt file, or the label column's header in a .csv "
                                      "(default: labels, targets or y; in a .csv a column so named, else the last).",
                 show_default=False),
]
LabelsFile = Annotated[
    Path | None,
    typer.Option("--labels", "--labels-file",
                 help="File of labels (.npy, .txt, .npz, .pt, .safetensors, .mat, .csv, .tsv, .json or .jsonl) for "
                      "scores saved without them, e.g. an .npy of logits (default: <stem>_labels.npy, else labels.npy, "
                      "beside an .npy). --labels-file is the same option, as `plot reliability` spells it.",
                 show_default=False),
]
Renormalize = Annotated[
    bool,
    typer.Option("--renormalize", help="Divide each row by its sum: probabilities rounded to a few decimals (they do "
                                       "not sum to 1), percentages, counts."),
]


ScoresKind = Annotated[
    str,
    typer.Option("--scores-kind", help="What the scores are: logits, probs, confidence, or auto (decided by the "
                                       "rules of docs/inputs.md: probabilities when every row is one, logits when "
                                       "(almost) none is; a matrix whose rows disagree is refused). confidence "
                                       "(evaluate only): (confidence, correct) pairs, the top answer's confidence "
                                       "and whether it was right, as keys or columns named so are read in auto."),
]
Header = Annotated[
    bool | None,
    typer.Option("--header/--no-header", help="Whether the first line of a .csv/.tsv is a header (default: decided "
                                              "from the file; a first line that could be either is refused).",
                 show_default=False),
]
Separator = Annotated[
    str | None,
    typer.Option("--separator", help="The separator of a text table: comma, semicolon, tab or space (default: "
                                     "decided from the file; two that both read it are refused).", show_default=False),
]
PtItems = Annotated[
    str | None,
    typer.Option("--pt-items", help="How a list in a .pt file is read: batches (concatenated), samples (stacked) or "
                                    "pair (two tensors: scores, labels) (default: decided; refused when both fit).",
                 show_default=False),
]
LabelsAre = Annotated[
    str | None,
    typer.Option("--labels-are", help="How integer labels beside class values (a classes array, a header of numbers "
                                      "such as scikit-learn's classes_) are read: values (looked up there) or "
                                      "positions (column indices) (default: decided; refused when both fit and "
                                      "differ).", show_default=False),
]
ScoreColumns = Annotated[
    str | None,
    typer.Option("--score-columns", help="The score columns of a .csv/.tsv/.txt: 2:12 (positions counting from 0, "
                                         "a row index included, end excluded), cat,dog,eel (header names) or prob_* "
                                         "(a name prefix) (default: every column beside the labels but a row index, "
                                         "a row counter, a copy of the labels and per-sample figures such as "
                                         "entropy; refused where that cannot be told).", show_default=False),
]
ClassNames = Annotated[
    str | None,
    typer.Option("--classes", help="The class names in column order, for labels written as names: neg,pos (a comma "
                                   "list), a text file (one name a line), a JSON list, or a Hugging Face config.json "
                                   "or model folder (its id2label). Also orders pipeline(..., top_k=None) outputs' "
                                   "{label, score} lists (default: the file's own names, else the id2label of a model "
                                   "folder the file sits in or beside).", show_default=False),
]
GroupBy = Annotated[
    str | None,
    typer.Option("--group-by", help="Report the figures per group too: KEY is a per-sample key of the input (an .npz/"
                                    ".pt array, a JSON/JSONL key, a .csv/.tsv column) of strings or integers, such as "
                                    "task or subject; groups of fewer than 50 samples are flagged. The JSON gains "
                                    "results.groups.", metavar="KEY", show_default=False),
]
# #41 LLM outputs (docs/inputs.md, "LLM evaluation outputs").
LengthNormalize = Annotated[
    bool,
    typer.Option("--length-normalize", help="lm-evaluation-harness samples: divide each choice's log-likelihood by "
                                            "the length of its text in characters (without the leading space), as "
                                            "the harness's acc_norm does."),
]
Task = Annotated[
    str | None,
    typer.Option("--task", help="The task of lm-evaluation-harness sample files (default: from the file name, "
                                "samples_<task>_<date>.jsonl).", show_default=False),
]
AnswerIs = Annotated[
    str | None,
    typer.Option("--answer-is", help="How the gold answer (target, answer, gold) names an option: index (from 0), "
                                     "letter (A, B, ...) or text (an option's text) (default: decided; refused when "
                                     "two readings fit every line and differ).", show_default=False),
]
AnswerOptions = Annotated[
    str | None,
    typer.Option("--options", help="The options of per-question log-probability maps, in order: A,B,C,D (default: "
                                   "the letters of the record's options/choices, else of the map).",
                 show_default=False),
]
MissingOptions = Annotated[
    str,
    typer.Option("--missing-options", help="An option missing from a log-probability map (an API's top-n tokens): "
                                           "refuse, or zero (probability 0)."),
]
VerbalizedConfidence = Annotated[
    str | None,
    typer.Option("--verbalized-confidence", help="Key (or column) whose text states the confidence (\"I am 80% "
                                                 "sure\", \"Confidence: 0.8\"), read beside the correctness "
                                                 "(evaluate only).", show_default=False),
]


def llm_options(length_normalize: bool = False, task: str | None = None, answer_is: str | None = None,
                answer_options: str | None = None, missing_options: str = "refuse",
                verbalized_confidence: str | None = None) -> dict[str, Any]:
    """The #41 LLM-output fields of ReadOptions from their CLI options (lower-cased where they are choices)."""
    return {"length_normalize": length_normalize, "task": task,
            "answer_is": None if answer_is is None else answer_is.lower(), "answer_options": answer_options,
            "missing_options": missing_options.lower(), "verbalized_confidence": verbalized_confidence}


SEPARATOR_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "space": " ", ",": ",", ";": ";", "\\t": "\t",
                   "\t": "\t", " ": " "}


def read_options(logits_key: str | None, labels_key: str | None, labels: Path | None, renormalize: bool,
                 scores_kind: str = "auto", header: bool | None = None, separator: str | None = None,
                 pt_items: str | None = None, *, labels_are: str | None = None,
                 score_columns: str | None = None, classes: str | None = None,
                 llm: dict[str, Any] | None = None) -> Any:
    from adacal.errors import InputError
    from adacal.commands import ReadOptions

    if separator is not None and separator.lower() not in SEPARATOR_NAMES:
        raise InputError(f"Expected --separator to be comma, semicolon, tab or space, got {separator!r}.")
    return ReadOptions(logits_key=logits_key, labels_key=labels_key, labels_file=labels, renormalize=renormalize,
                       scores_kind=scores_kind.lower(), header=header,
                       separator=None if separator is None else SEPARATOR_NAMES[separator.lower()],
                       pt_items=None if pt_items is None else pt_items.lower(),
                       labels_are=None if labels_are is None else labels_are.lower(), score_columns=score_columns,
                       classes=classes, **(llm or {}))


def print_notes(notes: Any, quiet: bool, reading: Any = ()) -> None:
    """How each input was read (`adacal.interpretation.Interpretation.summary`), then what was assumed reading it
    (binary scores, class names, renormalised rows): one `Note:` line each, on stderr."""
    if quiet:
        return
    for note in dict.fromkeys([*reading, *notes]):
        typer.echo(f"Note: {note.rstrip('.')}.", err=True)
