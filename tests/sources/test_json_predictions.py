"""adacal.sources.json_predictions: a .json object of arrays or array of per-sample objects, and .jsonl (one object
per sample), read to the same arrays as the canonical .npz; an adacal report or a run's config.json is refused as
not predictions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_split_predictions

from reading_fixtures import LABELS, LOGITS, N, same


def test_jsonl_one_object_per_sample(tmp_path):
    lines = [json.dumps({"id": i, "logits": [float(v) for v in LOGITS[i]], "label": int(LABELS[i])}) for i in range(N)]
    (tmp_path / "p.jsonl").write_text("\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]) + "\n")  # a blank line
    same(load_predictions(tmp_path / "p.jsonl"))
    probs = softmax(LOGITS.astype(np.float64))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"y_prob": probs[i].tolist(), "y_true": int(LABELS[i])})
                                              + "\n" for i in range(N)))
    np.testing.assert_allclose(load_predictions(tmp_path / "q.jsonl").logits, probs)


def test_json_predictions_as_an_object_of_arrays_or_an_array_of_samples(tmp_path):
    columns = {"logits": LOGITS.astype(float).tolist(), "labels": LABELS.tolist(), "model": "resnet20",
               "metrics": {"accuracy": 0.9}}  # keys that are not arrays are ignored
    (tmp_path / "columns.json").write_text(json.dumps(columns))
    same(load_predictions(tmp_path / "columns.json"))
    samples = [{"probs": softmax(LOGITS[i:i + 1].astype(np.float64))[0].tolist(), "label": int(LABELS[i])}
               for i in range(N)]
    (tmp_path / "samples.json").write_text(json.dumps(samples, indent=1))
    np.testing.assert_allclose(load_predictions(tmp_path / "samples.json").logits, softmax(LOGITS.astype(np.float64)))
    hf = {"predictions": LOGITS.astype(float).tolist(), "label_ids": LABELS.tolist()}  # Trainer.predict's fields
    (tmp_path / "hf.json").write_text(json.dumps(hf))
    same(load_predictions(tmp_path / "hf.json"))
    split = {"val_logits": LOGITS[:20].astype(float).tolist(), "val_labels": LABELS[:20].tolist(),
             "test_logits": LOGITS[20:].astype(float).tolist(), "test_labels": LABELS[20:].tolist()}
    (tmp_path / "split.json").write_text(json.dumps(split))
    same(load_split_predictions(tmp_path / "split.json")["test"], LOGITS[20:], LABELS[20:])


@pytest.mark.parametrize("document, match", [
    ({"schema_version": 1, "kind": "evaluate", "results": {}}, "is an adacal 'evaluate' report"),
    ({"model": "resnet", "accuracy": 0.9}, r"none of its keys \(model, accuracy\) holds one"),
    ([], "it is an empty array"),
    ([{"logits": [1, 2], "label": 0}, {"logit": [1, 2], "label": 1}], "item 1 of .* keys of item 0"),
    ([{"logits": [1, 2], "label": 0}, [1, 2]], "item 1 of .* JSON object"),
    ({"logits": [[1, 2], [1, 2, 3]], "labels": [0, 1]}, "one length for every sample"),
    (3, "an object of arrays or an array of samples, got int"),
])
def test_json_refusals(tmp_path, document, match):
    (tmp_path / "p.json").write_text(json.dumps(document))
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "p.json")


@pytest.mark.parametrize("text, match", [
    ('{"logits": [1, 2], "label": 0}\n{"logits": [1, 2, 3], "label": 1}\n', "one length for every sample"),
    ('{"logits": [1, 2], "label": 0}\n{"logit": [1, 2], "label": 1}\n', "line 2 of .* keys of line 1"),
    ('{"logits": [1, 2], "label": 0}\n{oops\n', "line 2 of .* to be JSON"),
    ('{"logits": [1, 2], "label": 0}\n[1, 2]\n', "line 2 of .* JSON object"),
    ('{"logits": [1, NaN], "label": 0}\n', "to be finite, found NaN or Inf in 1 row"),
    ("\n\n", "empty"),
])
def test_jsonl_refusals(tmp_path, text, match):
    (tmp_path / "p.jsonl").write_text(text)
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "p.jsonl")


def test_json_predictions_with_python_non_finite_literals_in_unread_fields(tmp_path):
    """Python's json.dumps writes NaN / Infinity by default: a per-sample metric adacal never reads may hold them
    without the file being refused; the scores read are the file's."""
    records = [{"logits": [float(v) for v in row], "label": int(y), "acc": value}
               for row, y, value in zip(LOGITS, LABELS, [float("nan"), float("inf"), -float("inf")] * len(LABELS))]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(record) for record in records) + "\n")
    (tmp_path / "p.json").write_text(json.dumps({"logits": LOGITS.tolist(), "labels": LABELS.tolist(),
                                                 "loss": float("nan")}))
    for name in ("p.jsonl", "p.json"):
        same(load_predictions(tmp_path / name))
    assert "NaN" in (tmp_path / "p.json").read_text()


def test_a_runs_config_json_points_to_the_run_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"schema_version": 1, "kind": "train-config", "config": {}}))
    with pytest.raises(InputError, match=r"is a run's config.json \(options, not scores\); give the run folder"):
        load_predictions(run / "config.json")
