"""Conformal score functions, by name (SCORES): THR/LAC, APS, RAPS and top-k, each as `score(probs, labels)` (the
calibration scores) and `sets(probs, threshold)` (the classes whose score is at most the threshold), row-wise.

Ranks order a row's classes by probability, highest first; ties go to the lower class index (a stable sort), so a
row's rank of each class is fixed. The randomised scores (APS and RAPS with `randomized=True`) draw one U ~ U(0, 1)
per row from the row itself: U is a hash (splitmix64) of the row's float64 bytes and the score's `seed`
(`row_uniforms`), so a row gets the same U alone or in any batch, and different rows get independent-looking U's. A
U passed in (`uniforms=`, one per row) is used instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.checks import check_integer
from adacal.errors import InputError
from adacal.registry import Registry

__all__ = ["RAPS_LAMBDAS", "RAPS_TUNE_FRACTION", "SCORES", "ScoreFunction", "ThresholdScore", "AdaptiveScore",
           "RegularizedScore", "TopKScore", "build_score", "raps_tuning_split", "row_ranks", "row_uniforms",
           "score_names", "select_raps_parameters"]

SCORES: Registry[ScoreFunction] = Registry("conformal score")

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(state: np.ndarray) -> np.ndarray:
    """One splitmix64 step on uint64 arrays (wrapping arithmetic), the mixing function of Steele et al. 2014."""
    with np.errstate(over="ignore"):
        z = state + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def row_uniforms(probs: np.ndarray, seed: int = 0) -> np.ndarray:
    """One U in [0, 1) per row, a function of the row's float64 values and `seed` only (row-wise: a row gets the
    same U alone or in a batch).

    Args:
        probs: float64 (N, K).
        seed: any non-negative integer; another seed gives other U's.

    Returns:
        float64 (N,), multiples of 2**-53 in [0, 1).

    Example:
        >>> import numpy as np
        >>> from adacal.conformal.scores import row_uniforms
        >>> probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
        >>> bool(row_uniforms(probs)[1] == row_uniforms(probs[1:])[0])
        True
    """
    bits = np.ascontiguousarray(probs, dtype=np.float64).view(np.uint64)
    state = np.full(bits.shape[0], np.uint64(seed) & _MASK64, dtype=np.uint64)
    state = _splitmix64(state)
    for column in range(bits.shape[1]):
        state = _splitmix64(state ^ bits[:, column])
    return (state >> np.uint64(11)).astype(np.float64) * 2.0**-53


def row_ranks(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order of each row's classes, highest probability first (ties: the lower class first), and each class's
    1-based rank.

    Args:
        probs: float64 (N, K).

    Returns:
        (order, ranks): int64 (N, K) each; `order[i, r]` is the class ranked r + 1 in row i, `ranks[i, k]` the rank
        of class k.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal.scores import row_ranks
        >>> order, ranks = row_ranks(np.array([[0.2, 0.5, 0.3]]))
        >>> order.tolist(), ranks.tolist()
        ([[1, 2, 0]], [[3, 1, 2]])
    """
    order = np.argsort(-probs, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, probs.shape[1] + 1)[None, :], axis=1)
    return order, ranks


