"""`load_dataset(<file.csv | file.npz>)`: the label column, class values as names or numbers, features standardised
with the training split's statistics, the .npz keys, and one line for each file that cannot train."""

import numpy as np
import pytest

from adacal.data import load_dataset
from adacal.errors import InputError

from user_data_files import write_csv


def test_a_csv_trains_on_standardised_features_with_sorted_class_names(tmp_path):
    path = tmp_path / "iris.csv"
    raw = write_csv(path)
    data = load_dataset(str(path), seed=0)
    assert data.kind == "vector" and data.input_shape == (3,) and data.classes == ["setosa", "versicolor", "virginica"]
    assert data.split_info["sizes"] == {"train": 44, "val": 4, "test": 12}
    assert data.split_info["label_column"] == "label" and data.split_info["feature_columns"] == ["a", "b", "c"]
    train = data.train.inputs.numpy().astype(np.float64)
    assert np.allclose(train.mean(axis=0), 0, atol=1e-6) and np.allclose(train.std(axis=0), 1, atol=1e-5)
    mean, std = np.asarray(data.split_info["feature_mean"]), np.asarray(data.split_info["feature_std"])
    # Every val/test row is a raw row of the file scaled by the *training* statistics (reference: the file's values).
    expected = (raw - mean) / std
    for split in (data.val, data.test):
        for row in split.inputs.numpy():
            assert np.abs(expected - row).max(axis=1).min() < 1e-5
    # The labels follow the rows: row i of the file has class i % 3.
    for split in (data.train, data.test):
        for row, label in zip(split.inputs.numpy(), split.labels.tolist()):
            assert int(np.abs(expected - row).max(axis=1).argmin()) % 3 == label


def test_numeric_classes_sort_as_numbers_and_label_column_chooses(tmp_path):
    path = tmp_path / "numbers.csv"
    write_csv(path, label="grade", labels=[(10, 2, 33)[i % 3] for i in range(60)])
    with pytest.raises(InputError, match="name it with --label-column"):
        load_dataset(str(path))
    data = load_dataset(str(path), label_column="grade")
    assert data.classes == ["2", "10", "33"]  # 2 < 10 < 33, not "10" < "2"


@pytest.mark.parametrize("case, fragment", [
    ("nan label", "is empty or NaN on lines 4, 9"),
    ("missing column", "to be a column of"),
    ("two telling names", "got label and target"),
    ("text feature", "encode it as numbers"),
    ("regression", "regression target"),
])
def test_csv_files_that_cannot_train_are_refused_in_one_line(tmp_path, case, fragment):
    path = tmp_path / "bad.csv"
    labels = [("a", "b")[i % 2] for i in range(30)]
    options = {}
    if case == "nan label":
        labels[2], labels[7] = "", "NaN"
        write_csv(path, rows=30, labels=labels)
    elif case == "missing column":
        write_csv(path, rows=30, labels=labels)
        options = {"label_column": "species"}
    elif case == "two telling names":
        write_csv(path, rows=30, labels=labels)
        path.write_text(path.read_text().replace(",c", ",target", 1))
    elif case == "text feature":
        write_csv(path, rows=30, labels=labels)
        lines = path.read_text().splitlines()
        lines[3] = "red," + lines[3].split(",", 1)[1]
        path.write_text("\n".join(lines) + "\n")
    else:
        write_csv(path, rows=30, labels=[str(i * 0.5) for i in range(30)])
    with pytest.raises(InputError, match=fragment) as caught:
        load_dataset(str(path), **options)
    assert "\n" not in str(caught.value)


def test_an_npz_of_vectors_or_images_or_given_splits(tmp_path):
    rng = np.random.default_rng(0)
    vectors = tmp_path / "vectors.npz"
    np.savez(vectors, features=rng.normal(size=(50, 4)), labels=np.arange(50) % 2)
    data = load_dataset(str(vectors))
    assert data.kind == "vector" and data.input_shape == (4,) and data.classes == ["0", "1"]
    whole = tmp_path / "whole.npz"  # labels saved as whole floats (a pandas export) are the same classes
    np.savez(whole, features=rng.normal(size=(50, 4)), labels=(np.arange(50) % 2).astype(float))
    assert load_dataset(str(whole)).train.labels.tolist() == load_dataset(str(vectors)).train.labels.tolist()
    images = tmp_path / "images.npz"
    np.savez(images, x=rng.integers(0, 255, size=(40, 9, 9), dtype=np.uint8), y=np.arange(40) % 4,
             classes=np.array(["w", "x", "y", "z"]))
    data = load_dataset(str(images))
    assert data.kind == "image" and data.input_shape == (1, 9, 9) and data.classes == ["w", "x", "y", "z"]
    splits = tmp_path / "splits.npz"
    np.savez(splits, x_train=rng.normal(size=(30, 2)), y_train=np.arange(30) % 3, x_test=rng.normal(size=(9, 2)),
             y_test=np.arange(9) % 3)
    data = load_dataset(str(splits))
    assert data.split_info["sizes"] == {"train": 27, "val": 3, "test": 9}


@pytest.mark.parametrize("arrays, fragment", [
    ({"x": np.zeros((20, 3))}, "training needs a label per sample"),
    ({"x": np.zeros((20, 3)), "y": np.arange(20) % 2, "classes": np.array(["a"])}, r"in \[0, 0\]"),
    ({"x_train": np.zeros((20, 3)), "y_train": np.arange(20) % 2, "x_test": np.zeros((4, 3)),
      "y_test": np.array([0, 1, 2, 1])}, r"test labels in .* in \[0, 1\]"),
    ({"x": np.zeros((20, 3)), "y": (np.arange(20) % 2) * 2}, "class 1 has no sample"),
    ({"x": np.zeros((20, 3)), "y": (np.arange(20) % 2) * 0.5}, "integer classes or class names, got dtype float64"),
])
def test_npz_files_that_cannot_train_are_refused_in_one_line(tmp_path, arrays, fragment):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(InputError, match=fragment):
        load_dataset(str(path))


@pytest.mark.parametrize("module", ["adacal.data.user_data", "adacal.data.user_images", "adacal.data.user_tables"])
def test_the_docstring_examples_run(module):
    import doctest
    import importlib

    failed, _ = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert failed == 0


def test_ood_rows_are_read_as_the_training_rows(tmp_path):
    from adacal.data.user_data import load_user_ood

    path = tmp_path / "iris.csv"
    write_csv(path)
    data = load_dataset(str(path), seed=2)
    again = load_user_ood(path, data.split_info, data.input_shape).inputs.numpy()
    assert again.shape == (60, 3)
    for row in data.test.inputs.numpy():  # the file read as OOD rows holds the test rows, scaled the same way
        assert np.abs(again - row).max(axis=1).min() < 1e-6
    with pytest.raises(InputError, match="3 features per sample"):
        np.savez(tmp_path / "narrow.npz", x=np.zeros((4, 2)))
        load_user_ood(tmp_path / "narrow.npz", data.split_info, data.input_shape)
