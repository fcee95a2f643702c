"""Hugging Face outputs (docs/inputs.md §8): `--classes`, a model folder's `id2label`, and `pipeline` outputs
(`top_k=None`: a list of {label, score} per input, sorted by score; the default: the top class only). Files are
written as transformers writes them (TextClassificationPipeline.postprocess: one dict per class, sorted by score
descending); every reading is checked against the same probabilities in column order (an .npz) — identical metrics
— and every refusal is one line naming what to pass."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.commands.inputs import load_evaluation_file
from adacal.errors import InputError
from adacal.evaluation import evaluate_predictions
from adacal.interpretation import load_predictions, load_scores
from adacal.metrics import compute_metrics
from adacal.sources.class_names import id2label_names, read_class_names
from adacal.sources.formats import ReadOptions

NAMES = ("negative", "neutral", "positive")  # id2label order (not sorted order: sorting gives the same here)
MODEL = ("POSITIVE", "NEGATIVE", "MIXED")  # an id2label whose order is not the names sorted


def sample(n=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    labels = rng.integers(0, k, size=n)
    logits[np.arange(n), labels] += 1.0
    probs = np.exp(logits - logits.max(1, keepdims=True))
    return probs / probs.sum(1, keepdims=True), labels


def pipeline_rows(probs, names):
    """What `pipeline(texts, top_k=None)` returns: per input, {label, score} per class, highest score first."""
    return [sorted(({"label": names[j], "score": float(p[j])} for j in range(len(names))),
                   key=lambda item: item["score"], reverse=True) for p in probs]


def top1_rows(probs, names):
    """What `pipeline(texts)` returns by default: the top class's {label, score} per input."""
    return [{"label": names[int(np.argmax(p))], "score": float(np.max(p))} for p in probs]


def config(names):
    return {"architectures": ["BertForSequenceClassification"], "id2label": {str(i): n for i, n in enumerate(names)},
            "label2id": {n: i for i, n in enumerate(names)}, "model_type": "bert"}


def write(path, value, jsonl=False):
    path.write_text("\n".join(json.dumps(v) for v in value) if jsonl else json.dumps(value))
    return path


@pytest.fixture()
def data(tmp_path):
    probs, labels = sample()
    reference = tmp_path / "ref.npz"
    np.savez(reference, probs=probs, labels=labels)
    return probs, labels, compute_metrics(probs, labels)


def test_top_k_none_records_with_name_labels_equal_the_npz(tmp_path, data):
    probs, labels, expected = data
    rows = pipeline_rows(probs, MODEL)
    records = [{"text": f"t{i}", "label": MODEL[y], "predictions": row} for i, (y, row) in enumerate(zip(labels, rows))]
    for name, jsonl in (("p.json", False), ("p.jsonl", True)):
        read = load_predictions(write(tmp_path / name, records, jsonl))
        # columns are the names sorted (no id2label): MIXED, NEGATIVE, POSITIVE; labels follow by name
        order = [MODEL.index(n) for n in sorted(MODEL)]
        assert read.classes == tuple(sorted(MODEL))
        np.testing.assert_array_equal(read.logits, probs[:, order])
        position = np.argsort(order)  # the model's class index -> column
        np.savez(tmp_path / "same.npz", probs=probs[:, order], labels=position[labels])
        same = load_predictions(tmp_path / "same.npz")
        assert compute_metrics(read.logits, read.labels) == compute_metrics(same.logits, same.labels)
        assert compute_metrics(read.logits, read.labels) == pytest.approx(expected, rel=1e-12)  # any class order
        assert any("names sorted" in note for note in read.notes)
        assert read.interpretation.kind == "probabilities"


def test_bare_lists_with_a_labels_file_and_classes_give_column_order(tmp_path, data):
    probs, labels, expected = data
    path = write(tmp_path / "out.json", pipeline_rows(probs, MODEL))
    np.save(tmp_path / "y.npy", labels)
    options = ReadOptions(labels_file=tmp_path / "y.npy", classes=",".join(MODEL))
    read = load_predictions(path, options=options)
    np.testing.assert_array_equal(read.logits, probs)  # exactly the model's column order
    np.testing.assert_array_equal(read.labels, labels)
    assert read.classes == MODEL
    assert compute_metrics(read.logits, read.labels) == expected


