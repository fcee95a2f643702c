"""Which columns of a text table hold class scores (rule 8 of docs/inputs.md "Text files"): a table that pandas or a
script wrote often carries more than one column per class and a label — its row index, a row counter, a second copy
of the labels, per-sample figures (`entropy`, `margin`, `sample_weight`, `epoch`). Read as classes they give a
plausible wrong figure, so every column beside the labels is checked here, after `text_tables` has found the label
column, and either kept as a class's scores, dropped with a note saying why, or the table is refused in one line
naming `--score-columns` (`parse_score_columns`), which selects the score columns by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from adacal.errors import InputError
from adacal.sources.text_numbers import integer_or_none, integers_or_none, number_or_none

# A label column's header: the label keys of every format (Hugging Face's label_ids, scikit-learn's y_true, ...).
CSV_LABEL_NAMES = ("label", "labels", "target", "targets", "y", "class", "label_ids", "y_true", "true_labels",
                   "true_label")
# A first column with one of these headers (lower-cased) and integer values, or names that are no numbers (a string
# index: sample ids), is a row index, not a class: pandas' `DataFrame.to_csv()` writes its index first with an empty
# header ("Unnamed: 0" once read back by pandas), or the index's name.
CSV_INDEX_NAMES = ("", "unnamed: 0", "index", "id")
# A column with one of these headers and integer values holds the predicted class, beside the per-class scores: it
# is no class of its own (the scores give the prediction) and is dropped.
CSV_PREDICTION_NAMES = ("pred", "preds", "prediction", "predictions", "predicted", "y_pred", "pred_label",
                        "predicted_label", "predicted_class", "argmax")

# Column names that hold a per-sample figure, not a class's scores (lower-cased; also any name starting with
# `feature` or ending in `_weight`).
NON_SCORE_NAMES = frozenset((
    "entropy", "margin", "weight", "weights", "sample_weight", "sample_weights", "epoch", "step", "iteration",
    "iter", "fold", "seed", "split", "loss", "nll", "features", "feature", "time", "timestamp", "batch",
    "confidence", "conf", "max_prob", "p_max", "pmax", "uncertainty", "correct", "is_correct", "temperature",
))
_NON_SCORE_PATTERN = re.compile(r"(?i).+_weights?|features?(_.*)?|feat_.*|embedding.*")
# Names of a row index or counter (also any name ending in `_id`, `_idx` or `_index`): dropped when the column holds
# integers (a class may be named `id`; its scores are no integers).
INDEX_NAMES = frozenset(("index", "idx", "id", "row", "rows", "row_id", "sample", "sample_id", "samples", "n", "#",
                         "no", "number", "image_id", "example_id", "uid"))
_INDEX_PATTERN = re.compile(r"(?i).+_(id|idx|index)")
# Names of a second label column (a copy of the labels, beside the one the reader took).
SECOND_LABEL_NAMES = frozenset(("truth", "gold", "answer", "ground_truth", "true_class", "label_id", "class_id",
                                "y_test", "actual"))
_SEPARATORS = "_-. :"
# A probability row: entries within 1e-6 of [0, 1], its sum within this (plus 5e-4 per column: written with four
# decimals) of 1.
_SUM_TOLERANCE = 1e-3
_INDEX_MIN_ROWS = 3  # a row counter (steps of 1) from this many rows; an index with gaps from _GAPPED_MIN_ROWS
_GAPPED_MIN_ROWS = 20
_COPY_MIN_ROWS = 10  # a column equal to the labels in every row, from this many rows: refused where not dropped


def parse_score_columns(path: Path, spec: str, names: list[str] | None, width: int) -> list[int]:
    """The positions (0-based, every column of a line as written, a row index included) of the score columns that
    `spec` selects: `A:B` columns A to B-1 (either end may be left out); `prefix*` the columns whose header name
    starts with prefix; `a,b,c` the columns so named (below a header) or at those positions (without one).

    >>> parse_score_columns(Path("p.csv"), "1:4", None, 5)
    [1, 2, 3]
    >>> parse_score_columns(Path("p.csv"), "p_*", ["id", "p_a", "p_b", "y"], 4)
    [1, 2]
    """
    text = spec.strip()
    fix = "--score-columns as 2:12 (positions, end excluded), cat,dog,eel (names) or prob_* (a name prefix)"
    if ":" in text:
        ends = text.split(":")
        bounds = [integer_or_none(end.strip()) if end.strip() else None for end in ends]
        if len(ends) != 2 or any(end.strip() and (bound is None or bound < 0) for end, bound in zip(ends, bounds)):
            raise InputError(f"Expected {fix}, got {spec!r}.")
        chosen = list(range(width))[slice(*bounds)]
    elif text.endswith("*"):
        if names is None:
            raise InputError(f"Expected a header naming the columns of {path} for --score-columns {spec!r} (a name "
                             "prefix); without one, select them by position (e.g. --score-columns 1:11).")
        chosen = [i for i, name in enumerate(names) if name.startswith(text[:-1])]
    else:
        wanted = [part.strip() for part in text.split(",")]
        if names is not None:
            missing = next((name for name in wanted if name not in names), None)
            if missing is not None:
                raise InputError(f"Expected a column named {missing!r} (--score-columns) in {path}; it has: "
                                 f"{', '.join(names)}.")
            chosen = [names.index(name) for name in wanted]
        else:
            positions = [integer_or_none(part) for part in wanted]
            if any(position is None or not 0 <= position < width for position in positions):
                raise InputError(f"Expected --score-columns positions 0 to {width - 1} for {path}, which has no "
                                 f"header naming its columns, got {spec!r}.")
            chosen = positions  # type: ignore[assignment]
    if not chosen or len(set(chosen)) != len(chosen):
        raise InputError(f"Expected --score-columns {spec!r} to select distinct columns of {path}, but it selects "
                         f"{'none' if not chosen else 'one twice'} (it has {width}).")
    return chosen


def probability_rows(values: np.ndarray) -> bool:
    """Whether every row of `values` (N, W) is a probability row, as this module counts them (written with a few
    decimals: entries within 1e-6 of [0, 1], the sum within 1e-3 + 5e-4 W of 1)."""
    if values.ndim != 2 or values.shape[1] < 2 or not values.size:
        return False
    return _probability_rows(values[:1]) and _probability_rows(values)  # (the first row rejects most tables at once)


def _probability_rows(values: np.ndarray) -> bool:
    with np.errstate(invalid="ignore"):
        inside = bool(((values >= -1e-6) & (values <= 1 + 1e-6)).all())
        return inside and bool((np.abs(values.sum(axis=1) - 1) <= _SUM_TOLERANCE + 5e-4 * values.shape[1]).all())


def _rows_without_each(values: np.ndarray) -> np.ndarray:
    """For each column j of `values` (N, W), whether the other columns form probability rows (`probability_rows`):
    the candidates that the first row allows, each then checked on every row (W tables of W - 1 columns would cost
    W times as much)."""
    width = values.shape[1]
    fits = np.zeros(width, dtype=bool)
    if width <= 2:
        return fits
    first = values[0]
    with np.errstate(invalid="ignore"):
        outside = ~((first >= -1e-6) & (first <= 1 + 1e-6))
        sums = np.abs(first.sum() - first - 1) <= _SUM_TOLERANCE + 5e-4 * (width - 1)
    candidates = np.flatnonzero(((outside.sum() - outside) == 0) & sums)
    for j in candidates[:3]:  # (more than a few: the columns are alike, no one column stands apart)
        fits[j] = probability_rows(np.delete(values, j, axis=1))
    return fits


def _increasing_integers(column: np.ndarray, *, step_one: bool) -> bool:
    """A row index or counter: whole numbers rising in every row (by exactly 1 with `step_one`)."""
    if column.size < _INDEX_MIN_ROWS or not np.isfinite(column).all() or not np.equal(np.mod(column, 1), 0).all():
        return False
    steps = np.diff(column)
    if (steps == 1).all():
        return True
    return not step_one and column.size >= _GAPPED_MIN_ROWS and column[0] >= 0 and bool((steps > 0).all())


def _distinct_integers(column: np.ndarray) -> bool:
    """Whole numbers, none repeated."""
    return bool(np.isfinite(column).all() and np.equal(np.mod(column, 1), 0).all()) \
        and np.unique(column).size == column.size


def _pattern(names: list[str]) -> tuple[str, set[int]] | None:
    """The shape most of the score columns' names share, and which names fit it: numbers (`0`, `1`, ...), one
    prefix and digits (`c0`, `p_1`, `class_3`), one prefix or suffix ending or starting at a separator (`prob_cat`,
    `cat_prob`). None when no shape fits at least two names and half of them (plain names: `cat`, `dog`)."""
    shapes: dict[str, set[int]] = {}
    for i, name in enumerate(names):
        if integer_or_none(name) is not None:
            shapes.setdefault("numbers", set()).add(i)
        digits = re.fullmatch(r"(\D+?)\d+", name)
        if digits:
            shapes.setdefault(f"{digits.group(1)}<digits>", set()).add(i)
        for cut in (name.find(sep) for sep in _SEPARATORS):
            if 0 < cut < len(name) - 1:
                shapes.setdefault(f"{name[:cut + 1]}<name>", set()).add(i)
        for cut in (name.rfind(sep) for sep in _SEPARATORS):
            if 0 < cut < len(name) - 1:
                shapes.setdefault(f"<name>{name[cut:]}", set()).add(i)
    if not shapes:
        return None
    shape, fits = max(shapes.items(), key=lambda item: (len(item[1]), item[0] == "numbers"))
    if len(fits) < 2 or 2 * len(fits) < len(names):
        return None
    return shape, fits


def _non_score_name(name: str, column: np.ndarray | None = None) -> bool:
    """Whether a column's name says it holds a per-sample figure, or a row index (then its values, `column`, must be
    integers)."""
    lowered = name.strip().lower()
    if lowered in NON_SCORE_NAMES or _NON_SCORE_PATTERN.fullmatch(lowered):
        return True
    return (lowered in INDEX_NAMES or bool(_INDEX_PATTERN.fullmatch(lowered))) and column is not None \
        and bool(np.isfinite(column).all() and np.equal(np.mod(column, 1), 0).all())


def score_columns(path: Path, names: list[str] | None, values: np.ndarray, labels: np.ndarray | None,
                  file_columns: list[int], notes: list[str]) -> list[int]:
    """The columns of `values` (N, W: every column of the table but the labels, in order, named `names` below a
    header) that hold class scores; the others are dropped with a note in `notes`, or the table is refused naming
    --score-columns where the rule cannot decide. `labels`: the label column's integers (None when it has none or
    holds names); `file_columns`: where each column of `values` is in the table (0: the first, a row index's place).

    >>> values = np.array([[210, .2, .8, 1.1], [211, .6, .4, .7], [212, .5, .5, .3]])
    >>> notes = []
    >>> score_columns(Path("p.csv"), ["sample_id", "c0", "c1", "entropy"], values, None, [0, 1, 2, 3], notes)
    [1, 2]
    """
    n, width = values.shape
    if width < 2 or n == 0:
        return list(range(width))
    keep = list(range(width))

    def shown(j: int) -> str:
        return f"column {names[j]!r}" if names is not None else f"the column at position {file_columns[j]}"

    def kept() -> np.ndarray:
        return values if len(keep) == width else values[:, keep]

    def belongs(j: int) -> bool:
        """The values say column j is a class: the columns form probability rows with it and not without it."""
        rest = [i for i in keep if i != j]
        return len(rest) >= 1 and probability_rows(kept()) and not probability_rows(values[:, rest])

    def drop(j: int, why: str) -> None:
        keep.remove(j)
        notes.append(f"{path.name}: {shown(j)} ({why}) is not a class's scores: ignored")

    # A row index (the first column: rising integers) or a row counter (a later column rising by 1, named apart).
    pattern = _pattern(names) if names is not None else None
    for j in range(width):
        first = j == 0 and file_columns[0] == 0
        named_apart = names is not None and pattern is not None and j not in pattern[1]
        if not (first or named_apart) or len(keep) < 2 \
                or not _increasing_integers(values[:, j], step_one=not first):
            continue  # (a counter elsewhere only when its name sets it apart; headerless: only the first column)
        if names is not None and pattern is not None and j in pattern[1] \
                and not _non_score_name(names[j], values[:, j]):
            raise _refusal(path, f"{shown(j)} holds rising integers, like a row index, but is named like the class "
                                 "scores")
        drop(j, "rising integers: a row index" if first else "rising by 1: a row counter")
    if names is not None:
        for j in list(keep):
            if len(keep) > 1 and _non_score_name(names[j], values[:, j]) and not belongs(j):
                drop(j, "a per-sample figure, by its name")
        for j in list(keep):
            if labels is not None and len(keep) > 2 and np.array_equal(values[:, j], labels) and not belongs(j) and (
                    names[j].strip().lower() in SECOND_LABEL_NAMES or pattern is None or j not in pattern[1]):
                drop(j, "a copy of the label column")
        outliers = [] if pattern is None else [j for j in keep if j not in pattern[1]]
        rest = [j for j in keep if j not in outliers]
        if outliers and len(rest) >= 2 and not probability_rows(kept()):
            if not probability_rows(values[:, rest]):
                listed = ", ".join(repr(names[j]) for j in outliers[:3])
                raise _refusal(path, f"{'column' if len(outliers) == 1 else 'columns'} {listed} "
                                     f"{'is' if len(outliers) == 1 else 'are'} named unlike the class columns "
                                     f"({', '.join(repr(names[j]) for j in rest[:3])}, ...) and the values do not "
                                     "tell")
            for j in outliers:
                drop(j, "named unlike the class columns, which form probability rows without it")
    if keep and keep[0] == 0 and file_columns[0] == 0 and n >= _GAPPED_MIN_ROWS and len(keep) > 1 \
            and _distinct_integers(values[:, 0]) and not belongs(0) \
            and not all(_distinct_integers(values[:, j]) for j in keep[1:]):
        # A shuffled frame's index (`df.sample(frac=1).to_csv(header=False)`): not a score, but no rule says so.
        raise _refusal(path, f"{shown(0)} holds distinct whole numbers, like a shuffled row index, beside scores "
                             "that are not")
    copies = [j for j in keep if labels is not None and n >= _COPY_MIN_ROWS and len(keep) > 1
              and np.array_equal(values[:, j], labels) and not belongs(j)]
    if copies:  # (with or without a header: a class's scores are not the labels again, row by row)
        raise _refusal(path, f"{shown(copies[0])} holds the labels again, row by row")
    if len(keep) >= 3 and n >= _INDEX_MIN_ROWS and not probability_rows(kept()):
        # A subset that forms probability rows while the whole does not: one column is inconsistent with the rest.
        fits = [keep[j] for j in np.flatnonzero(_rows_without_each(kept()))]
        if len(fits) == 1:
            raise _refusal(path, f"the other columns form probability rows without {shown(fits[0])}, which does not "
                                 "belong with them")
    return keep


def text_score_columns(path: Path, table: np.ndarray, spec: str | None) -> tuple[np.ndarray, tuple[str, ...]]:
    """The score columns of a headerless table of scores (an np.savetxt .txt, its labels in another file): those
    `spec` (--score-columns, positions) selects, else all but a row index (`score_columns`); and the notes.

    >>> table = np.array([[7, .2, .8], [8, .6, .4], [9, .5, .5]])
    >>> text_score_columns(Path("p.txt"), table, None)[0].tolist()
    [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
    """
    notes: list[str] = []
    if spec is not None:
        keep = parse_score_columns(path, spec, None, table.shape[1])
        notes.append(f"{path.name}: score columns {spec} (--score-columns)")
    else:
        keep = score_columns(path, None, table, None, list(range(table.shape[1])), notes)
    if len(keep) == table.shape[1] and keep == sorted(keep):
        return table, tuple(notes)
    chosen = table[:, keep]
    return (chosen[:, 0] if chosen.shape[1] == 1 else chosen), tuple(notes)


def without_index(path: Path, names: list[str] | None, width: int, rows: list[tuple[int, list[str]]],
                   labels_key: str | None, decimal_comma: bool, notes: list[str]
                   ) -> tuple[list[str] | None, int, list[tuple[int, list[str]]]]:
    """The table without pandas' row index (rule 5), when its first column is one."""
    if width <= 2 or not rows:
        return names, width, rows
    cells = [cells[0] for _, cells in rows]
    if names is not None:
        if names[0] == labels_key or names[0].lower() in CSV_LABEL_NAMES:
            return names, width, rows
        # Integers as pandas numbers rows, or names (a string index: sample ids, file names), which no score is.
        integers = integers_or_none(cells, decimal_comma) is not None
        texts = not integers and all(cell and number_or_none(cell, decimal_comma) is None for cell in cells)
        if names[0].lower() not in CSV_INDEX_NAMES:
            # Under another name (`df.set_index("file").to_csv()`): names that never repeat, 3+ of them (class names
            # as labels repeat); integers are left to rule 8.
            if not texts or len(cells) < 3 or len(set(cells)) != len(cells) \
                    or number_or_none(names[0], decimal_comma) is not None:
                return names, width, rows
        elif not integers and not texts:
            return names, width, rows
        kind = "integers" if integers else "names"
        notes.append(f"{path.name}: first column {names[0]!r} read as a row index and ignored" if names[0] else
                     f"{path.name}: first column (no name, {kind}: a row index as pandas writes it) ignored")
        names = names[1:]
    else:
        # `to_csv(header=False)` keeps pandas' row numbers 0, 1, 2, ...: a column of scores never counts the rows.
        if len(rows) < 3 or not all(integer_or_none(cell, decimal_comma) == i for i, cell in enumerate(cells)):
            return names, width, rows
        notes.append(f"{path.name}: first column (0, 1, 2, ...: a row index as pandas writes it) ignored")
    return names, width - 1, [(number, row[1:]) for number, row in rows]


def find_label_column(path: Path, names: list[str] | None, width: int, labels_key: str | None, notes: list[str]) -> int:
    """Rule 4: the column `labels_key` names, else the one named as labels, else the last."""
    named = [i for i, name in enumerate(names or []) if name.lower() in CSV_LABEL_NAMES]
    if labels_key is not None:
        if names is None or labels_key not in names:
            listed = ", ".join(names) if names else "no header"
            raise InputError(f"Expected a column named '{labels_key}' (--labels-key) in {path}; it has: {listed}.")
        column = names.index(labels_key)
        notes.extend(f"{path.name}: column {names[i]!r}, named as labels, read as a class's scores: --labels-key "
                     f"names {labels_key!r}" for i in named if i != column)
        return column
    if len(named) > 1:
        found = ", ".join(repr(names[i]) for i in named[:-1]) + f" and {names[named[-1]]!r}"
        raise InputError(f"Expected one label column in {path}, found {found}: pass --labels-key NAME.")
    return named[0] if named else width - 1


def without_label_copies(path: Path, names: list[str], width: int, rows: list[tuple[int, list[str]]],
                          file_columns: list[int], notes: list[str]
                          ) -> tuple[list[str], int, list[tuple[int, list[str]]], list[int]]:
    """Two or more columns named as labels that hold the same cells in every row: one label column, the others
    dropped (noted); different cells are refused by `_label_column`."""
    named = [i for i, name in enumerate(names) if name.lower() in CSV_LABEL_NAMES]
    if len(named) < 2 or any(len({cells[i] for i in named}) != 1 for _, cells in rows):
        return names, width, rows, file_columns
    extra = named[1:]
    notes.extend(f"{path.name}: column {names[i]!r} (the same labels as {names[named[0]]!r}) ignored" for i in extra)
    keep = [i for i in range(width) if i not in extra]
    return ([names[i] for i in keep], len(keep), [(number, [cells[i] for i in keep]) for number, cells in rows],
            [file_columns[i] for i in keep])


def chosen_columns(path: Path, names: list[str] | None, rows: list[tuple[int, list[str]]], spec: str,
                    labels_key: str | None, no_labels: bool, notes: list[str]
                    ) -> tuple[list[str] | None, list[tuple[int, list[str]]], int | None]:
    """The columns --score-columns selects and the label column (--labels-key, else the one named as labels among
    the others, else the last of them), every other column dropped (noted)."""
    width = len(rows[0][1])
    chosen = parse_score_columns(path, spec, names, width)
    others = [i for i in range(width) if i not in chosen]
    label = None
    if labels_key is not None:
        if names is None or labels_key not in names:
            listed = ", ".join(names) if names else "no header"
            raise InputError(f"Expected a column named '{labels_key}' (--labels-key) in {path}; it has: {listed}.")
        label = names.index(labels_key)
        if label in chosen:
            raise InputError(f"Expected --score-columns to leave out the label column {labels_key!r} of {path}.")
    elif others and not no_labels:
        named = [i for i in others if names is not None and names[i].lower() in CSV_LABEL_NAMES]
        label = named[0] if len(named) == 1 else others[-1]
        if len(named) > 1:
            found = ", ".join(repr(names[i]) for i in named)
            raise InputError(f"Expected one label column in {path} beside --score-columns, found {found}: pass "
                             "--labels-key NAME.")
    keep = chosen + ([] if label is None else [label])
    described = ", ".join(names[i] for i in chosen) if names is not None else spec
    ignored = [i for i in others if i != label]
    notes.append(f"{path.name}: score columns {described} (--score-columns)"
                 + (f"; {len(ignored)} other column{'s' if len(ignored) != 1 else ''} ignored" if ignored else ""))
    return ([names[i] for i in keep] if names is not None else None,
            [(number, [cells[i] for i in keep]) for number, cells in rows],
            None if label is None else len(chosen))


def _refusal(path: Path, why: str) -> InputError:
    return InputError(f"Expected every column of {path} beside the labels to hold a class's scores, but {why}: pass "
                      "--score-columns to select them (e.g. --score-columns 1:11, --score-columns cat,dog or "
                      "--score-columns prob_*).")
