"""The rules text files are read by (adacal.sources.text_tables, rules 1 to 6), checked against independent truth.

The number grammar against a hand-written reader of the same grammar; random tables written with every separator,
with and without decimal commas and headers, read back to the numbers written or refused (never read otherwise);
every file that leaves two readings refused in one line naming the option, and read as the option says.
"""

from __future__ import annotations

import doctest
import gzip
import json
import math

import numpy as np
import pytest
from cli_helpers import one_line_error, runner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from adacal.cli import app
from adacal.errors import InputError
from adacal.sources import documents, json_predictions, text_numbers, text_tables
from adacal.sources.documents import parse_json, read_history, read_json
from adacal.sources.json_predictions import read_json_predictions, read_jsonl
from adacal.sources.text_numbers import is_integer_text, parse_number
from adacal.sources.text_tables import read_csv_with_notes, read_text_table

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ASCII_DIGITS = "0123456789"


# ------------------------------------------------------------------------------------------------ rule 1: numbers


def reference_number(text: str, decimal_comma: bool = False) -> float | None:
    """Rule 1 read character by character (no regular expression, no float() on anything it did not check)."""
    cell = text.strip()
    body = cell[1:] if cell[:1] in ("+", "-") else cell
    if body.lower() in ("nan", "inf", "infinity"):
        return float(cell)
    marks = ".," if decimal_comma else "."
    i, before, after = 0, 0, 0
    while i < len(body) and body[i] in ASCII_DIGITS:
        i, before = i + 1, before + 1
    if i < len(body) and body[i] in marks:
        i += 1
        while i < len(body) and body[i] in ASCII_DIGITS:
            i, after = i + 1, after + 1
    if before + after == 0:
        return None
    if i < len(body) and body[i] in "eE":
        i += 1
        if i < len(body) and body[i] in "+-":
            i += 1
        digits = 0
        while i < len(body) and body[i] in ASCII_DIGITS:
            i, digits = i + 1, digits + 1
        if digits == 0:
            return None
    if i != len(body):
        return None
    return float(cell.replace(",", "."))


def reference_integer(text: str) -> int | None:
    cell = text.strip()
    body = cell[1:] if cell[:1] in ("+", "-") else cell
    if body and all(c in ASCII_DIGITS for c in body):
        value = int(cell)
    else:
        number = reference_number(cell)
        if number is None or not math.isfinite(number) or not number.is_integer():
            return None
        value = int(number)
    return value if abs(value) < 2**62 else None


def same_number(one: float | None, other: float | None) -> bool:
    if one is None or other is None:
        return one is other
    return one == other or (math.isnan(one) and math.isnan(other))


# Pieces that make the grammar's edges likely: underscores, inner spaces, non-ASCII digits, hex, signs, exponents.
PIECES = ["0", "1", "5", "9", "12", ".", ",", "e", "E", "+", "-", "_", " ", "\t", "\u0661", "\uff11", "x", "0x1f",
          "nan", "NaN", "inf", "Infinity", "infinity", "in", "\u00a0"]
TEXTS = st.one_of(st.lists(st.sampled_from(PIECES), max_size=7).map("".join),
                  st.text(alphabet="0123456789.,eE+-_ \u0661", max_size=8))


@SETTINGS
@given(text=TEXTS, decimal_comma=st.booleans())
def test_the_number_grammar_accepts_exactly_what_rule_1_says(text, decimal_comma):
    assert same_number(parse_number(text, decimal_comma=decimal_comma), reference_number(text, decimal_comma))


@SETTINGS
@given(text=TEXTS)
def test_integers_as_text_are_rule_1_integers(text):
    assert is_integer_text(text) == (reference_integer(text) is not None)


@pytest.mark.parametrize("text, value", [
    ("0_5", None), ("1_000", None), ("\u0661", None), ("0x10", None), ("1 000", None), ("1e5 ", 1e5), (" 1", 1.0),
    ("infinity", math.inf), ("-Inf", -math.inf), ("1.", 1.0), (".5", 0.5), ("1e", None), ("e5", None), ("", None),
    ("+-1", None), ("0,25", None),
])
def test_the_number_grammar_on_the_spellings_float_also_takes(text, value):
    assert same_number(parse_number(text), value)


@pytest.mark.parametrize("text, integer", [
    ("3", True), ("-2", True), ("+7", True), ("3.0", True), ("1e3", True), ("3.5", False), ("3_0", False),
    ("\u0663", False), ("nan", False), ("inf", False), (str(2**62), False), (str(2**62 - 1), True),
])
def test_is_integer_text(text, integer):
    assert is_integer_text(text) is integer


