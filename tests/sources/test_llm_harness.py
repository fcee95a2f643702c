"""lm-evaluation-harness `--log_samples` files (adacal.sources.harness_samples, adacal.interpretation.llm;
docs/inputs.md "LLM evaluation outputs"), written exactly as the harness writes them: v0.4.3+ (EvaluationTracker.
save_results_samples: `arguments` as {"gen_args_i": {"arg_0", "arg_1"}}, responses through `sanitize_list`, i.e.
strings, `target` as str), v0.4.0-0.4.2 (one indented JSON array in the .jsonl, numbers, int targets, `arguments` as
[context, continuation] pairs). Checked against the file's own acc / acc_norm, a hand softmax, and the same
predictions saved as an .npz."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from adacal.cli import app
from adacal.commands.inputs import resolve_evaluation_input
from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.interpretation.confidence import TOP_LABEL, TopLabelPredictions
from adacal.sources import ReadOptions
from adacal.sources.harness_samples import subject_of, task_of

from cli_helpers import one_line_error

runner = CliRunner()
RNG = np.random.default_rng(41)
DATE = "2024-05-13T12-34-56.123456"
CITIES = ["Paris", "Rome", "Barcelona", "Oslo", "Saint Petersburg", "Ulm"]


def _sanitize_list(sub):
    """The harness's lm_eval.utils.sanitize_list: every leaf as str, tuples kept (json writes them as lists)."""
    if isinstance(sub, list):
        return [_sanitize_list(item) for item in sub]
    if isinstance(sub, tuple):
        return tuple(_sanitize_list(item) for item in sub)
    return str(sub)