def test_integer_labels_need_the_model_order(tmp_path, data):
    """A `datasets` row's integer label is a position in id2label order: sorted names cannot give it (refused);
    a config.json in the folder, or beside in a model folder, or --classes does."""
    probs, labels, expected = data
    records = [{"text": "x", "label": int(y), "scores": row} for y, row in zip(labels, pipeline_rows(probs, MODEL))]
    path = write(tmp_path / "preds.jsonl", records, jsonl=True)
    with pytest.raises(InputError, match="integer labels are positions.*pass --classes"):
        load_predictions(path)
    model = tmp_path / "my-model"
    model.mkdir()
    write(model / "config.json", config(MODEL))
    read = load_predictions(path)  # beside the model folder
    np.testing.assert_array_equal(read.logits, probs)
    np.testing.assert_array_equal(read.labels, labels)
    assert any("my-model/config.json (id2label)" in note for note in read.notes)
    assert compute_metrics(read.logits, read.labels) == expected
    for spec in (str(model), str(model / "config.json")):
        read = load_predictions(path, options=ReadOptions(classes=spec))
        np.testing.assert_array_equal(read.labels, labels)
    other = tmp_path / "other-model"
    other.mkdir()
    write(other / "config.json", config(sorted(MODEL)))
    with pytest.raises(InputError, match="name different ones.*pass --classes"):
        load_predictions(path)
    read = load_predictions(path, options=ReadOptions(classes=str(model)))  # --classes settles it
    np.testing.assert_array_equal(read.logits, probs)


def test_an_object_of_arrays_holding_pipeline_outputs(tmp_path, data):
    probs, labels, _ = data
    document = {"predictions": pipeline_rows(probs, MODEL), "label": [int(y) for y in labels], "model": "bert"}
    read = load_predictions(write(tmp_path / "o.json", document), options=ReadOptions(classes=",".join(MODEL)))
    np.testing.assert_array_equal(read.logits, probs)
    np.testing.assert_array_equal(read.labels, labels)
    document["predictions"][5] = [1.0, 2.0, 3.0]  # one input otherwise: the file is refused, not read around it
    with pytest.raises(InputError, match="item 5 of 'predictions'.*pipeline output"):
        load_predictions(write(tmp_path / "o.json", document))


def test_transformers_default_names_are_ordered_by_number(tmp_path):
    probs, labels = sample(n=60, k=12, seed=3)
    names = [f"LABEL_{j}" for j in range(12)]
    records = [{"label": int(y), "predictions": row} for y, row in zip(labels, pipeline_rows(probs, names))]
    read = load_predictions(write(tmp_path / "p.json", records))
    assert read.classes == tuple(names)  # LABEL_10 after LABEL_9, not after LABEL_1
    np.testing.assert_array_equal(read.logits, probs)
    np.testing.assert_array_equal(read.labels, labels)


def test_pipeline_files_calibrate_and_ood_read_alike(tmp_path, data):
    probs, labels, _ = data
    path = write(tmp_path / "p.json", [{"label": MODEL[y], "predictions": row}
                                       for y, row in zip(labels, pipeline_rows(probs, MODEL))])
    scores = load_scores(path)
    np.testing.assert_array_equal(scores, probs[:, [MODEL.index(n) for n in sorted(MODEL)]])


def test_top1_form_is_top_label_confidences_with_labels(tmp_path, data):
    probs, labels, _ = data
    path = write(tmp_path / "top.json", top1_rows(probs, NAMES))
    with pytest.raises(InputError, match="top class only.*give --labels FILE.*top_k=None"):
        load_evaluation_file(path)
    with pytest.raises(InputError, match="top class only.*top_k=None"):
        load_predictions(path)  # calibrate, ood, --val: every class's score is needed
    write(tmp_path / "names.json", {"label": [NAMES[y] for y in labels]})  # the dataset's label names
    np.save(tmp_path / "y.npy", labels)
    reference = evaluate_predictions(probs, labels)["metrics"]
    with pytest.raises(InputError, match="integers.*pass --classes"):
        load_evaluation_file(path, options=ReadOptions(labels_file=tmp_path / "y.npy"))
    for options in (ReadOptions(labels_file=tmp_path / "y.npy", classes=",".join(NAMES)),
                    ReadOptions(labels_file=tmp_path / "names.json")):
        top = load_evaluation_file(path, options=options)
        np.testing.assert_array_equal(top.confidences, probs.max(1))
        np.testing.assert_array_equal(top.correct, probs.argmax(1) == labels)
        from adacal.evaluation import evaluate_confidences

        measured = evaluate_confidences(top.confidences, top.correct)["metrics"]
        for key in ("error", "ece_em", "ece_ew"):
            assert measured[key] == reference[key]  # the (N, K) path's figures, bit for bit
    with pytest.raises(InputError, match="'bogus' is not"):
        write(tmp_path / "bad.json", {"label": ["bogus"] + [NAMES[y] for y in labels[1:]]})
        load_evaluation_file(path, options=ReadOptions(labels_file=tmp_path / "bad.json", classes=",".join(NAMES)))


