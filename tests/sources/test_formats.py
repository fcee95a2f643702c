"""adacal.sources.formats: a predictions file as named raw arrays, whatever saved it (the .pt structures are in
test_torch_file.py, the text formats in test_text_tables.py and test_json_predictions.py)."""

from __future__ import annotations

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.sources import ReadOptions

from reading_fixtures import LABELS, LOGITS, same


def test_npz_saved_without_names_reads_arr_0_as_scores_and_arr_1_as_labels(tmp_path):
    np.savez(tmp_path / "pair.npz", LOGITS, LABELS)  # stored as arr_0, arr_1
    pred = load_predictions(tmp_path / "pair.npz")
    same(pred)
    assert any("unnamed arrays" in note for note in pred.notes)
    np.savez(tmp_path / "one.npz", LOGITS)
    with pytest.raises(InputError, match=r"one unnamed array of scores \(arr_0\): give --labels FILE"):
        load_predictions(tmp_path / "one.npz")
    np.save(tmp_path / "y.npy", LABELS)
    same(load_predictions(tmp_path / "one.npz", options=ReadOptions(labels_file=tmp_path / "y.npy")))
    # beside named arrays, arr_0 is just another unknown key
    np.savez(tmp_path / "mixed.npz", LOGITS, labels=LABELS)
    with pytest.raises(InputError, match="to contain logits"):
        load_predictions(tmp_path / "mixed.npz")
