"""`load_dataset(<image folder>)`: the ImageFolder layouts, decoding, the common size, grayscale, the splits and their
record, the training split's normalisation, and one line for each folder that cannot be read."""

import numpy as np
import pytest

from adacal.data import load_dataset
from adacal.errors import InputError, UnknownNameError

from user_data_files import CLASSES, write_image_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    written = write_image_folder(root)
    return root, written


def test_one_folder_is_split_by_class_with_a_fixed_test_split(folder):
    root, written = folder
    data = load_dataset(str(root), seed=0)
    assert data.kind == "image" and data.classes == list(CLASSES) and data.num_classes == 3
    assert data.input_shape == (3, 8, 8) and data.train.inputs.dtype.is_floating_point is False
    sizes = data.split_info["sizes"]
    assert sizes == {"train": 27, "val": 2, "test": 7}  # 36 // 5 = 7 test; a tenth of the 29 left = 2 val
    assert data.split_info["source"] == str(root) and data.split_info["fingerprint"].startswith("files-sha256:")
    assert set(data.train.labels.tolist()) == {0, 1, 2}  # every class trains
    # Every decoded image is one that was written, under its class (PNG is lossless).
    every = {name: {a.tobytes() for a in arrays} for name, arrays in written.items()}
    for split in (data.train, data.val, data.test):
        for image, label in zip(split.inputs.numpy(), split.labels.tolist()):
            assert image.transpose(1, 2, 0).tobytes() in every[CLASSES[label]]
    # Test stays with the seed; val and train move with it.
    other = load_dataset(str(root), seed=5)
    assert np.array_equal(other.test.inputs.numpy(), data.test.inputs.numpy())
    assert not np.array_equal(other.train.inputs.numpy(), data.train.inputs.numpy())


def test_normalisation_is_the_training_splits_channel_statistics(folder):
    data = load_dataset(str(folder[0]), seed=1)
    pixels = data.train.inputs.numpy().astype(np.float64) / 255.0
    assert np.allclose(data.mean, pixels.mean(axis=(0, 2, 3)))
    assert np.allclose(data.std, pixels.std(axis=(0, 2, 3)))
    assert data.split_info["mean"] == pytest.approx(list(data.mean))


def test_train_val_test_folders_are_used_as_given(tmp_path):
    for part, n in (("train", 6), ("val", 2), ("test", 3)):
        write_image_folder(tmp_path / part, per_class=n, seed=len(part))
    data = load_dataset(str(tmp_path))
    assert data.split_info["sizes"] == {"train": 18, "val": 6, "test": 9}
    assert data.split_info["layout"] == "train/+val/+test/"
    with pytest.raises(InputError, match="--val-size applies when"):
        load_dataset(str(tmp_path), val_size=3)


def test_the_most_common_size_wins_and_grayscale_stays_one_channel(tmp_path):
    write_image_folder(tmp_path, per_class=4, mode="L", size=(10, 8))
    write_image_folder(tmp_path / "cat", per_class=1, classes=("odd",), mode="L", size=(16, 16), seed=3)
    data = load_dataset(str(tmp_path))
    assert data.input_shape == (1, 8, 10)  # (C, H, W) of the 12 images 10 wide, 8 high
    assert data.split_info["resized"] == 1 and data.split_info["channels"] == 1


@pytest.mark.parametrize("case, fragment", [
    ("one class", "at least 2 class folders"),
    ("empty class", "holds none"),
    ("not an image", "not one PIL can read"),
    ("mixed classes", "to be those of"),
    ("too few", "at least 3 samples of each class"),
    ("train and classes", "not both"),
])
def test_folders_that_cannot_train_are_refused_in_one_line(tmp_path, case, fragment):
    if case == "one class":
        write_image_folder(tmp_path, per_class=5, classes=("cat",))
    elif case == "empty class":
        write_image_folder(tmp_path, per_class=5)
        (tmp_path / "fox").mkdir()
    elif case == "not an image":
        write_image_folder(tmp_path, per_class=5)
        (tmp_path / "dog" / "notes.png").write_text("not an image")
    elif case == "mixed classes":
        write_image_folder(tmp_path / "train", per_class=5)
        write_image_folder(tmp_path / "val", per_class=2, classes=("cat", "dog", "fox"))
    elif case == "too few":
        write_image_folder(tmp_path, per_class=5)
        write_image_folder(tmp_path, per_class=2, classes=("fox",))
    else:
        write_image_folder(tmp_path / "train", per_class=5)
        write_image_folder(tmp_path, per_class=5, classes=("fox",))
    with pytest.raises(InputError, match=fragment) as caught:
        load_dataset(str(tmp_path))
    assert "\n" not in str(caught.value)


def test_a_registered_name_wins_over_a_folder_of_that_name(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "digits", per_class=3)
    monkeypatch.chdir(tmp_path)
    assert load_dataset("digits").kind == "vector"  # sklearn's digits, not ./digits
    with pytest.raises(UnknownNameError, match="A path to your own data works too"):
        load_dataset("no-such-set")