def test_classes_option_for_string_labels_in_any_format(tmp_path, data):
    probs, labels, expected = data
    np.savez(tmp_path / "s.npz", probs=probs, labels=np.array([MODEL[y] for y in labels]))
    with pytest.raises(InputError, match="got strings"):
        load_predictions(tmp_path / "s.npz")
    (tmp_path / "names.txt").write_text("\n".join(MODEL) + "\n")
    write(tmp_path / "names.json", list(MODEL))
    for spec in (",".join(MODEL), str(tmp_path / "names.txt"), str(tmp_path / "names.json")):
        read = load_predictions(tmp_path / "s.npz", options=ReadOptions(classes=spec))
        np.testing.assert_array_equal(read.labels, labels)
        assert read.classes == MODEL
        assert compute_metrics(read.logits, read.labels) == expected
    # a config.json in the file's folder names them when nothing else does, with a note
    write(tmp_path / "config.json", config(MODEL))
    read = load_predictions(tmp_path / "s.npz")
    np.testing.assert_array_equal(read.labels, labels)
    assert any("id2label of" in note for note in read.notes)


def test_refusals(tmp_path, data):
    probs, labels, _ = data
    rows = pipeline_rows(probs, MODEL)
    records = [{"label": MODEL[y], "predictions": row} for y, row in zip(labels, rows)]
    path = write(tmp_path / "p.json", records)
    with pytest.raises(InputError, match="score the 4 classes of --classes.*'EXTRA' is missing"):
        load_predictions(path, options=ReadOptions(classes=",".join((*MODEL, "EXTRA"))))
    with pytest.raises(InputError, match="'MIXED' is not"):
        load_predictions(path, options=ReadOptions(classes="POSITIVE,NEGATIVE"))
    unknown = [dict(records[0], label="SARCASTIC"), *records[1:]]
    with pytest.raises(InputError, match="\\(MIXED, NEGATIVE, POSITIVE\\); 'SARCASTIC' is not"):
        load_predictions(write(tmp_path / "u.json", unknown))
    top2 = [dict(r, predictions=r["predictions"][:2]) for r in records]  # top_k=2: classes differ per input
    with pytest.raises(InputError, match="same classes \\(run the pipeline with top_k=None\\)"):
        load_predictions(write(tmp_path / "t.json", top2))
    twice = [dict(records[0], predictions=[*records[0]["predictions"][:2], records[0]["predictions"][0]]),
             *records[1:]]
    with pytest.raises(InputError, match="each class once"):
        load_predictions(write(tmp_path / "d.json", twice))
    broken = [records[0], {"label": "POSITIVE", "predictions": [{"label": "POSITIVE", "score": "high"}]}]
    with pytest.raises(InputError, match="item 1 .*pipeline output"):
        load_predictions(write(tmp_path / "b.json", broken))
    np.savez(tmp_path / "k.npz", probs=probs, labels=labels)
    with pytest.raises(InputError, match="name the 3 classes.*got 2"):
        load_predictions(tmp_path / "k.npz", options=ReadOptions(classes="a,b"))
    with pytest.raises(InputError, match="name the 3 classes.*got 2"):
        load_scores(tmp_path / "k.npz", options=ReadOptions(classes="a,b"))
    np.savez(tmp_path / "own.npz", probs=probs, labels=labels, classes=np.array(["x", "y", "z"]))
    with pytest.raises(InputError, match="agree with the class names own.npz gives"):
        load_predictions(tmp_path / "own.npz", options=ReadOptions(classes="a,b,c"))
    np.savez(tmp_path / "pre.npz", probs=probs, labels=np.array(["y"] * len(labels)),
             classes=np.array(["p_x", "p_y", "p_z"]))
    read = load_predictions(tmp_path / "pre.npz", options=ReadOptions(classes="x,y,z"))  # the names, unprefixed
    assert (read.labels == 1).all()
    sigmoid = [dict(r, predictions=[dict(item, score=0.9) for item in r["predictions"]]) for r in records]
    with pytest.raises(InputError, match="sum to 1.*multi-label model's sigmoids"):  # rows do not sum to 1
        load_predictions(write(tmp_path / "m.json", sigmoid))


