"""Reading MATLAB .mat predictions (adacal.sources.matlab_file) written by scipy.io.savemat, MATLAB's layout: labels
as a column, class names as a char matrix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io

from adacal.errors import InputError
from adacal.interpretation import load_predictions

RNG = np.random.default_rng(11)
LOGITS = RNG.normal(size=(30, 3))
LABELS = RNG.integers(0, 3, 30)


@pytest.mark.parametrize("layout", ["v5", "v5 compressed", "v4"])
def test_mat_files_read_like_the_same_arrays(tmp_path, layout):
    path = tmp_path / "p.mat"
    variables = {"logits": LOGITS, "labels": LABELS.reshape(-1, 1).astype(float)}  # MATLAB keeps doubles, columns
    if layout == "v4":
        scipy.io.savemat(path, variables, format="4")
    else:
        scipy.io.savemat(path, variables, do_compression=layout == "v5 compressed")
    pred = load_predictions(path)
    np.testing.assert_array_equal(pred.logits, LOGITS)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert "p.mat:labels: a column (N, 1) of class labels, read as 1-D" in pred.notes


@pytest.mark.parametrize("layout", ["v5", "v5 compressed", "v4"])
def test_row_vectors_are_read_as_1d_beside_what_they_describe(tmp_path, layout):
    """scipy's savemat stores every 1-D array as a row (1, N), MATLAB's vectors are often rows: labels beside
    (N, K) scores and binary scores beside their labels are 1-D; a lone (1, K) row stays one sample's scores."""
    save = (lambda path, v: scipy.io.savemat(path, v, format="4")) if layout == "v4" else (
        lambda path, v: scipy.io.savemat(path, v, do_compression=layout == "v5 compressed"))
    save(tmp_path / "rows.mat", {"logits": LOGITS, "labels": LABELS.astype(float)})
    pred = load_predictions(tmp_path / "rows.mat")
    np.testing.assert_array_equal(pred.logits, LOGITS)
    np.testing.assert_array_equal(pred.labels, LABELS)
    binary = (LABELS > 0).astype(float)
    save(tmp_path / "binary.mat", {"scores": LOGITS[:, 0], "labels": binary})
    pred = load_predictions(tmp_path / "binary.mat")
    assert pred.logits.shape == (30, 2)
    np.testing.assert_array_equal(pred.logits[:, 1], LOGITS[:, 0])
    save(tmp_path / "one.mat", {"logits": LOGITS[:1], "labels": LABELS[:1].astype(float)})
    pred = load_predictions(tmp_path / "one.mat")
    np.testing.assert_array_equal(pred.logits, LOGITS[:1])


def test_class_names_as_a_char_matrix_map_string_labels(tmp_path):
    names = np.array(["cat ", "dog ", "bird"])  # a char matrix pads names to one length
    scipy.io.savemat(tmp_path / "p.mat", {"scores": LOGITS, "y": np.array(["cat", "dog", "bird"])[LABELS],
                                           "classes": names})
    np.testing.assert_array_equal(load_predictions(tmp_path / "p.mat").labels, LABELS)


def test_one_based_labels_are_refused_with_the_fix(tmp_path):
    scipy.io.savemat(tmp_path / "p.mat", {"logits": LOGITS, "labels": (LABELS + 1).reshape(-1, 1)})
    with pytest.raises(InputError, match="got values from 1 to 3: 1-based, it seems .* subtract 1"):
        load_predictions(tmp_path / "p.mat")


def test_refusals_name_the_file_and_what_to_do(tmp_path, monkeypatch):
    scipy.io.savemat(tmp_path / "cell.mat", {"logits": LOGITS, "labels": np.array([[1, 2]], dtype=object)})
    with pytest.raises(InputError, match=r"cell\.mat:labels to be a numeric, logical or char array, got a MATLAB cell"):
        load_predictions(tmp_path / "cell.mat")
    # The header MATLAB writes for -v7.3 (HDF5): version 0x0200 after the 116-byte text and the 8-byte offset.
    (tmp_path / "v73.mat").write_bytes(b"MATLAB 7.3 MAT-file".ljust(116) + bytes(8) + b"\x00\x02IM" + bytes(512))
    with pytest.raises(InputError, match=r"v7\.3 file \(HDF5\), which adacal does not read: save it with .*'-v7'"):
        load_predictions(tmp_path / "v73.mat")
    scipy.io.savemat(tmp_path / "whole.mat", {"logits": LOGITS, "labels": LABELS}, do_compression=True)
    whole = (tmp_path / "whole.mat").read_bytes()
    (tmp_path / "cut.mat").write_bytes(whole[: len(whole) // 2])  # a download cut short
    with pytest.raises(InputError, match=r"cut\.mat to be a readable \.mat file, but"):
        load_predictions(tmp_path / "cut.mat")
    (tmp_path / "junk.mat").write_bytes(b"not a mat file at all" * 10)
    with pytest.raises(InputError, match=r"junk\.mat to be a readable \.mat file"):
        load_predictions(tmp_path / "junk.mat")
    scipy.io.savemat(tmp_path / "big.mat", {"logits": np.zeros((1000, 10)), "labels": np.zeros(1000)},
                     do_compression=True)  # 80 KB of zeros compress to almost nothing
    monkeypatch.setattr("adacal.sources.files.memory_budget", lambda: 40_000)
    with pytest.raises(InputError, match=r"big\.mat:logits to fit in memory, but it would need 78\.1 KiB"):
        load_predictions(tmp_path / "big.mat")
