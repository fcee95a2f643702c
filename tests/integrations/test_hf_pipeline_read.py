"""A real (tiny, offline) transformers text-classification pipeline's outputs, saved with json.dump as a user
would, read by `adacal evaluate` / `calibrate`: columns ordered by the saved model folder's id2label, labels as
`datasets` integers or names, the same metrics as an .npz of the model's own softmax in column order; and the
documented example of docs/integrations.md §4."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_helpers import one_line_error, runner
from doc_blocks import run_section

# An id2label order that sorting would change, so a wrong column order shows.
ID2LABEL = {0: "positive", 1: "negative", 2: "mixed"}
WORDS = ["good", "bad", "film", "plot", "dull", "great", "odd", "fine"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The pipeline's top_k=None and default outputs on 24 texts, its model folder, and the reference probabilities
    (the model's logits through the pipeline's own softmax, in id2label order)."""
    pytest.importorskip("transformers", reason="the Hugging Face pipeline test needs transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, pipeline

    torch.manual_seed(0)
    vocab = {token: i for i, token in enumerate(["[UNK]", "[PAD]", "[CLS]", "[SEP]", *WORDS])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]")
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16, initializer_range=1.0,
                        id2label=ID2LABEL, label2id={name: i for i, name in ID2LABEL.items()})
    model = BertForSequenceClassification(config).eval()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=3)) for _ in range(24)]
    labels = rng.integers(0, 3, size=24)
    classifier = pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    every, top = classifier(texts, top_k=None), classifier(texts)
    with torch.no_grad():
        logits = np.stack([model(**tokenizer(text, return_tensors="pt")).logits[0].float().numpy() for text in texts])
    shifted = np.exp(logits - logits.max(-1, keepdims=True))  # TextClassificationPipeline's softmax, as it does it
    probs = np.array([[float(v) for v in row] for row in shifted / shifted.sum(-1, keepdims=True)])
    folder = tmp_path_factory.mktemp("hf")
    model.save_pretrained(folder / "model")  # config.json with id2label, beside the predictions
    return folder, texts, labels, every, top, probs


@pytest.mark.slow
def test_pipeline_output_layout_is_what_the_reader_expects(outputs):
    _, _, _, every, top, probs = outputs
    assert all(len(row) == 3 and [item["score"] for item in row] == sorted((i["score"] for i in row), reverse=True)
               for row in every)  # one dict per class, sorted by score: not in column order
    assert all(set(item) == {"label", "score"} for item in top)
    assert any([item["label"] for item in row] != list(ID2LABEL.values()) for row in every)
    np.testing.assert_allclose(probs.max(1), [item["score"] for item in top], rtol=1e-6)


@pytest.mark.slow
def test_evaluate_pipeline_outputs_as_the_npz_of_the_same_probabilities(outputs):
    from adacal.cli import app

    folder, texts, labels, every, top, probs = outputs
    records = [{"text": t, "label": int(y), "predictions": row} for t, y, row in zip(texts, labels, every)]
    (folder / "preds.json").write_text(json.dumps(records))
    (folder / "preds.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    (folder / "bare.json").write_text(json.dumps(every))
    (folder / "top.json").write_text(json.dumps(top))
    (folder / "labels.json").write_text(json.dumps({"label": [ID2LABEL[int(y)] for y in labels]}))
    np.savez(folder / "ref.npz", probs=probs, labels=labels)

    def report(*args):
        out = folder / "out.json"
        result = runner.invoke(app, ["evaluate", *map(str, args), "--json", str(out), "--force"])
        assert result.exit_code == 0, result.output
        return json.loads(out.read_text())["results"], result.stderr

    expected, _ = report(folder / "ref.npz")
    for name, extra in (("preds.json", ()), ("preds.jsonl", ()), ("bare.json", ("--labels", folder / "labels.json")),
                        ("preds.json", ("--classes", folder / "model"))):
        results, stderr = report(folder / name, *extra)
        assert results["metrics"] == expected["metrics"], name
        assert "id2label" in stderr or "--classes" in stderr or "model" in stderr
    top_results, _ = report(folder / "top.json", "--labels", folder / "labels.json")
    for key in ("error", "ece_em", "ece_ew"):
        assert top_results["metrics"][key] == expected["metrics"][key]
    one_line_error(runner.invoke(app, ["evaluate", str(folder / "top.json")]), "top_k=None")
    one_line_error(runner.invoke(app, ["calibrate", str(folder / "preds.json"), "--val", str(folder / "top.json")]),
                   "top_k=None")
    one_line_error(runner.invoke(app, ["evaluate", str(folder / "preds.json"), "--classes", "a,b"]),
                   "--classes")
    result = runner.invoke(app, ["calibrate", str(folder / "preds.json"), "--val", str(folder / "preds.jsonl"),
                                 "--method", "temperature", "-q"])
    assert result.exit_code == 0, result.output


def test_every_reading_command_takes_classes():
    from adacal.cli import app

    for command in (["evaluate"], ["calibrate"], ["ood"], ["plot", "reliability"], ["plot", "risk-coverage"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0 and "--classes" in result.output, command


def test_the_documented_example_runs():
    namespace = run_section("Reading Hugging Face outputs")
    assert namespace["report"]["results"]["input"]["k"] == 2