@pytest.mark.parametrize("mapping, fragment", [
    ({"0": "a", "2": "b"}, "1 is missing"),
    ({"0": "a", "1": "a"}, "'a' is given twice"),
    ({"0": "a", "one": "b"}, "got 'one'"),
    ({"0": "a", "01": "b"}, "got '01'"),
    ({"0": "a", "1": 7}, "to be a class name"),
    ({}, "an empty one"),
])
def test_bad_id2label_is_refused(mapping, fragment):
    with pytest.raises(InputError, match=fragment):
        id2label_names({"id2label": mapping}, "config.json")


def test_label2id_must_be_the_inverse(tmp_path):
    assert id2label_names({"id2label": {"0": "a", "1": "b"}, "label2id": {"b": 1, "a": 0}}, "c") == ("a", "b")
    with pytest.raises(InputError, match="label2id in c to be the inverse"):
        id2label_names({"id2label": {"0": "a", "1": "b"}, "label2id": {"a": 1, "b": 0}}, "c")
    with pytest.raises(InputError, match="inverse"):
        id2label_names({"id2label": {"0": "a", "1": "b"}, "label2id": {"a": 0}}, "c")
    write(tmp_path / "config.json", {"id2label": {"0": "a", "1": "a"}})
    with pytest.raises(InputError, match="twice"):
        ReadOptions(classes=str(tmp_path))


@pytest.mark.parametrize("spec, fragment", [
    ("neg", "no file or folder"), ("neg,neg", "given twice"), ("neg,", "no empty name"), ("", "Expected --classes"),
])
def test_bad_classes_option(spec, fragment):
    with pytest.raises(InputError, match=fragment):
        read_class_names(spec)


def test_folder_without_config_is_refused(tmp_path):
    with pytest.raises(InputError, match="config.json with id2label"):
        ReadOptions(classes=str(tmp_path))
    write(tmp_path / "list.json", {"labels": ["a", "b"]})
    with pytest.raises(InputError, match="without id2label"):
        ReadOptions(classes=str(tmp_path / "list.json"))


def test_cli_refusals_are_one_line(tmp_path, data):
    from cli_helpers import one_line_error, runner

    from adacal.cli import app

    probs, labels, _ = data
    np.savez(tmp_path / "s.npz", probs=probs, labels=np.array([MODEL[y] for y in labels]))
    write(tmp_path / "bad.json", {"id2label": {"0": "a", "2": "b"}})
    for args, fragment in ((["--classes", "neg"], "no file or folder"),
                           (["--classes", str(tmp_path / "bad.json")], "1 is missing"),
                           (["--classes", "a,b"], "name the 3 classes"),
                           (["--classes", "POSITIVE,NEGATIVE,OTHER"], "(POSITIVE, NEGATIVE, OTHER); 'MIXED' is not")):
        one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "s.npz"), *args]), fragment)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "s.npz"), "--classes", ",".join(MODEL), "--json",
                                 str(tmp_path / "e.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["config"]["source"]["classes"] == list(MODEL)  # the reading options are recorded


def test_top_k_1_lists_and_raw_scores(tmp_path, data):
    """`pipeline(texts, top_k=1)` (a list of one dict per input) is the top-1 form; `function_to_apply="none"`
    outputs are logits, read as such with --scores-kind logits (refused as probabilities otherwise)."""
    probs, labels, _ = data
    path = write(tmp_path / "k1.jsonl", [[row] for row in top1_rows(probs, NAMES)], jsonl=True)
    write(tmp_path / "config.json", config(NAMES))  # the file sits in the model folder
    np.save(tmp_path / "y.npy", labels)
    top = load_evaluation_file(path, options=ReadOptions(labels_file=tmp_path / "y.npy"))
    np.testing.assert_array_equal(top.correct, probs.argmax(1) == labels)
    logits = np.log(probs) + 3.0
    raw = [{"label": NAMES[y], "predictions": row} for y, row in zip(labels, pipeline_rows(logits, NAMES))]
    path = write(tmp_path / "raw.json", raw)
    with pytest.raises(InputError, match="--scores-kind logits"):
        load_predictions(path)
    read = load_predictions(path, options=ReadOptions(scores_kind="logits"))
    assert read.interpretation.kind == "logits"
    assert compute_metrics(read.logits, read.labels) == pytest.approx(compute_metrics(probs, labels), rel=1e-9)
