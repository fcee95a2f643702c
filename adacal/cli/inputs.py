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


def read_options(logits_key: str | None, labels_key: str | None, labels: Path | None, renormalize: bool) -> Any:
    from adacal.sources import ReadOptions

    return ReadOptions(logits_key=logits_key, labels_key=labels_key, labels_file=labels, renormalize=renormalize)


def print_notes(notes: Any, quiet: bool) -> None:
    """What was assumed reading the input (binary scores, class names, renormalised rows): one line each, on stderr."""
    if quiet:
        return
    for note in dict.fromkeys(notes):
        typer.echo(f"Note: {note}.", err=True)