cells = st.lists(TEXTS.filter(lambda t: ";" not in t and "\n" not in t and "\r" not in t and '"' not in t
                              and t.strip()), min_size=1, max_size=6)


@SETTINGS
@given(column=cells, separator=st.sampled_from([";", "\t"]))
def test_a_column_of_cells_reads_as_the_reference_or_names_the_first_bad_line(tmp_path_factory, column, separator):
    """Whole columns are checked at once: the result must be the cell-by-cell reading, and a refusal must name the
    first line the reference refuses."""
    assume(separator == ";" or not any("\t" in cell for cell in column))
    path = tmp_path_factory.mktemp("col") / "c.csv"
    path.write_text("".join(f"{cell}\n" for cell in column), encoding="utf-8")
    truth = [reference_number(cell, decimal_comma=True) for cell in column]
    if None in truth:
        bad = truth.index(None) + 1
        with pytest.raises(InputError, match=rf"line {bad} of "):
            read_csv_with_notes(path, scores_only=True, header=False, separator=separator)
        return
    table, _ = read_csv_with_notes(path, scores_only=True, header=False, separator=separator)
    np.testing.assert_array_equal(np.atleast_1d(table["scores"]), np.array(truth))


# ------------------------------------------------------------------------------- rules 2-3: random tables read back

VALUES = st.one_of(st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5, 0.25]),
                   st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda v: float(f"{v:.6g}")))


@st.composite
def tables(draw):
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 4))
    scores = np.array(draw(st.lists(st.lists(VALUES, min_size=k, max_size=k), min_size=n, max_size=n)))
    labels = np.array(draw(st.lists(st.integers(0, max(k, 2) - 1), min_size=n, max_size=n)))
    separator = draw(st.sampled_from([",", ";", "\t", " "]))
    decimal_comma = separator in (";", "\t") and draw(st.booleans())
    header = draw(st.booleans())
    style = draw(st.sampled_from(["repr", "g", "e"]))
    return scores, labels, separator, decimal_comma, header, style


def written(value: float, style: str, decimal_comma: bool) -> str:
    value = float(value)
    text = {"repr": repr(value), "g": f"{value:g}", "e": f"{value:.17e}"}[style]
    return text.replace(".", ",") if decimal_comma else text


