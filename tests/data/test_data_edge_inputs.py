"""Dataset inputs nobody had tried: odd prepared-array files, Tiny-ImageNet / ImageNet folders, 20 Newsgroups files,
test-subset and Split values, BatchLoader seeds and devices. Each builds its own tiny files under tmp_path."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
import torch
from PIL import Image

from adacal.data import BatchLoader, Dataset, Split, load_dataset
from adacal.data import folders, vision
from adacal.data.folders import decode_image
from adacal.errors import InputError

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module", autouse=True)
def _torchvision_imported():
    """The folder loaders read through torchvision's ImageFolder: import it once, not inside the first test."""
    import torchvision.datasets  # noqa: F401


def write_cifar(folder, *, n_train=40, n_test=20, k=10, **changes):
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train_x": RNG.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8), "train_y": np.arange(n_train) % k,
        "test_x": RNG.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8), "test_y": np.arange(n_test) % k,
        "classes": np.array([f"c{i}" for i in range(k)]),
    }
    arrays.update(changes)
    np.savez(folder / "cifar10.npz", **arrays)
    return folder


# ------------------------------------------------------------------------------------------- prepared arrays (.npz)


def test_uint64_labels_beyond_int64_are_reported_as_they_are(tmp_path):
    """They were cast to int64 first and the message named values from -1 to -1, which the file does not hold."""
    folder = write_cifar(tmp_path, train_y=np.full(40, 2**64 - 1, dtype=np.uint64))
    with pytest.raises(InputError, match=r"'train_y' .* in \[0, 9\], got values from 18446744073709551615"):
        load_dataset("cifar10", data_dir=folder, download=False)


def test_small_uint64_labels_still_load(tmp_path):
    folder = write_cifar(tmp_path, train_y=(np.arange(40) % 10).astype(np.uint64))
    data = load_dataset("cifar10", data_dir=folder, download=False)
    assert data.train.labels.dtype == torch.int64


@pytest.mark.parametrize("n_train, sizes", [(2, (1, 1)), (9, (8, 1)), (10, (9, 1)), (40, (36, 4))])
def test_a_file_of_fewer_than_ten_training_images_still_gets_a_validation_split(tmp_path, n_train, sizes):
    """The default val_size was n // 10: an empty validation split (AdaFocal and calibration need one) while an
    explicit val_size=0 is refused."""
    data = load_dataset("cifar10", data_dir=write_cifar(tmp_path, n_train=n_train), download=False)
    assert (len(data.train), len(data.val)) == sizes


def test_one_training_image_cannot_be_split(tmp_path):
    folder = write_cifar(tmp_path, n_train=1)
    with pytest.raises(InputError, match="Expected at least 2 training samples in cifar10 .*got 1"):
        load_dataset("cifar10", data_dir=folder, download=False)


def _folder_named(path):
    path.mkdir()


def _symlink_loop(path):
    os.symlink(path, path)


def _dangling(path):
    os.symlink(path.parent / "elsewhere.npz", path)


@pytest.mark.parametrize("make, found", [(_folder_named, "a folder"), (_symlink_loop, "a symlink loop"),
                                         (_dangling, "a broken symlink")])
@pytest.mark.parametrize("name, file_name", [("cifar10", "cifar10.npz"), ("svhn", "svhn.npz"),
                                             ("20newsgroups", "20newsgroups.jsonl.gz")])
def test_a_data_file_path_that_is_no_file_is_named(tmp_path, monkeypatch, make, found, name, file_name):
    """It read as "not in DIR" and a download was tried (or a cache written over it)."""
    def no_download(*args, **kwargs):
        raise AssertionError("a download was tried")

    monkeypatch.setattr("adacal.data.text._fetch_sklearn", no_download)
    monkeypatch.setattr(vision, "folders_removed_on_failure", no_download)  # the download's first step
    make(tmp_path / file_name)
    with pytest.raises(InputError, match=f"Expected .*{file_name} to be the file {file_name} .*got {found}"):
        load_dataset(name, data_dir=tmp_path, download=True)


# ------------------------------------------------------------------------------------------------- folders


