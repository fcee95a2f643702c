"""The one decision of what kind of scores an in-memory array holds — logits or probabilities — for the Python API:
the metrics, the meter and the calibrators decide here, by the same per-row rule the file readers follow
(docs/inputs.md, "Kind of scores"), so an array and the file that holds it are read alike or both refused.

`decide_scores_kind(scores, scores_kind="auto")` returns "probs" or "logits"; an explicit `scores_kind` wins (and
"probs" is checked row by row); in "auto" a matrix whose rows disagree raises `InputError` (a `ValueError`) naming
the first offending rows and `scores_kind=`.
"""

from __future__ import annotations

from typing import Any, Literal

from adacal.errors import InputError

SCORES_KINDS = ("auto", "logits", "probs")
ScoresKind = Literal["auto", "logits", "probs"]


def check_scores_kind(scores_kind: Any) -> str:
    """`scores_kind` itself when it is one of SCORES_KINDS, else `InputError` naming the choices."""
    if scores_kind not in SCORES_KINDS:
        raise InputError(f"Expected scores_kind to be one of {', '.join(SCORES_KINDS)}, got {scores_kind!r}.")
    return scores_kind


def decide_scores_kind(scores: Any, *, scores_kind: str = "auto", name: str = "scores") -> str:
    """"probs" or "logits" for scores (N, K), or a binary model's one score per sample, by the written rule.

    Args:
        scores: (N, K) scores, or (N,) / (N, 1) for a binary model; numpy, torch or nested lists.
        scores_kind: "auto" (the per-row rule), "logits" (any values) or "probs" (every row must be a probability
            row, else refused).
        name: what to call the scores in a message.

    Returns:
        "probs" or "logits".

    Example:
        >>> decide_scores_kind([[0.9, 0.1], [0.2, 0.8]])
        'probs'
        >>> decide_scores_kind([[2.0, -1.0], [0.5, 0.7]])
        'logits'
    """
    # Interim: the file readers' rule, called as it stands (adacal.interpretation.kind); the API's own messages and
    # the fast path inside the metrics' row scan replace this.
    from adacal.arrays import one_score_per_sample
    from adacal.interpretation.kind import read_binary_kind, read_matrix_kind

    check_scores_kind(scores_kind)
    reader = read_binary_kind if one_score_per_sample(scores) else read_matrix_kind
    return "probs" if reader(scores, name=name, kind=scores_kind).probabilities else "logits"
