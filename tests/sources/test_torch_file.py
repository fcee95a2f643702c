"""adacal.sources.torch_file: the structures a .pt file of predictions holds — a dict of tensors, a pair, one tensor,
lists of per-batch outputs (concatenated) or per-sample outputs (stacked), numpy arrays saved by torch.save — each
read as the same arrays, or refused with the option that chooses (--pt-items)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_scores
from adacal.sources import ReadOptions

from reading_fixtures import K, LABELS, LOGITS, N, same


@pytest.mark.parametrize("layout", ["dict", "pair", "batches"])
def test_pt_files_holding_numpy_arrays_read_like_tensors(tmp_path, layout):
    """torch.save of numpy arrays (and numpy scalars beside them): rebuilt by the weights-only unpickler, read as
    the same tensors would be."""
    path = tmp_path / "np.pt"
    if layout == "dict":
        torch.save({"logits": LOGITS, "labels": LABELS, "classes": np.array(list("abcd")), "epoch": np.int64(3)}, path)
    elif layout == "pair":
        torch.save((LOGITS, LABELS), path)
    else:
        torch.save([{"logits": LOGITS[:16], "labels": LABELS[:16]}, {"logits": LOGITS[16:], "labels": LABELS[16:]}],
                   path)
    same(load_predictions(path))


@pytest.mark.parametrize("layout", ["pairs", "dicts", "dict of lists", "tensors + --labels"])
def test_pt_lists_of_per_batch_outputs_are_concatenated(tmp_path, layout):
    # What Lightning's Trainer.predict returns: one output per batch, in the shape predict_step gives it.
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    cuts = [(0, 16), (16, 32), (32, N)]  # uneven last batch
    options = ReadOptions()
    if layout == "pairs":
        data = [(logits[a:b], labels[a:b]) for a, b in cuts]
    elif layout == "dicts":
        data = [{"logits": logits[a:b], "labels": labels[a:b]} for a, b in cuts]
    elif layout == "dict of lists":
        data = {"logits": [logits[a:b] for a, b in cuts], "labels": [labels[a:b] for a, b in cuts]}
    else:
        data = [logits[a:b] for a, b in cuts]
        np.save(tmp_path / "labels.npy", LABELS)
        options = ReadOptions(labels_file=tmp_path / "labels.npy")
    torch.save(data, tmp_path / "batches.pt")
    pred = load_predictions(tmp_path / "batches.pt", options=options)
    same(pred)
    assert any("3 batches" in note and "concatenated" in note for note in pred.notes), pred.notes


@pytest.mark.parametrize("layout", ["pairs, index labels", "pairs, one-hot labels", "pairs, int labels",
                                    "dict of lists", "dict of lists, one-hot", "dicts", "dicts, int labels",
                                    "list beside a labels tensor", "rows alone, --labels"])
def test_pt_lists_of_per_sample_outputs_are_stacked(tmp_path, layout):
    """One (K,) row per item (a per-sample loop's outputs) was concatenated into N·K binary scores; a plain int
    label per item was dropped."""
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    one_hot = torch.nn.functional.one_hot(labels, K)
    rows = [logits[i] for i in range(N)]
    data = {
        "pairs, index labels": [(logits[i], labels[i]) for i in range(N)],
        "pairs, one-hot labels": [(logits[i], one_hot[i]) for i in range(N)],
        "pairs, int labels": [(logits[i], int(labels[i])) for i in range(N)],
        "dict of lists": {"logits": rows, "labels": [labels[i] for i in range(N)]},
        "dict of lists, one-hot": {"logits": rows, "labels": [one_hot[i] for i in range(N)]},
        "dicts": [{"logits": logits[i], "label": labels[i]} for i in range(N)],
        "dicts, int labels": [{"logits": logits[i], "label": int(labels[i])} for i in range(N)],
        "list beside a labels tensor": {"logits": rows, "labels": labels},
        "rows alone, --labels": rows,
    }[layout]
    torch.save(data, tmp_path / "samples.pt")
    options = ReadOptions()
    if layout == "rows alone, --labels":
        np.save(tmp_path / "y.npy", LABELS)
        options = ReadOptions(labels_file=tmp_path / "y.npy")
    if layout in ("pairs, one-hot labels", "dict of lists, one-hot", "rows alone, --labels"):
        # (K,) rows beside one-hot (K,) labels, or alone, are also batches of K binary scores: refused, --pt-items says
        with pytest.raises(InputError, match=r"both readings fit: pass --pt-items batches, samples or pair"):
            load_predictions(tmp_path / "samples.pt", options=options)
        options = ReadOptions(labels_file=options.labels_file, pt_items="samples")
    if layout == "rows alone, --labels":
        np.testing.assert_allclose(load_scores(tmp_path / "samples.pt", options=ReadOptions(pt_items="samples")),
                                   LOGITS, rtol=1e-6)  # an OOD set: no labels
    pred = load_predictions(tmp_path / "samples.pt", options=options)
    same(pred)
    assert any(f"{N} " in note and "one sample" in note for note in pred.notes), pred.notes


def test_pt_pairs_stay_pairs_and_two_score_batches_are_told_apart(tmp_path):
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    torch.save((logits, labels), tmp_path / "pair.pt")
    same(load_predictions(tmp_path / "pair.pt"))
    one_hot = torch.nn.functional.one_hot(labels, K).float()  # float one-hot labels: still a pair
    torch.save((logits, one_hot), tmp_path / "pair_onehot.pt")
    same(load_predictions(tmp_path / "pair_onehot.pt"))
    torch.save([logits[:20], logits[20:]], tmp_path / "two.pt")  # two float (B, K) batches: scores, labels needed
    with pytest.raises(InputError, match="give --labels FILE"):
        load_predictions(tmp_path / "two.pt")
    torch.save([(logits[:20], labels[:20]), (logits[20:, :3], labels[20:])], tmp_path / "ragged.pt")
    with pytest.raises(InputError, match="per-batch logits .* share their shape"):
        load_predictions(tmp_path / "ragged.pt")


def test_pt_dict_pair_tuple_and_single_tensor(tmp_path):
    torch.save({"scores": torch.tensor(LOGITS), "targets": torch.tensor(LABELS)}, tmp_path / "d.pt")
    same(load_predictions(tmp_path / "d.pt"))
    torch.save((torch.tensor(LOGITS), torch.tensor(LABELS)), tmp_path / "t.pt")
    same(load_predictions(tmp_path / "t.pt"))
    torch.save([torch.tensor(LOGITS), torch.tensor(LABELS)], tmp_path / "l.pt")
    same(load_predictions(tmp_path / "l.pt"))
    torch.save(torch.tensor(LOGITS), tmp_path / "only.pt")
    np.save(tmp_path / "y.npy", LABELS)
    same(load_predictions(tmp_path / "only.pt", options=ReadOptions(labels_file=tmp_path / "y.npy")))
    torch.save([torch.tensor(LOGITS)], tmp_path / "one.pt")  # one batch of scores: labels needed
    with pytest.raises(InputError, match="holds one tensor of scores: give --labels FILE"):
        load_predictions(tmp_path / "one.pt")
    torch.save([1, 2, 3], tmp_path / "ints.pt")
    with pytest.raises(InputError, match="dict of tensors, a \\(logits, labels\\) pair or one tensor "
                                         ".*got a list of 3"):
        load_predictions(tmp_path / "ints.pt")


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("label_dtype", [torch.int64, torch.float32])
def test_pt_samples_of_a_batch_size_one_loop_read_as_samples(tmp_path, k, label_dtype):
    """`[(scores (K,), tensor([y])) for each sample]`, as a `batch_size=1` loop saves it (`out[0], y`): one label of
    shape (1,) per item is one label per sample (rule 3), not a batch of one beside samples (refused before)."""
    rng = np.random.default_rng(k)
    logits = rng.normal(size=(30, k)).astype(np.float32)
    labels = rng.integers(0, k, 30)
    items = [(torch.from_numpy(logits[i]), torch.tensor([labels[i]], dtype=label_dtype)) for i in range(30)]
    torch.save(items, tmp_path / "loop.pt")
    pred = load_predictions(tmp_path / "loop.pt")
    same(pred, logits=logits, labels=labels)
    assert pred.interpretation.n == 30 and pred.interpretation.k == k
    torch.save({"logits": [item[0] for item in items], "labels": [item[1] for item in items]}, tmp_path / "dict.pt")
    same(load_predictions(tmp_path / "dict.pt"), logits=logits, labels=labels)


def test_pt_one_entry_items_beside_rows_stay_refused_unless_they_are_labels(tmp_path):
    """Only labels of shape (1,) count as one label per item: a (1,) float that is no class index (a per-batch loss)
    beside 1-D items keeps them ambiguous (a binary model's batches or samples' rows), refused naming --pt-items;
    one-score items (L = 1) with (1,) labels stay a binary model's batches of one."""
    rows = [torch.from_numpy(LOGITS[i]) for i in range(N)]
    torch.save({"logits": rows, "loss": [torch.tensor([0.25]) for _ in range(N)]}, tmp_path / "loss.pt")
    with pytest.raises(InputError, match="--pt-items"):
        load_predictions(tmp_path / "loss.pt", options=ReadOptions(labels_key="loss"))
    torch.save([(torch.from_numpy(LOGITS[i]), torch.tensor([0.5])) for i in range(N)], tmp_path / "half.pt")
    with pytest.raises(InputError, match="--pt-items"):
        load_predictions(tmp_path / "half.pt")
    binary = np.random.default_rng(3).normal(size=N).astype(np.float32)
    torch.save([(torch.tensor([binary[i]]), torch.tensor([int(LABELS[i] % 2)])) for i in range(N)],
               tmp_path / "one.pt")
    pred = load_predictions(tmp_path / "one.pt")
    assert pred.interpretation.k == 2 and pred.interpretation.n == N
    np.testing.assert_array_equal(pred.labels, LABELS % 2)