def write_table(path, scores, labels, separator, decimal_comma, header, style):
    k = scores.shape[1]
    lines = [separator.join([*(f"c{j}" for j in range(k)), "label"])] if header else []
    lines += [separator.join([*(written(v, style, decimal_comma) for v in row), str(label)])
              for row, label in zip(scores, labels)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def is_row_count(column: np.ndarray) -> bool:
    """A first column 0, 1, 2, ... without a header is pandas' row index (rule 5): not generated."""
    return len(column) >= 3 and np.array_equal(column, np.arange(len(column)))


def one_line_naming_an_option(error: InputError) -> None:
    message = str(error)
    assert "\n" not in message and message.startswith("Expected ")
    assert "--separator" in message or "--header" in message, message


@SETTINGS
@given(table=tables())
def test_random_tables_read_back_to_their_numbers_or_are_refused(tmp_path_factory, table):
    scores, labels, separator, decimal_comma, header, style = table
    assume(header or scores.shape[1] < 2 or not is_row_count(scores[:, 0]))
    path = tmp_path_factory.mktemp("t") / "p.csv"
    write_table(path, scores, labels, separator, decimal_comma, header, style)

    def check(result):
        read, _ = result
        assert read["scores"].ndim == (1 if scores.shape[1] == 1 else 2)  # one score column: a binary model's
        np.testing.assert_array_equal(read["scores"].reshape(scores.shape), scores)
        np.testing.assert_array_equal(read["labels"], labels)
        assert ("classes" in read) == header

    try:
        check(read_csv_with_notes(path))
    except InputError as error:
        one_line_naming_an_option(error)
    check(read_csv_with_notes(path, separator=separator, header=header))


@SETTINGS
@given(table=tables())
def test_the_same_bytes_as_txt_and_tsv_read_alike(tmp_path_factory, table):
    """A .txt is all numbers (its label column a column of numbers); named .tsv, the same tab-separated bytes give
    the same numbers."""
    scores, labels, separator, decimal_comma, _, style = table
    folder = tmp_path_factory.mktemp("x")
    write_table(folder / "p.txt", scores, labels, separator, decimal_comma, False, style)
    everything = np.column_stack([scores, labels]).astype(np.float64)
    try:
        np.testing.assert_array_equal(read_text_table(folder / "p.txt"), everything)
    except InputError as error:
        one_line_naming_an_option(error)
    np.testing.assert_array_equal(read_text_table(folder / "p.txt", separator=separator), everything)
    if separator == "\t":
        (folder / "p.tsv").write_bytes((folder / "p.txt").read_bytes())
        assume(scores.shape[1] < 2 or not is_row_count(scores[:, 0]))
        read, _ = read_csv_with_notes(folder / "p.tsv", header=False)
        np.testing.assert_array_equal(np.column_stack([read["scores"], read["labels"]]), everything)


# --------------------------------------------------------------------------------------- ambiguity, and the options

BINARY_SAMPLES = "0,1\n0.3,0\n0.8,1\n"
AMBIGUOUS = {
    # pandas' column numbers of a one-score table (`to_csv(index=False)`), or a sample: score 0, label 1.
    "pandas header or a binary sample": (
        "b.csv", BINARY_SAMPLES, {}, "--header or --no-header",
        [({"header": False}, [0.0, 0.3, 0.8], [1, 0, 1]), ({"header": True}, [0.3, 0.8], [0, 1])]),
    # With no label column every line of numbers is a sample: 0,1,2 may be logits.
    "pandas header or scores": (
        "s.csv", "0,1,2\n0.5,0.1,3.5\n", {"scores_only": True}, "--header or --no-header",
        [({"header": False, "scores_only": True}, [[0, 1, 2], [0.5, 0.1, 3.5]], None),
         ({"header": True, "scores_only": True}, [[0.5, 0.1, 3.5]], None)]),
    "two label columns": (
        "l.csv", "a,b,label,target\n0.2,0.8,1,0\n0.6,0.4,0,1\n", {}, "--labels-key NAME",
        [({"labels_key": "label"}, [[0.2, 0.8, 0], [0.6, 0.4, 1]], [1, 0]),
         ({"labels_key": "target"}, [[0.2, 0.8, 1], [0.6, 0.4, 0]], [0, 1])]),
    "label columns named in two cases": (
        "c.csv", "a,b,Y,y\n0.2,0.8,1,0\n", {}, "found 'Y' and 'y': pass --labels-key NAME",
        [({"labels_key": "y"}, [[0.2, 0.8, 1]], [0])]),
    # ',' gives a class named '5;1'; ';' gives the score 0.5 with a decimal comma: the header names both ways.
    "two separators": (
        "t.csv", "x,y;label\n0,5;1\n0,25;0\n", {}, "--separator ',' or --separator ';'",
        [({"separator": ";"}, [0.5, 0.25], [1, 0]), ({"separator": ","}, [0, 0], ["5;1", "25;0"])]),
    # One column of decimal commas, or two columns of integers.
    "decimal commas or two columns": (
        "o.csv", "0,5\n0,75\n", {"scores_only": True}, "--separator ',' or --separator ';'",
        [({"separator": ";", "scores_only": True}, [0.5, 0.75], None),
         ({"separator": ",", "scores_only": True}, [[0, 5], [0, 75]], None)]),
}


@pytest.mark.parametrize("case", list(AMBIGUOUS))
def test_a_file_with_two_readings_is_refused_in_one_line_and_the_option_reads_it(tmp_path, case):
    name, text, options, option, readings = AMBIGUOUS[case]
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as refused:
        read_csv_with_notes(tmp_path / name, **options)
    message = str(refused.value)
    assert "\n" not in message and option in message and name in message, message
    for chosen, scores, labels in readings:
        table, _ = read_csv_with_notes(tmp_path / name, **chosen)
        np.testing.assert_array_equal(table["scores"], np.array(scores, dtype=np.float64))
        if labels is not None:
            np.testing.assert_array_equal(table["labels"], np.array(labels))


def test_a_txt_of_decimal_commas_is_refused_and_the_separator_reads_it(tmp_path):
    (tmp_path / "p.txt").write_text("0,5\n0,75\n")
    with pytest.raises(InputError, match=r"reads as 2 columns with ',' and as 1 column of decimal commas with ';': "
                                         r"pass --separator ',' or --separator ';'\.$"):
        read_text_table(tmp_path / "p.txt")
    np.testing.assert_array_equal(read_text_table(tmp_path / "p.txt", separator=";"), [0.5, 0.75])
    np.testing.assert_array_equal(read_text_table(tmp_path / "p.txt", separator=","), [[0, 5], [0, 75]])


def test_pandas_column_numbers_that_no_sample_can_be_are_a_header(tmp_path):
    """`pd.DataFrame(np.column_stack([probs, labels])).to_csv(index=False)`: 0,1,2 above samples; as a sample its
    label would be 2, out of range for two score columns."""
    (tmp_path / "p.csv").write_text("0,1,2\n0.2,0.8,1\n0.6,0.4,0\n")
    table, notes = read_csv_with_notes(tmp_path / "p.csv")
    np.testing.assert_array_equal(table["scores"], [[0.2, 0.8], [0.6, 0.4]])
    assert notes == ["p.csv: first line 0,1,2 read as pandas' column numbers (a header), not as a sample"]
    table, _ = read_csv_with_notes(tmp_path / "p.csv", header=False)
    assert table["scores"].shape == (3, 2)


def test_the_pandas_header_refusal_through_the_cli(tmp_path):
    (tmp_path / "b.csv").write_text(BINARY_SAMPLES)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "b.csv")]), "pass --header or --no-header")


