"""Option log-probability records and verbalised confidences (adacal.sources.logprob_maps,
adacal.interpretation.llm_maps; docs/inputs.md "LLM evaluation outputs"): `{option: logprob}` maps, the OpenAI API's
chat / legacy completions / Batch layouts, lists of option log-probabilities with a gold index, each checked against a
hand softmax and the same predictions as an .npz; every ambiguous case refused naming its option."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from adacal.cli import app
from adacal.commands.inputs import resolve_evaluation_input
from adacal.errors import InputError
from adacal.evaluation import evaluate_confidences
from adacal.interpretation import load_predictions
from adacal.interpretation.confidence import TopLabelPredictions
from adacal.interpretation.llm import normal_option
from adacal.interpretation.llm_maps import parse_verbalized
from adacal.sources import ReadOptions

from cli_helpers import one_line_error

runner = CliRunner()
RNG = np.random.default_rng(141)
N = 80
LOGPROBS = np.log(RNG.dirichlet(np.full(4, 0.4), N) * 0.98)  # a little mass left to other tokens
GOLD = RNG.integers(0, 4, N)
SUBJECTS = np.array(["math", "law"])[RNG.integers(0, 2, N)]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _map_records():
    return [{"id": f"q{i}", "subject": str(SUBJECTS[i]), "question": "Which?",
             "top_logprobs": {letter: float(LOGPROBS[i, j]) for j, letter in enumerate("ABCD")},
             "answer": "ABCD"[GOLD[i]]} for i in range(N)]


def _chat_completion(tokens, content="B"):
    """An OpenAI chat.completion response with logprobs=True, top_logprobs=len(tokens)."""
    top = [{"token": token, "logprob": logprob, "bytes": list(token.encode())} for token, logprob in tokens]
    return {"id": "chatcmpl-9", "object": "chat.completion", "created": 1702685778, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"],
                                                   "bytes": top[0]["bytes"], "top_logprobs": top}],
                                      "refusal": None},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
            "system_fingerprint": "fp_1"}


def test_letter_maps_are_fixed_k_logits_with_groups_and_match_an_npz(tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl", _map_records())
    predictions = load_predictions(path)
    np.testing.assert_allclose(predictions.logits, LOGPROBS)
    assert predictions.labels.tolist() == GOLD.tolist()
    assert predictions.groups["subject"].tolist() == SUBJECTS.tolist()
    npz = tmp_path / "same.npz"
    np.savez(npz, logits=LOGPROBS, labels=GOLD)
    metrics = []
    for source in (path, npz):
        out = tmp_path / f"{source.stem}.json"
        result = runner.invoke(app, ["evaluate", str(source), "--json", str(out)])
        assert result.exit_code == 0, result.output
        metrics.append(json.loads(out.read_text())["results"]["metrics"])
    assert metrics[0] == pytest.approx(metrics[1], abs=1e-12)


def test_token_variants_name_one_option_and_their_probabilities_add():
    assert [normal_option(token) for token in (" A", "A.", "a", "(b)", "c)", "D:", " Rome ")] == [
        "A", "A", "A", "B", "C", "D", "Rome"]


def test_spellings_of_one_option_are_summed(tmp_path):
    record = {"top_logprobs": {" A": -0.9, "A": -1.6, "b.": -2.0, "(C)": -3.0, "d": -4.0}, "answer": "a"}
    predictions = load_predictions(_jsonl(tmp_path / "v.jsonl", [record, record]))
    np.testing.assert_allclose(predictions.logits[0], [np.log(np.exp(-0.9) + np.exp(-1.6)), -2.0, -3.0, -4.0])
    assert predictions.labels.tolist() == [0, 0]


@pytest.mark.parametrize("layout", ["chat", "batch", "legacy"])
def test_openai_response_layouts_with_other_tokens_need_options(tmp_path, layout):
    tokens = [("B", -0.2), ("A", -2.0), ("The", -3.0), ("C", -4.0), ("D", -5.5)]
    if layout == "chat":
        held = {"response": _chat_completion(tokens)}
    elif layout == "batch":
        held = {"custom_id": "q", "response": {"status_code": 200, "request_id": "req_1",
                                               "body": _chat_completion(tokens)}, "error": None}
    else:
        held = {"choices": [{"text": " B", "index": 0, "finish_reason": "length",
                             "logprobs": {"tokens": [" B"], "token_logprobs": [-0.2], "text_offset": [90],
                                          "top_logprobs": [{f" {t}": lp for t, lp in tokens}]}}]}
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([{**held, "answer": "B"}, {**held, "answer": "C"}]))
    with pytest.raises(InputError, match="--options A,B,C,D"):
        load_predictions(path)
    predictions = load_predictions(path, options=ReadOptions(answer_options="A,B,C,D"))
    np.testing.assert_allclose(predictions.logits, [[-2.0, -0.2, -4.0, -5.5]] * 2)
    assert predictions.labels.tolist() == [1, 2]
    assert any("1 tokens" in note or "2 tokens" in note for note in predictions.notes)


def test_missing_options_are_refused_unless_read_as_probability_zero(tmp_path):
    records = [{"options": ["Paris", "Rome", "Oslo", "Ulm"], "top_logprobs": {"A": -0.4, "B": -1.2, "C": -3.0},
                "answer": "Rome"},
               {"options": ["Paris", "Rome", "Oslo", "Ulm"],
                "top_logprobs": {"A": -0.4, "B": -1.2, "C": -3.0, "D": -3.5}, "answer": "Paris"}]
    path = _jsonl(tmp_path / "top3.jsonl", records)
    with pytest.raises(InputError, match="1 of 2 questions miss.*misses D.*--missing-options zero"):
        load_predictions(path, options=ReadOptions(answer_is=None))
    result = runner.invoke(app, ["evaluate", str(path)])
    assert one_line_error(result, "--missing-options zero")
    read = resolve_evaluation_input(path, options=ReadOptions(missing_options="zero")).predictions
    assert isinstance(read, TopLabelPredictions)
    first = np.exp([-0.4, -1.2, -3.0])
    second = np.exp([-0.4, -1.2, -3.0, -3.5])
    np.testing.assert_allclose(read.confidences, [first.max() / first.sum(), second.max() / second.sum()])
    assert read.correct.tolist() == [False, True]  # the gold of the first is Rome (B); A is chosen


def test_answers_name_options_by_letter_text_or_index_and_ambiguity_is_refused(tmp_path):
    base = {"options": ["2", "3", "5"], "top_logprobs": {"A": -0.5, "B": -1.5, "C": -2.5}}
    path = _jsonl(tmp_path / "numbers.jsonl", [{**base, "answer": "2"}])  # index 2 ("5"), or the text "2" (A)
    with pytest.raises(InputError, match="--answer-is index or --answer-is text"):
        load_predictions(path)
    assert load_predictions(path, options=ReadOptions(answer_is="text")).labels.tolist() == [0]
    assert load_predictions(path, options=ReadOptions(answer_is="index")).labels.tolist() == [2]
    path = _jsonl(tmp_path / "bad.jsonl", [{**base, "answer": "E"}])
    with pytest.raises(InputError, match="name one of its 3 options"):
        load_predictions(path)


def test_lists_of_option_logprobs_with_a_gold_index_fixed_and_ragged(tmp_path):
    fixed = _jsonl(tmp_path / "fixed.jsonl", [{"option_logprobs": LOGPROBS[i].tolist(), "gold": int(GOLD[i])}
                                               for i in range(N)])
    predictions = load_predictions(fixed)
    np.testing.assert_allclose(predictions.logits, LOGPROBS)
    ragged_rows = [[-0.1, -2.5], [-1.0, -0.7, -3.0], [-2.0, -0.3, -2.2, -4.0]]
    ragged = _jsonl(tmp_path / "ragged.jsonl", [{"option_logprobs": row, "gold": gold}
                                                 for row, gold in zip(ragged_rows, [0, 2, 1])])
    read = resolve_evaluation_input(ragged).predictions
    expected = [np.exp(row).max() / np.exp(row).sum() for row in ragged_rows]
    np.testing.assert_allclose(read.confidences, expected)
    assert read.correct.tolist() == [True, False, True]
    result = runner.invoke(app, ["evaluate", str(ragged), "--metrics", "classwise-ece"])
    assert result.exit_code != 0


@pytest.mark.parametrize("text,expected", [
    ("I am 80% sure", 0.8), ("Confidence: 0.8", 0.8), ("confidence = 75", 0.75), ("Answer: B. Confidence: 90%", 0.9),
    ("I'm about 65 % confident", 0.65), (0.4, 0.4), ("no idea", None), ("maybe 30% or 60%", None),
    ("Confidence: 250", None),
])
def test_parse_verbalized(text, expected):
    assert parse_verbalized(text) == (None if expected is None else pytest.approx(expected))


def test_verbalized_confidences_only_with_the_option_and_unparseable_rows_refused_by_count(tmp_path):
    texts = [f"Answer: {'ABCD'[i % 4]}. Confidence: {c}%" for i, c in enumerate(RNG.integers(30, 100, 40))]
    correct = (RNG.uniform(size=40) < 0.6).tolist()
    path = _jsonl(tmp_path / "verbal.jsonl", [{"response": t, "is_correct": c, "subject": "law" if i % 2 else "math"}
                                               for i, (t, c) in enumerate(zip(texts, correct))])
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["evaluate", str(path), "--verbalized-confidence", "response", "--json", str(out)])
    assert result.exit_code == 0, result.output
    parsed = [int(t.rsplit(" ", 1)[1][:-1]) / 100 for t in texts]
    expected = evaluate_confidences(parsed, correct)["metrics"]
    assert json.loads(out.read_text())["results"]["metrics"] == pytest.approx(expected)
    assert runner.invoke(app, ["evaluate", str(path)]).exit_code != 0  # text without the option: not read
    read = resolve_evaluation_input(path, options=ReadOptions(verbalized_confidence="response")).predictions
    assert read.groups["subject"].tolist() == ["math", "law"] * 20
    bad = _jsonl(tmp_path / "bad.jsonl", [{"response": t, "is_correct": c} for t, c in
                                          zip(["I think B", "70%", "unsure"], [True, False, True])])
    with pytest.raises(InputError, match="2 of 3 state none or several .row 0: 'I think B'; row 2: 'unsure'"):
        resolve_evaluation_input(bad, options=ReadOptions(verbalized_confidence="response"))
    with pytest.raises(InputError, match="only with 'adacal evaluate'"):
        load_predictions(path, options=ReadOptions(verbalized_confidence="response"))


def test_percent_confidence_correct_pairs_give_the_figures_of_fractions(tmp_path):
    confidences = np.round(RNG.uniform(0.3, 1.0, 60), 2)
    correct = RNG.uniform(size=60) < confidences
    percent = _jsonl(tmp_path / "percent.jsonl", [{"confidence": float(c * 100), "correct": bool(k)}
                                                   for c, k in zip(confidences, correct)])
    read = resolve_evaluation_input(percent).predictions
    np.testing.assert_allclose(read.confidences, confidences)


@pytest.mark.parametrize("options,match", [
    (dict(answer_is="number"), "--answer-is"), (dict(missing_options="skip"), "--missing-options"),
    (dict(answer_options="A"), "--options"), (dict(task=" "), "--task"),
    (dict(verbalized_confidence="text", scores_kind="probs"), "--verbalized-confidence"),
])
def test_llm_options_are_checked(options, match):
    with pytest.raises(InputError, match=match):
        ReadOptions(**options)


def test_the_chat_apis_content_list_reads_the_first_tokens_alternatives(tmp_path):
    content = [{"token": "B", "logprob": -0.2, "top_logprobs": [{"token": "B", "logprob": -0.2},
                                                                 {"token": "A", "logprob": -1.9}]},
               {"token": ".", "logprob": -0.01, "top_logprobs": [{"token": ".", "logprob": -0.01}]}]
    path = _jsonl(tmp_path / "content.jsonl", [{"logprobs": content, "answer": "A"}] * 2)
    predictions = load_predictions(path)
    np.testing.assert_allclose(predictions.logits, [[-1.9, -0.2]] * 2)  # not the generated tokens B and "."
    assert predictions.labels.tolist() == [0, 0]


def test_one_reading_of_the_answer_for_the_whole_file(tmp_path):
    base = {"options": ["Paris", "Rome"], "top_logprobs": {"A": -0.5, "B": -1.0}}
    path = _jsonl(tmp_path / "mixed.jsonl", [{**base, "answer": "Rome"}, {**base, "answer": 0}])
    with pytest.raises(InputError, match="line 1 of mixed.jsonl to name one of its 2 options"):
        load_predictions(path)  # a text on one line, an index on the other: no reading fits every line


def test_probabilities_under_a_logprob_key_are_refused(tmp_path):
    path = _jsonl(tmp_path / "probs.jsonl", [{"top_logprobs": {"A": 0.7, "B": 0.3}, "answer": "A"}])
    with pytest.raises(InputError, match=r"log-probabilities \(<= 0\).*write their logarithms"):
        load_predictions(path)