class ScoreFunction:
    """A non-conformity score: larger means the class fits the row worse. Subclasses define `all_scores`.

    `score(probs, labels)` is the score of each row's label and `sets(probs, threshold)` the classes whose score
    is at most `threshold` (a scalar, or one per class for class-conditional calibration), so a label is in its set
    exactly when its calibration score is at most the threshold.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import ScoreFunction, build_score
        >>> isinstance(build_score("aps"), ScoreFunction), build_score("aps").randomized
        (True, True)
    """

    name = ""
    randomized = False

    def all_scores(self, probs: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        """The options as given (JSON types)."""
        return {}

    def score(self, probs: np.ndarray, labels: np.ndarray, *, uniforms: np.ndarray | None = None) -> np.ndarray:
        """The calibration scores: each row's score of its own label.

        Args:
            probs: float64 probabilities (N, K).
            labels: int64 (N,).
            uniforms: the randomised scores' U, one per row; None draws it from each row (`row_uniforms`).

        Returns:
            float64 (N,).

        Example:
            >>> import numpy as np
            >>> from adacal.conformal import build_score
            >>> build_score("thr").score(np.array([[0.7, 0.2, 0.1]]), np.array([1])).tolist()
            [0.8]
        """
        every = self.all_scores(probs, uniforms)
        return np.take_along_axis(every, np.asarray(labels, dtype=np.int64)[:, None], axis=1)[:, 0]

    def sets(self, probs: np.ndarray, threshold: Any, *, uniforms: np.ndarray | None = None) -> np.ndarray:
        """The prediction sets: class k is in row i's set when its score is at most the threshold.

        Args:
            probs: float64 probabilities (N, K).
            threshold: a float, or K floats (one per class).
            uniforms: as for `score`.

        Returns:
            bool (N, K).

        Example:
            >>> import numpy as np
            >>> from adacal.conformal import build_score
            >>> build_score("thr").sets(np.array([[0.7, 0.2, 0.1]]), 0.8).tolist()
            [[True, True, False]]
        """
        return self.all_scores(probs, uniforms) <= np.asarray(threshold, dtype=np.float64)

    def _uniforms(self, probs: np.ndarray, uniforms: np.ndarray | None) -> np.ndarray:
        if uniforms is None:
            return row_uniforms(probs, self.seed)
        u = np.asarray(uniforms, dtype=np.float64).reshape(-1)
        if u.shape[0] != probs.shape[0] or not ((u >= 0) & (u <= 1)).all():
            raise InputError(f"Expected uniforms to be {probs.shape[0]} values in [0, 1] (one per row), got "
                             f"{u.shape[0]} values: pass one U per row, or uniforms=None to draw them.")
        return u

    def __repr__(self) -> str:
        options = ", ".join(f"{key}={value!r}" for key, value in self.get_params().items())
        return f"{type(self).__name__}({options})"


@SCORES.register("thr")
class ThresholdScore(ScoreFunction):
    """THR / LAC (Sadinle et al. 2019): the score of class y is 1 − p_y.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import build_score
        >>> build_score("lac").all_scores(np.array([[0.7, 0.2, 0.1]])).round(3).tolist()
        [[0.3, 0.8, 0.9]]
    """

    name = "thr"

    def all_scores(self, probs: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:
        """Every class's score, 1 − p (Returns: float64 (N, K))."""
        return 1.0 - probs


@SCORES.register("lac")
def _lac() -> ThresholdScore:
    return ThresholdScore()


@SCORES.register("aps")
class AdaptiveScore(ScoreFunction):
    """APS (Romano et al. 2020): the score of class y is the total probability of the classes ranked at least as high
    as y; randomised, minus U·p_y with the row's U (so the sets reach coverage 1 − α exactly, not only at least).

    Args:
        randomized: subtract U·p_y (default True, as Romano et al. and MAPIE's `include_last_label="randomized"`).
        seed: the seed of the rows' U (`row_uniforms`).

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import build_score
        >>> build_score("aps", randomized=False).all_scores(np.array([[0.2, 0.5, 0.3]])).round(3).tolist()
        [[1.0, 0.5, 0.8]]
    """

    name = "aps"

    def __init__(self, *, randomized: bool = True, seed: int = 0) -> None:
        if not isinstance(randomized, (bool, np.bool_)):
            raise InputError(f"Expected randomized to be True or False, got {randomized!r}: pass randomized=True "
                             "or randomized=False.")
        self.randomized = bool(randomized)
        self.seed = check_integer(seed, "seed", minimum=0)

    def get_params(self) -> dict[str, Any]:
        return {"randomized": self.randomized, "seed": self.seed}

    def _penalties(self, ranks: np.ndarray) -> np.ndarray | float:
        return 0.0

    def all_scores(self, probs: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:
        """Every class's score (Returns: float64 (N, K))."""
        order, ranks = row_ranks(probs)
        ordered = np.take_along_axis(probs, order, axis=1)
        cumulative = np.take_along_axis(np.cumsum(ordered, axis=1), ranks - 1, axis=1)
        if self.randomized:
            cumulative = cumulative - self._uniforms(probs, uniforms)[:, None] * probs
        return cumulative + self._penalties(ranks)


@SCORES.register("raps")
class RegularizedScore(AdaptiveScore):
    """RAPS (Angelopoulos et al. 2021): APS plus λ·max(0, rank(y) − k_reg), rank 1 for the top class, which keeps
    unlikely classes out of the sets. `k_reg` and `lam` are given here; `select_raps_parameters` chooses them on
    validation as the paper does (`ConformalPredictor("raps", k_reg="auto", lam="auto")`).

    Args:
        k_reg: ranks up to k_reg go unpenalised (default 1).
        lam: λ ≥ 0, the penalty per rank beyond k_reg (default 0.01).
        randomized, seed: as for APS.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import build_score
        >>> raps = build_score("raps", k_reg=1, lam=0.1, randomized=False)
        >>> raps.all_scores(np.array([[0.2, 0.5, 0.3]])).round(3).tolist()
        [[1.2, 0.5, 0.9]]
    """

    name = "raps"

    def __init__(self, *, k_reg: int = 1, lam: float = 0.01, randomized: bool = True, seed: int = 0) -> None:
        super().__init__(randomized=randomized, seed=seed)
        self.k_reg = check_integer(k_reg, "k_reg", minimum=0)
        if isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating, np.integer)) \
                or not np.isfinite(lam) or lam < 0:
            raise InputError(f"Expected lam to be a finite number >= 0, got {lam!r}: pass e.g. lam=0.01.")
        self.lam = float(lam)

    def get_params(self) -> dict[str, Any]:
        return {"k_reg": self.k_reg, "lam": self.lam, "randomized": self.randomized, "seed": self.seed}

    def _penalties(self, ranks: np.ndarray) -> np.ndarray:
        return self.lam * np.maximum(0, ranks - self.k_reg)


@SCORES.register("topk")
class TopKScore(ScoreFunction):
    """Top-k: the score of class y is its rank (1 for the top class); the sets are the k most probable classes.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import build_score
        >>> build_score("topk").all_scores(np.array([[0.2, 0.5, 0.3]])).tolist()
        [[3.0, 1.0, 2.0]]
    """

    name = "topk"

    def all_scores(self, probs: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:
        """Every class's rank as a float (Returns: float64 (N, K))."""
        return row_ranks(probs)[1].astype(np.float64)


# The paper's selection (Angelopoulos et al. 2021, §2.2 and their code's `pick_parameters`): 30 % of the validation
# rows tune k_reg and λ, the other 70 % calibrate the threshold; λ from this grid, the smallest mean set size.
RAPS_TUNE_FRACTION = 0.3
RAPS_LAMBDAS = (0.001, 0.01, 0.1, 0.2, 0.5)


def raps_tuning_split(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The seeded split of n validation rows into RAPS's tuning rows (⌈0.3 n⌉) and the calibration rows (the rest).

    Args:
        n: the number of validation rows.
        seed: the seed of the permutation.

    Returns:
        (tune, calibrate): two sorted int64 index arrays that partition range(n).

    Example:
        >>> from adacal.conformal.scores import raps_tuning_split
        >>> tune, calibrate = raps_tuning_split(10, seed=0)
        >>> len(tune), len(calibrate), sorted([*tune, *calibrate]) == list(range(10))
        (3, 7, True)
    """
    n_tune = int(np.ceil(RAPS_TUNE_FRACTION * n - 1e-9))
    order = np.random.default_rng(check_integer(seed, "seed", minimum=0)).permutation(n)
    return np.sort(order[:n_tune]), np.sort(order[n_tune:])


def select_raps_parameters(probs: np.ndarray, labels: np.ndarray, alpha: float, *, randomized: bool = True,
                           seed: int = 0, k_reg: int | None = None,
                           lambdas: Any = RAPS_LAMBDAS) -> tuple[int, float]:
    """RAPS's k_reg and λ chosen on tuning rows as Angelopoulos et al. (2021) do: k_reg is the (1 − α) quantile
    ("higher") of the true labels' 1-based ranks, and λ the value of `lambdas` whose conformal sets, calibrated and
    measured on the same tuning rows, have the smallest mean size (ties: the first).

    Args:
        probs: float64 probabilities of the tuning rows (N, K).
        labels: their labels (N,).
        alpha: the miscoverage level.
        randomized, seed: the RAPS score's options.
        k_reg: a fixed k_reg (None: selected as above).
        lambdas: the candidate λ values (one value: λ fixed).

    Returns:
        (k_reg, lam).

    Example:
        >>> import numpy as np
        >>> from adacal.conformal.scores import select_raps_parameters
        >>> probs = np.tile([[0.5, 0.3, 0.2]], (20, 1))
        >>> select_raps_parameters(probs, np.array([0] * 15 + [1] * 5), alpha=0.1, randomized=False)
        (2, 0.001)
    """
    from adacal.conformal.quantile import conformal_quantile

    labels = np.asarray(labels, dtype=np.int64)
    if k_reg is None:
        true_ranks = np.take_along_axis(row_ranks(probs)[1], labels[:, None], axis=1)[:, 0]
        k_reg = int(np.quantile(true_ranks, 1 - alpha, method="higher"))
    best: tuple[float, float] | None = None
    for lam in lambdas:
        function = RegularizedScore(k_reg=k_reg, lam=lam, randomized=randomized, seed=seed)
        threshold = conformal_quantile(function.score(probs, labels), alpha,
                                       what="the RAPS tuning part of the validation set (30 %)")
        size = float(function.sets(probs, threshold).sum(axis=1).mean())
        if best is None or size < best[0]:
            best = (size, float(lam))
    assert best is not None  # lambdas is never empty (checked by the caller)
    return int(k_reg), best[1]


def build_score(name: str, **options: Any) -> ScoreFunction:
    """A score function by name, its options checked.

    Args:
        name: "thr" (alias "lac"), "aps", "raps" or "topk".
        **options: APS: randomized, seed; RAPS: k_reg, lam, randomized, seed.

    Returns:
        The score function; an unknown name or option is an InputError naming the choices.

    Example:
        >>> from adacal.conformal import build_score
        >>> build_score("raps", k_reg=2)
        RegularizedScore(k_reg=2, lam=0.01, randomized=True, seed=0)
    """
    return SCORES.build(name, **options)


def score_names() -> list[str]:
    """The registered score names (Returns: a list).

    Example:
        >>> from adacal.conformal import score_names
        >>> score_names()
        ['aps', 'lac', 'raps', 'thr', 'topk']
    """
    return SCORES.names()