@pytest.mark.parametrize("name, text", [
    ("p.json", '{"probs": [[0.2, 0.8]], "labels": [1], "probs": [[0.9, 0.1]]}'),
    ("s.json", '[{"probs": [0.2, 0.8], "label": 1, "label": 0}]'),
    ("p.jsonl", '{"probs": [0.2, 0.8], "label": 1}\n{"probs": [0.2, 0.8], "probs": [0.5, 0.5], "label": 0}\n'),
])
def test_a_json_key_given_twice_is_refused(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    reader = read_jsonl if name.endswith(".jsonl") else read_json_predictions
    with pytest.raises(InputError, match=r"^Expected .* to name each key once, but '(probs|label)' appears twice "
                                         r"\(in an object with the keys .*\)\.$") as refused:
        reader(tmp_path / name)
    if name.endswith(".jsonl"):
        assert str(refused.value).startswith(f"Expected line 2 of {tmp_path / name} ")
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / name)]), "appears twice")


def test_every_json_document_refuses_a_key_given_twice(tmp_path):
    with pytest.raises(InputError, match=r"'b' appears 3 times \(in an object with the keys 'b', 'c'\)"):
        parse_json('{"a": {"b": 1, "c": 2, "b": 3, "b": 4}}', label="x")
    (tmp_path / "r.json").write_text('{"schema_version": 1, "results": {}, "results": {"x": 1}}')
    with pytest.raises(InputError, match=r"r\.json to name each key once, but 'results' appears twice"):
        read_json(tmp_path / "r.json")
    (tmp_path / "history.jsonl").write_text('{"epoch": 1}\n{"epoch": 2, "epoch": 3}\n')
    with pytest.raises(InputError, match=r"line 2 of .*history\.jsonl to name each key once, but 'epoch'"):
        read_history(tmp_path / "history.jsonl")
    assert parse_json('{"a": {"b": 1}, "b": {"a": 2}}', label="x") == {"a": {"b": 1}, "b": {"a": 2}}


# ------------------------------------------------------------------------------------- the file's own examples

def test_underscores_and_other_digits_are_not_numbers_anywhere(tmp_path):
    (tmp_path / "p.csv").write_text("a,b,label\n0_5,0.5,1\n")
    with pytest.raises(InputError, match=r"scores on line 2 of .* to be numbers, got '0_5'"):
        read_csv_with_notes(tmp_path / "p.csv")
    (tmp_path / "p.txt").write_text("0.5 0_1\n")
    with pytest.raises(InputError, match=r"line 1 of .* to hold numbers, got '0_1'"):
        read_text_table(tmp_path / "p.txt")
    (tmp_path / "q.csv").write_text("a,b,label\n0.5,0.5,1_0\n0.5,0.5,\u0661\n")
    table, _ = read_csv_with_notes(tmp_path / "q.csv")
    assert table["labels"].dtype.kind == "U"  # names, not classes 10 and 1
    (tmp_path / "p.jsonl").write_text('{"logits": [0.1, 0.9], "label": "1_0"}\n')
    from adacal.interpretation import load_predictions

    with pytest.raises(InputError, match="got strings"):
        load_predictions(tmp_path / "p.jsonl")


def test_a_tab_separated_txt_with_decimal_commas_reads_like_the_tsv(tmp_path):
    data = "0,25\t0,75\t1\n0,5\t0,5\t0\n"
    (tmp_path / "p.txt").write_text(data)
    (tmp_path / "p.tsv").write_text(data)
    np.testing.assert_array_equal(read_text_table(tmp_path / "p.txt"), [[0.25, 0.75, 1], [0.5, 0.5, 0]])
    table, notes = read_csv_with_notes(tmp_path / "p.tsv")
    np.testing.assert_array_equal(table["scores"], [[0.25, 0.75], [0.5, 0.5]])
    assert notes == ["p.tsv: commas inside cells read as decimal commas"]