def save_image(path, size=(64, 64), array=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    if array is None:
        array = RNG.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(array).save(path)


def make_tiny(root, *, classes=("n01", "n02"), per_class=5, n_val=2, annotations=None):
    for wnid in classes:
        for i in range(per_class):
            save_image(root / "train" / wnid / "images" / f"{wnid}_{i}.JPEG")
    lines = []
    for wnid in classes:
        for i in range(n_val):
            save_image(root / "val" / "images" / f"val_{wnid}_{i}.JPEG")
            lines.append(f"val_{wnid}_{i}.JPEG\t{wnid}\t0\t0\t8\t8")
    (root / "val" / "images").mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n" if annotations is None else annotations
    (root / "val" / "val_annotations.txt").write_text(text, encoding="utf-8")
    return root


def test_tiny_imagenet_with_empty_annotations_is_refused_not_an_empty_test_split(tmp_path):
    """An empty test split loaded once; the cache it wrote was then refused on the next run."""
    make_tiny(tmp_path / "tiny-imagenet-200", annotations="")
    with pytest.raises(InputError, match="val_annotations.txt to list the test images"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)


def test_tiny_imagenet_annotations_with_a_byte_order_mark_or_spaces(tmp_path):
    root = make_tiny(tmp_path / "tiny-imagenet-200")
    path = root / "val" / "val_annotations.txt"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\t", b" "))
    data = load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    assert len(data.test) == 4 and sorted(data.test.labels.tolist()) == [0, 0, 1, 1]


def test_tiny_imagenet_missing_test_image_is_found_before_any_decoding(tmp_path, monkeypatch):
    root = make_tiny(tmp_path / "tiny-imagenet-200")
    (root / "val" / "images" / "val_n02_1.JPEG").unlink()

    def no_decoding(*args, **kwargs):
        raise AssertionError("images were decoded before the annotations were checked")

    monkeypatch.setattr(folders, "decode_images", no_decoding)
    with pytest.raises(InputError, match=r"val_n02_1.JPEG that line 4 of .*val_annotations.txt names, but it does not"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)


def test_hidden_folders_are_not_classes(tmp_path):
    """.ipynb_checkpoints in train/ became a class (and an error: no images in it)."""
    root = make_tiny(tmp_path / "tiny-imagenet-200")
    (root / "train" / ".ipynb_checkpoints").mkdir()
    save_image(root / "train" / ".cache" / "images" / "x.JPEG")
    data = load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    assert data.classes == ["n01", "n02"] and data.num_classes == 2


def test_tiny_imagenet_default_validation_of_a_small_folder_and_a_too_large_val_size(tmp_path):
    make_tiny(tmp_path / "tiny-imagenet-200", per_class=2)
    data = load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    assert (len(data.train), len(data.val)) == (3, 1)
    with pytest.raises(InputError, match="Expected val_size below the 4 training images of tiny-imagenet, got 4"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False, val_size=4)


@pytest.mark.parametrize("workers", ["4", -1, 2.0])
def test_workers_option_is_checked(tmp_path, workers):
    make_tiny(tmp_path / "tiny-imagenet-200")
    with pytest.raises(InputError, match="Expected workers to be a non-negative integer"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False, workers=workers)


def make_imagenet(root, *, n_val=2):
    for wnid in ("n01", "n02"):
        for i in range(3):
            save_image(root / "train" / wnid / f"{wnid}_{i}.JPEG", size=(40, 30))
    for i in range(n_val):
        save_image(root / "val" / "n01" / f"v{i}.JPEG", size=(40, 30))
    return root


@pytest.mark.parametrize("option, value", [("image_size", 32.5), ("image_size", "32"), ("resize_size", 40.0)])
def test_imagenet_sizes_must_be_integers(tmp_path, option, value):
    """32.5 gave input_shape (3, 32.5, 32.5) and 33x32 batches; "32" a TypeError."""
    make_imagenet(tmp_path / "imagenet")
    options = {"image_size": 32, "resize_size": 40, option: value}
    with pytest.raises(InputError, match=f"Expected {option} to be a positive integer"):
        load_dataset("imagenet", data_dir=tmp_path, download=False, **options)


def test_imagenet_val_of_one_image_is_named(tmp_path):
    make_imagenet(tmp_path / "imagenet", n_val=1)
    with pytest.raises(InputError, match=r"Expected at least 2 images in .*val .*got 1"):
        load_dataset("imagenet", data_dir=tmp_path, download=False, image_size=16, resize_size=20)


def test_sixteen_bit_and_float_images_keep_their_brightness(tmp_path):
    """PIL's convert("RGB") clips 16-bit grayscale at 255 (almost all white) and float [0, 1] to 0/1 (black)."""
    ramp16 = np.linspace(0, 65535, 16 * 16).reshape(16, 16).astype(np.uint16)
    Image.fromarray(ramp16).save(tmp_path / "g16.png")
    decoded = decode_image(tmp_path / "g16.png")
    assert decoded.shape == (16, 16, 3)
    np.testing.assert_allclose(decoded[..., 0], np.rint(ramp16 / 257.0), atol=1)
    ramp = np.linspace(0, 1, 16 * 16, dtype=np.float32).reshape(16, 16)
    Image.fromarray(ramp).save(tmp_path / "f.tif")
    np.testing.assert_allclose(decode_image(tmp_path / "f.tif")[..., 1], np.rint(ramp * 255), atol=1)
    gray8 = RNG.integers(0, 256, (16, 16), dtype=np.uint8)
    Image.fromarray(gray8).save(tmp_path / "g8.png")
    assert np.array_equal(decode_image(tmp_path / "g8.png")[..., 2], gray8)


# ------------------------------------------------------------------------------------------------- 20 Newsgroups


def news_records(n_train=20, n_test=6):
    out = [{"split": "train", "label": i % 4, "group": f"g{i % 4}", "text": f"Subject: s\n\nword{i % 3} shared"}
           for i in range(n_train)]
    out += [{"split": "test", "label": i % 4, "group": f"g{i % 4}", "text": "shared word1"} for i in range(n_test)]
    return out


def write_news(folder, records, *, prefix=b"", suffix=b""):
    body = "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")
    (folder / "20newsgroups.jsonl.gz").write_bytes(gzip.compress(prefix + body + suffix))
    return folder