def _docs(n, k, *, seed=0, ragged=False):
    """n questions: (choices, log-likelihoods, gold index); choices of different lengths so acc_norm differs."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        size = int(rng.integers(2, 6)) if ragged else k
        choices = [str(city) for city in rng.choice(CITIES, size=size, replace=False)]
        lls = -np.abs(rng.normal(6.0, 2.5, size))
        docs.append((choices, lls, int(rng.integers(size))))
    return docs


def _sample(doc_id, choices, lls, gold, *, context="Q: capital?\nA:", delimiter=" "):
    """What evaluator.py logs for one multiple-choice doc (before the tracker writes it)."""
    completion_len = np.array([float(len(choice)) for choice in choices])
    acc = 1.0 if np.argmax(lls) == gold else 0.0
    acc_norm = 1.0 if np.argmax(lls / completion_len) == gold else 0.0
    return {
        "doc_id": doc_id, "doc": {"question": "capital?", "choices": choices, "answer": gold}, "target": gold,
        "arguments": [(context, f"{delimiter}{choice}") for choice in choices],
        "resps": [[(float(ll), bool(i == np.argmax(lls)))] for i, ll in enumerate(lls)],
        "filtered_resps": [(float(ll), bool(i == np.argmax(lls))) for i, ll in enumerate(lls)],
        "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": "d" * 64, "prompt_hash": "p" * 64,
        "target_hash": "t" * 64, "acc": acc, "acc_norm": acc_norm,
    }


def write_new(path, samples):
    """lm_eval/loggers/evaluation_tracker.py save_results_samples (v0.4.3 and later), line by line."""
    with open(path, "a", encoding="utf-8") as handle:
        for sample in samples:
            arguments = {}
            for i, arg in enumerate(sample["arguments"]):
                arguments[f"gen_args_{i}"] = {}
                for j, tmp in enumerate(arg):
                    arguments[f"gen_args_{i}"][f"arg_{j}"] = tmp
            sample["resps"] = _sanitize_list(sample["resps"])
            if "filtered_resps" in sample:  # (a test drops it, to read `resps`)
                sample["filtered_resps"] = _sanitize_list(sample["filtered_resps"])
            sample["arguments"] = arguments
            sample["target"] = str(sample["target"])
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    return path


def write_old(path, samples):
    """v0.4.0-0.4.2 (__main__.py): json.dumps(samples, indent=2) into the .jsonl; numbers and int targets kept."""
    path.write_text(json.dumps(samples, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _file(tmp_path, task, docs, writer=write_new, **sample_options):
    samples = [_sample(i, *doc, **sample_options) for i, doc in enumerate(docs)]
    return writer(tmp_path / f"samples_{task}_{DATE}.jsonl", samples)


def _softmax(row):
    row = np.asarray(row, dtype=np.float64)
    weights = np.exp(row - row.max())
    return weights / weights.sum()


@pytest.mark.parametrize("writer", [write_new, write_old], ids=["v0.4.3+", "v0.4.0"])
def test_fixed_k_reads_the_log_likelihoods_as_logits_and_the_target_as_the_label(tmp_path, writer):
    docs = _docs(40, 4)
    path = _file(tmp_path, "mmlu_anatomy", docs, writer)
    predictions = load_predictions(path)
    np.testing.assert_allclose(predictions.logits, [lls for _, lls, _ in docs], rtol=0, atol=1e-12)
    assert predictions.labels.tolist() == [gold for *_, gold in docs]
    assert predictions.interpretation.kind == "logits"
    assert set(predictions.groups["task"]) == {"mmlu_anatomy"}
    assert set(predictions.groups["subject"]) == {"anatomy"}


@pytest.mark.parametrize("normalize,metric", [(False, "acc"), (True, "acc_norm")])
def test_argmax_agrees_with_the_files_own_acc_and_acc_norm_on_every_line(tmp_path, normalize, metric):
    docs = _docs(200, 4, seed=3)
    path = _file(tmp_path, "arc_easy", docs)
    predictions = load_predictions(path, options=ReadOptions(length_normalize=normalize))
    hits = predictions.logits.argmax(axis=1) == predictions.labels
    written = [json.loads(line)[metric] for line in path.read_text().splitlines()]
    assert hits.astype(float).tolist() == written
    # The two readings differ somewhere (choices of 3 to 16 characters), so the test tells them apart.
    other = [json.loads(line)["acc" if normalize else "acc_norm"] for line in path.read_text().splitlines()]
    assert other != written


def test_length_normalize_divides_by_the_choice_length_in_characters_without_the_delimiter(tmp_path):
    docs = [(["Oslo", "Saint Petersburg"], np.array([-8.0, -20.0]), 1)]
    predictions = load_predictions(_file(tmp_path, "t", docs), options=ReadOptions(length_normalize=True))
    np.testing.assert_allclose(predictions.logits, [[-8.0 / 4, -20.0 / 16]])
    no_delimiter = tmp_path / "other"
    no_delimiter.mkdir()
    path = _file(no_delimiter, "t", docs, delimiter="")
    np.testing.assert_allclose(load_predictions(path, options=ReadOptions(length_normalize=True)).logits,
                               [[-8.0 / 4, -20.0 / 16]])


def test_same_figures_as_an_npz_of_the_same_logits(tmp_path):
    docs = _docs(120, 4, seed=5)
    path = _file(tmp_path, "hellaswag", docs)
    npz = tmp_path / "same.npz"
    np.savez(npz, logits=np.array([lls for _, lls, _ in docs]), labels=np.array([g for *_, g in docs]))
    reports = []
    for source in (path, npz):
        out = tmp_path / f"{source.stem}.json"
        result = runner.invoke(app, ["evaluate", str(source), "--json", str(out)])
        assert result.exit_code == 0, result.output
        reports.append(json.loads(out.read_text())["results"]["metrics"])
    assert reports[0] == pytest.approx(reports[1], abs=1e-12)


def test_a_folder_and_a_glob_read_as_one_input_with_the_task_per_sample(tmp_path):
    model = tmp_path / "out" / "EleutherAI__pythia-70m"
    model.mkdir(parents=True)
    anatomy, astronomy = _docs(7, 4, seed=1), _docs(5, 4, seed=2)
    _file(model, "mmlu_anatomy", anatomy)
    _file(model, "mmlu_astronomy", astronomy)
    (model / f"results_{DATE}.json").write_text("{}")  # the harness's aggregate beside them: not a sample file
    expected = ["mmlu_anatomy"] * 7 + ["mmlu_astronomy"] * 5
    for given in (tmp_path / "out", model, model / "samples_mmlu_*.jsonl"):
        predictions = load_predictions(given)
        assert predictions.groups["task"].tolist() == expected
        assert predictions.groups["subject"].tolist() == [task[5:] for task in expected]
        assert predictions.labels.tolist() == [g for *_, g in anatomy + astronomy]
    result = runner.invoke(app, ["evaluate", str(model / "samples_mmlu_*.jsonl"), "-q"])
    assert result.exit_code == 0, result.output


def test_ragged_questions_are_top_label_confidences_of_the_renormalised_choice(tmp_path):
    docs = _docs(60, 0, seed=7, ragged=True)
    path = _file(tmp_path, "mixed_choices", docs)
    read = resolve_evaluation_input(path).predictions
    assert isinstance(read, TopLabelPredictions) and read.interpretation.kind == TOP_LABEL
    expected = [_softmax(lls).max() for _, lls, _ in docs]
    np.testing.assert_allclose(read.confidences, expected, rtol=1e-12)
    assert read.correct.tolist() == [int(np.argmax(lls)) == gold for _, lls, gold in docs]
    assert read.groups["task"].tolist() == ["mixed_choices"] * 60 and "subject" not in read.groups
    # The same (confidence, correct) pairs as an .npz give the same report.
    npz = tmp_path / "pairs.npz"
    np.savez(npz, confidence=np.array(expected), correct=read.correct)
    metrics = []
    for source in (path, npz):
        out = tmp_path / f"{source.stem}.json"
        assert runner.invoke(app, ["evaluate", str(source), "--json", str(out)]).exit_code == 0
        metrics.append(json.loads(out.read_text())["results"]["metrics"])
    assert metrics[0] == pytest.approx(metrics[1], abs=1e-12)
    # Class-score readers refuse them in one line.
    with pytest.raises(InputError, match="same number of options.*top-label"):
        load_predictions(path)


def test_a_folder_of_tasks_with_different_choice_counts_is_ragged(tmp_path):
    _file(tmp_path, "hellaswag", _docs(4, 4, seed=8))
    _file(tmp_path, "arc_challenge", _docs(3, 5, seed=9))
    read = resolve_evaluation_input(tmp_path).predictions
    assert isinstance(read, TopLabelPredictions)
    assert read.groups["task"].tolist() == ["arc_challenge"] * 3 + ["hellaswag"] * 4  # sorted file names


def test_resps_are_read_when_there_are_no_filtered_resps_and_acc_mutual_info_requests_are_dropped(tmp_path):
    docs = _docs(6, 3, seed=11)
    samples = [_sample(i, *doc) for i, doc in enumerate(docs)]
    for sample, (choices, lls, _) in zip(samples, docs):
        del sample["filtered_resps"]
    path = write_new(tmp_path / f"samples_piqa_{DATE}.jsonl", samples)
    np.testing.assert_allclose(load_predictions(path).logits, [lls for _, lls, _ in docs])
    # acc_mutual_info: the unconditional ("", continuation) requests follow the conditional ones.
    samples = [_sample(i, *doc) for i, doc in enumerate(docs)]
    for sample, (choices, lls, _) in zip(samples, docs):
        sample["arguments"] += [("", f" {choice}") for choice in choices]
        sample["filtered_resps"] += [(-50.0, False)] * len(choices)
        sample["acc_mutual_info"] = 1.0
    path = write_new(tmp_path / f"samples_copa_{DATE}.jsonl", samples)
    np.testing.assert_allclose(load_predictions(path).logits, [lls for _, lls, _ in docs])


@pytest.mark.parametrize("target,choices,expected", [
    ("Rome", ["Paris", "Rome"], 1),  # the text of a choice
    (" Rome", ["Paris", "Rome"], 1),  # the continuation itself (MultipleChoiceTask's " " + choice)
    ("B", ["Paris", "Rome", "Oslo"], 1),  # a letter
    ("2", ["Paris", "Rome", "Oslo"], 2),  # an index as str (v0.4.3+)
    ("C", ["A", "B", "C", "D"], 2),  # letter and text agree
])
def test_the_target_names_one_choice_by_index_text_or_letter(tmp_path, target, choices, expected):
    samples = [_sample(0, choices, np.linspace(-1, -3, len(choices)), 0)]
    samples[0]["target"] = target
    predictions = load_predictions(write_new(tmp_path / "samples_t.jsonl", samples))
    assert predictions.labels.tolist() == [expected]


def test_a_target_that_names_two_choices_is_refused_naming_answer_is(tmp_path):
    choices = ["1", "2", "3"]
    samples = [_sample(0, choices, np.array([-1.0, -2.0, -3.0]), 0)]
    samples[0]["target"] = "1"  # index 1 ("2") or the text "1" (index 0)
    path = write_new(tmp_path / "samples_numbers.jsonl", samples)
    with pytest.raises(InputError, match="--answer-is index or --answer-is text"):
        load_predictions(path)
    assert load_predictions(path, options=ReadOptions(answer_is="text")).labels.tolist() == [0]
    assert load_predictions(path, options=ReadOptions(answer_is="index")).labels.tolist() == [1]


@pytest.mark.parametrize("change,match", [
    (lambda s: s.update(target="7"), "name one of its 4 options"),
    (lambda s: s.update(target=[0, 1]), "one gold answer"),
    (lambda s: s.update(filtered_resps=[["-1.2", "True"]], resps=[[["-1.2", "True"]]],
                        arguments={"gen_args_0": {"arg_0": "ctx", "arg_1": " x"}}), "two or more choices"),
    (lambda s: s.update(filtered_resps=["Paris"], resps=[["Paris"]]), "generated text .a generate_until task"),
    (lambda s: s.update(filtered_resps=[["nan?", "False"]] * 4), "a log-likelihood"),
    (lambda s: s.update(filtered_resps=[["0.5", "False"]] * 4), "log-likelihoods .<= 0."),
    (lambda s: s.update(filtered_resps=[["nan", "False"]] * 4), "finite log-likelihoods"),
])
def test_what_is_not_a_multiple_choice_sample_is_refused_in_one_line(tmp_path, change, match):
    sample = _sample(0, ["Paris", "Rome", "Oslo", "Ulm"], np.array([-1.0, -2.0, -3.0, -4.0]), 0)
    path = write_new(tmp_path / "samples_t.jsonl", [sample])
    if change is not None:
        record = json.loads(path.read_text())
        change(record)
        path.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match=match):
        load_predictions(path)
    result = runner.invoke(app, ["evaluate", str(path)])
    assert result.exit_code != 0 and one_line_error(result)


def test_a_sample_file_named_otherwise_needs_task(tmp_path):
    path = write_new(tmp_path / "my_run.jsonl", [_sample(0, ["Paris", "Rome"], np.array([-1.0, -2.0]), 0)])
    with pytest.raises(InputError, match="--task NAME"):
        load_predictions(path)
    assert load_predictions(path, options=ReadOptions(task="geo")).groups["task"].tolist() == ["geo"]
    with pytest.raises(InputError, match="--length-normalize only with LLM evaluation outputs"):
        load_predictions(_plain_npz(tmp_path), options=ReadOptions(length_normalize=True))


def _plain_npz(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, logits=RNG.normal(size=(5, 3)), labels=np.arange(5) % 3)
    return path


def test_task_names_and_subjects():
    assert task_of(f"samples_mmlu_high_school_physics_{DATE}.jsonl") == "mmlu_high_school_physics"
    assert task_of("samples_arc_easy.jsonl") == "arc_easy"
    assert task_of("results.jsonl") is None
    assert subject_of("mmlu_pro_law") == "law" and subject_of("cmmlu_agronomy") == "agronomy"
    assert subject_of("mmlu") is None and subject_of("arc_easy") is None


def test_the_cli_evaluates_a_harness_folder_with_length_normalize(tmp_path):
    _file(tmp_path, "mmlu_anatomy", _docs(30, 4, seed=13))
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["evaluate", str(tmp_path), "--length-normalize", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["config"]["source"]["length_normalize"] is True
    assert report["results"]["input"]["format"] == "lm-eval-harness"
    docs = _docs(30, 4, seed=13)
    acc_norm = np.mean([np.argmax(lls / np.array([len(c) for c in ch])) == g for ch, lls, g in docs])
    assert report["results"]["metrics"]["error"] == pytest.approx(1 - acc_norm)


def test_several_sample_files_as_the_shell_expands_a_glob_are_one_input(tmp_path):
    first = _file(tmp_path, "mmlu_anatomy", _docs(6, 4, seed=21))
    second = _file(tmp_path, "mmlu_virology", _docs(4, 4, seed=22))
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["evaluate", str(second), str(first), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["results"]["n_samples"] == 10
    npz = _plain_npz(tmp_path)
    result = runner.invoke(app, ["evaluate", str(first), str(npz)])
    assert one_line_error(result, "plain.npz is not a sample file")


def test_v040_files_take_their_task_from_the_results_json_beside_them(tmp_path):
    docs = _docs(5, 4, seed=31)
    samples = [_sample(i, *doc) for i, doc in enumerate(docs)]
    write_old(tmp_path / "pretrained__EleutherAI__pythia-70m_arc_easy.jsonl", samples)
    (tmp_path / "results.json").write_text(json.dumps({"results": {"arc_easy": {"acc,none": 0.4}},
                                                       "configs": {"arc_easy": {"task": "arc_easy"}}}))
    for given in (tmp_path, tmp_path / "pretrained__EleutherAI__pythia-70m_arc_easy.jsonl"):
        predictions = load_predictions(given)
        assert predictions.groups["task"].tolist() == ["arc_easy"] * 5
        np.testing.assert_allclose(predictions.logits, [lls for _, lls, _ in docs])


def test_a_jsonl_named_samples_that_holds_other_records_is_read_as_before(tmp_path):
    path = tmp_path / "samples_mine.jsonl"
    path.write_text("".join(json.dumps({"logits": [0.1, 2.0, -1.0], "label": i % 3}) + "\n" for i in range(6)))
    predictions = load_predictions(path)
    assert predictions.logits.shape == (6, 3) and predictions.groups is None


def test_gzipped_and_crlf_sample_files(tmp_path):
    import gzip

    docs = _docs(4, 3, seed=41)
    path = _file(tmp_path, "boolq_like", docs)
    crlf = tmp_path / "crlf"
    crlf.mkdir()
    (crlf / path.name).write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    zipped = tmp_path / "zipped"
    zipped.mkdir()
    (zipped / (path.name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
    for given in (crlf / path.name, zipped / (path.name + ".gz"), zipped):
        predictions = load_predictions(given)
        np.testing.assert_allclose(predictions.logits, [lls for _, lls, _ in docs])
        assert predictions.groups["task"].tolist() == ["boolq_like"] * 4


def test_brackets_in_a_file_name_are_no_glob_and_a_glob_matching_nothing_does_not_exist(tmp_path):
    path = tmp_path / "preds[1].npz"
    np.savez(path, logits=RNG.normal(size=(4, 3)), labels=np.arange(4) % 3)
    assert load_predictions(path).logits.shape == (4, 3)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "samples_none_*.jsonl")])
    assert one_line_error(result, "does not exist")