def test_headerless_class_names_are_refused_as_no_header_names_them(tmp_path):
    """Without a header no names say which column is which class; before, '0,5;1' (a decimal comma) could be read
    with ',' as a score 0 and a class named '5;1'."""
    (tmp_path / "n.csv").write_text("0.2,0.8,dog\n0.6,0.4,cat\n")
    with pytest.raises(InputError, match=r"label on line 1 of .* to be a class index, got 'dog': class names need a "
                                         r"header line"):
        read_csv_with_notes(tmp_path / "n.csv")
    (tmp_path / "e.csv").write_text("0,5;1\n0,25;0\n")
    table, _ = read_csv_with_notes(tmp_path / "e.csv")
    np.testing.assert_array_equal(table["scores"], [0.5, 0.25])


@pytest.mark.parametrize("text, options, scores", [
    ("0.1 0.9 1\n0.3 0.7 0\n", {}, [[0.1, 0.9], [0.3, 0.7]]),  # whitespace between cells
    ("a, b, label\n0.1, 0.9, 1\n", {}, [[0.1, 0.9]]),  # comma and space
    ("a\tb\tlabel\n0.1\t0.9\t\"1\"\n", {}, [[0.1, 0.9]]),  # tab, a quoted cell
    ("0.1|0.9|1\n", {"separator": "|"}, None),
    ("a\tb\tlabel\n0,1\t0,9\t1\n", {"separator": "\\t"}, [[0.1, 0.9]]),  # a tab as a shell passes it
    ("a\tb\tlabel\n0,1\t0,9\t1\n", {"separator": "tab"}, [[0.1, 0.9]]),
])
def test_separators(tmp_path, text, options, scores):
    (tmp_path / "p.csv").write_text(text)
    if scores is None:
        with pytest.raises(InputError, match=r"^Expected --separator to be ',', ';', '\\t' \(tab\) or ' ' "):
            read_csv_with_notes(tmp_path / "p.csv", **options)
        return
    table, _ = read_csv_with_notes(tmp_path / "p.csv", **options)
    np.testing.assert_array_equal(table["scores"], scores)


def test_a_file_is_decided_from_every_line_not_a_sample_of_it(tmp_path):
    """The old reader looked at 4 KiB: a decimal comma past it did not count."""
    lines = ["a;b;label"] + ["0.25;0.75;1"] * 400 + ["0,5;0,5;0"]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    table, notes = read_csv_with_notes(tmp_path / "p.csv")
    assert table["scores"][-1].tolist() == [0.5, 0.5] and table["scores"].shape == (401, 2)
    assert notes == ["p.csv: commas inside cells read as decimal commas"] or notes == []
    lines[-1] = "0.5,0.5,0"  # a line that ';' cannot split: refused naming it
    (tmp_path / "q.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 402 of .* to have 3 columns, got 1"):
        read_csv_with_notes(tmp_path / "q.csv")


def test_kept_features_still_read(tmp_path):
    """BOM, gzip, comments and names in a .txt, pandas' index, predicted classes, booleans, class names."""
    (tmp_path / "b.csv").write_bytes("\ufeffa,b,label\n0.2,0.8,True\n0.6,0.4,False\n".encode())
    table, _ = read_csv_with_notes(tmp_path / "b.csv")
    assert table["labels"].tolist() == [True, False] and table["classes"].tolist() == ["a", "b"]
    (tmp_path / "g.csv.gz").write_bytes(gzip.compress(b",cat,dog,bird,pred,label\n0,0.1,0.2,0.7,2,bird\n"
                                                      b"1,0.5,0.3,0.2,0,cat\n"))
    table, notes = read_csv_with_notes(tmp_path / "g.csv.gz")
    assert table["classes"].tolist() == ["cat", "dog", "bird"] and table["labels"].tolist() == ["bird", "cat"]
    assert len(notes) == 2 and "row index" in notes[0] and "predicted classes" in notes[1]
    (tmp_path / "p.txt").write_text("# scores\ncat dog\n1.5 -2 # first\n\n3 4e-1\n")
    np.testing.assert_array_equal(read_text_table(tmp_path / "p.txt"), [[1.5, -2], [3, 0.4]])


def test_the_docstring_examples_run():
    for module in (text_tables, text_numbers, json_predictions, documents):
        failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failed == 0, module.__name__


def test_a_json_document_without_repeats_is_parsed_as_before():
    document = {"probs": [[0.1, 0.9]], "labels": [1], "meta": {"name": "m", "tags": [{"a": 1}, {"a": 2}]}}
    assert parse_json(json.dumps(document), label="x") == document