def test_newsgroups_file_with_a_byte_order_mark_loads(tmp_path):
    data = load_dataset("20newsgroups", data_dir=write_news(tmp_path, news_records(), prefix=b"\xef\xbb\xbf"),
                        download=False)
    assert len(data.train) + len(data.val) == 20


def test_newsgroups_non_utf8_byte_names_its_line(tmp_path):
    folder = write_news(tmp_path, news_records(), suffix=b'{"split": "train", "label": 1, "text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"to be UTF-8 text, but line 27 holds the byte b'\\xe9'"):
        load_dataset("20newsgroups", data_dir=folder, download=False)


def test_newsgroups_training_texts_without_words_are_refused(tmp_path):
    records = [{**r, "text": "Subject: only a header\n\n"} if r["split"] == "train" else r for r in news_records()]
    with pytest.raises(InputError, match="Expected words in the training texts .*strip_headers=False keeps them"):
        load_dataset("20newsgroups", data_dir=write_news(tmp_path, records), download=False)
    kept = load_dataset("20newsgroups", data_dir=tmp_path, download=False, strip_headers=False)
    assert kept.extra["vocab_size"] > 2


def test_newsgroups_strip_headers_must_be_a_bool(tmp_path):
    with pytest.raises(InputError, match="Expected strip_headers to be true or false, got 'no'"):
        load_dataset("20newsgroups", data_dir=write_news(tmp_path, news_records()), download=False, strip_headers="no")


def test_newsgroups_class_names_ignore_null_or_empty_groups(tmp_path):
    records = news_records()
    records[0]["group"] = None  # label 0
    records[1]["group"] = ""  # label 1
    del records[2]["group"]  # label 2
    data = load_dataset("20newsgroups", data_dir=write_news(tmp_path, records), download=False)
    assert data.classes == ["g0", "g1", "g2", "g3"]


# ------------------------------------------------------------------------------------------------- splits


def test_test_subset_must_be_an_integer():
    split = Split(torch.zeros(40, 2), torch.arange(40) % 4)
    data = Dataset(name="toy", kind="vector", num_classes=4, classes=list("abcd"), input_shape=(2,), train=split,
                   val=split, test=split)
    for bad in (20.5, "20", True):
        with pytest.raises(InputError, match="Expected test_subset to be a positive integer"):
            data.check_test_subset(bad)
        with pytest.raises(InputError, match="Expected test_subset to be a positive integer"):
            data.limit_test(bad)
    assert len(data.limit_test(np.int64(20)).test) == 20


def test_split_takes_numpy_inputs_and_integer_label_lists():
    split = Split(np.zeros((3, 4), dtype=np.float32), [0, 1, 2])
    assert isinstance(split.inputs, torch.Tensor) and split.labels.dtype == torch.int64
    x, y = next(iter(BatchLoader(split, 2, dataset=None)))
    assert x.shape == (2, 4) and y.tolist() == [0, 1]
    assert Split(torch.zeros(2, 3), torch.tensor([1, 0], dtype=torch.int32)).labels.dtype == torch.int64


@pytest.mark.parametrize("labels", [torch.zeros(3), torch.zeros(3, 2, dtype=torch.long), [0.0, 1.0, 2.0],
                                    torch.tensor([True, False, True])])
def test_split_refuses_labels_that_are_not_class_indices(labels):
    """Float labels reached the loss as probabilities; a list raised a TypeError in the loader."""
    with pytest.raises(InputError, match="Expected the labels of a split to be 1-D integer class indices"):
        Split(torch.zeros(3, 4), labels)


# ------------------------------------------------------------------------------------------------- BatchLoader


def test_loader_seed_and_epoch_that_no_generator_takes_are_refused():
    split = Split(torch.zeros(4, 2), torch.arange(4))
    with pytest.raises(InputError, match=r"Expected seed below 2\*\*63"):
        BatchLoader(split, 2, dataset=None, shuffle=True, seed=2**64 + 5)
    loader = BatchLoader(split, 2, dataset=None, shuffle=True, seed=2**63 - 1)
    loader.set_epoch(2**63 - 1)
    assert len(list(loader)) == 2
    with pytest.raises(InputError, match=r"Expected epoch below 2\*\*63"):
        loader.set_epoch(2**64)


@pytest.mark.parametrize("device", ["cpu:0", " CPU ", torch.device("cpu", 0)])
def test_loader_takes_the_cpu_by_any_of_its_names(device):
    loader = BatchLoader(Split(torch.zeros(2, 2), torch.arange(2)), 2, dataset=None, device=device)
    assert loader.device == torch.device("cpu")


def test_float_images_with_an_image_normalisation_are_refused():
    """They passed as "vectors": neither normalised nor augmented, silently."""
    split = Split(torch.rand(4, 3, 8, 8), torch.arange(4))
    with pytest.raises(InputError, match="Expected uint8 images .* for the normalisation of cifar10, got "
                                         "torch.float32"):
        BatchLoader(split, 2, dataset="cifar10", augment=True)
    x, _ = next(iter(BatchLoader(split, 2, dataset=None)))  # already normalised: passed through
    assert x.shape == (2, 3, 8, 8)


# ------------------------------------------------------------------------------------------------- OOD files


def test_cifar_c_uint64_labels_beyond_int64_are_reported_as_they_are(tmp_path):
    from adacal.data import load_cifar_c

    np.save(tmp_path / "fog.npy", np.zeros((10, 8, 8, 3), dtype=np.uint8))
    np.save(tmp_path / "labels.npy", np.full(10, 2**64 - 1, dtype=np.uint64))
    with pytest.raises(InputError, match="got values from 18446744073709551615 to 18446744073709551615"):
        load_cifar_c(tmp_path, "fog", severity=1)


def test_ood_images_path_that_is_a_folder_is_named(tmp_path):
    from adacal.data import load_ood_set

    (tmp_path / "ood.npz").mkdir()
    with pytest.raises(InputError, match=r"ood.npz to be the file of OOD images \(.npz\), got a folder"):
        load_ood_set(str(tmp_path / "ood.npz"))


def test_macos_appledouble_files_beside_the_images_are_skipped(tmp_path):
    """"._n01_0.JPEG" has an image extension but holds no image: decoding it stopped the whole load."""
    root = make_tiny(tmp_path / "tiny-imagenet-200")
    (root / "train" / "n01" / "images" / "._n01_0.JPEG").write_bytes(b"\x00\x05\x16\x07 not an image")
    data = load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    assert len(data.train) + len(data.val) == 10
