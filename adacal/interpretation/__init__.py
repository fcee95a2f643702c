"""What the arrays of a predictions file mean — which keys hold the split wanted, whether the scores are logits or
probabilities, the labels, N and K — decided by the written rules of docs/inputs.md and returned with one
`Interpretation` record. The readers of `adacal.sources` only turn bytes into named arrays.

- `split`: the keys of the split a command needs (one resolver for every command);
- `kind`: logits or probabilities, by an explicit option, a key that names them, or rows that all agree;
- `labels`: class indices from any spelling, or from a labels file;
- `record`: `Predictions` and `Interpretation`;
- `read`: `load_predictions`, `load_scores`, `load_split_predictions`, `load_validation_split`.
"""

from adacal.interpretation.kind import SCORES_KINDS, ScoresReading, mixed_binary_readings, read_matrix_kind
from adacal.interpretation.labels import interpret_labels, sibling_labels
from adacal.interpretation.read import (
    load_predictions, load_scores, load_split_predictions, load_validation_split, read_predictions, read_scores,
)
from adacal.interpretation.record import Interpretation, Predictions, model_interpretation, reading_lines
from adacal.interpretation.split import WHOLE_FILE, split_keys

__all__ = [
    "Interpretation", "Predictions", "SCORES_KINDS", "ScoresReading", "WHOLE_FILE", "interpret_labels",
    "load_predictions", "load_scores", "load_split_predictions", "load_validation_split", "mixed_binary_readings",
    "model_interpretation", "read_matrix_kind", "reading_lines", "read_predictions", "read_scores", "sibling_labels",
    "split_keys",
]
