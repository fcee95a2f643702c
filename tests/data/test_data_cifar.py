"""CIFAR/SVHN from the prepared-array .npz (small files made here, and the real CIFAR-10 from $ADACAL_TEST_DATA)."""

from __future__ import annotations

import urllib.error

import numpy as np
import pytest
import torch

from adacal.data import load_dataset, write_image_npz
from adacal.errors import DataUnavailableError, InputError

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def make_arrays(n_train=200, n_test=50, k=10, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "train_x": rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8),
        # sorted by class, like the shared file
        "train_y": np.repeat(np.arange(k), n_train // k).astype(np.int64),
        "test_x": rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8),
        "test_y": np.arange(n_test, dtype=np.int64) % k,
        "classes": np.asarray(CLASSES if k == 10 else [f"c{i}" for i in range(k)]),
    }


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cifar")
    np.savez(root / "cifar10.npz", **make_arrays())
    return root


def test_small_npz_loads_with_documented_layout(small_dir):
    arrays = make_arrays()
    data = load_dataset("cifar10", data_dir=small_dir, seed=0, download=False)
    assert data.kind == "image" and data.input_shape == (3, 32, 32) and data.classes == CLASSES
    assert (len(data.train), len(data.val), len(data.test)) == (180, 20, 50)  # val = a tenth of train by default
    assert data.train.inputs.dtype == torch.uint8 and data.train.inputs.shape[1:] == (3, 32, 32)
    assert data.split_info["source"] == str(small_dir / "cifar10.npz")
    assert data.extra["mean"] == (0.4914, 0.4822, 0.4465) and data.extra["std"] == (0.2470, 0.2435, 0.2616)
    # val is the first val_size of default_rng(seed).permutation; images are the HWC arrays transposed to CHW
    order = np.random.default_rng(0).permutation(200)
    assert np.array_equal(data.val.inputs.numpy(), arrays["train_x"][order[:20]].transpose(0, 3, 1, 2))
    assert np.array_equal(data.train.labels.numpy(), arrays["train_y"][order[20:]])
    assert np.array_equal(data.test.inputs.numpy(), arrays["test_x"].transpose(0, 3, 1, 2))


def test_label_columns_as_keras_load_data_gives_them_load_as_1d(tmp_path):
    """keras.datasets.cifar10.load_data() holds its labels as uint8 (N, 1) columns."""
    arrays = make_arrays()
    np.savez(tmp_path / "cifar10.npz", **{**arrays, "train_y": arrays["train_y"][:, None].astype(np.uint8),
                                          "test_y": arrays["test_y"][:, None].astype(np.uint8)})
    data = load_dataset("cifar10", data_dir=tmp_path, seed=0, download=False)
    order = np.random.default_rng(0).permutation(200)
    assert np.array_equal(data.train.labels.numpy(), arrays["train_y"][order[20:]])
    assert np.array_equal(data.test.labels.numpy(), arrays["test_y"])
    np.savez(tmp_path / "cifar10.npz", **{**arrays, "test_y": np.stack([arrays["test_y"]] * 2, axis=1)})
    with pytest.raises(InputError, match=r"1-D integer labels, got dtype int64 shape \(50, 2\)"):
        load_dataset("cifar10", data_dir=tmp_path, download=False)


def _keys(split):
    return {bytes(x.numpy().tobytes()) for x in split.inputs}


def test_split_determinism_no_overlap_and_subset(small_dir):
    a = load_dataset("cifar10", data_dir=small_dir, seed=3, download=False)
    b = load_dataset("cifar10", data_dir=small_dir, seed=3, download=False)
    c = load_dataset("cifar10", data_dir=small_dir, seed=4, download=False)
    assert torch.equal(a.train.inputs, b.train.inputs) and torch.equal(a.val.labels, b.val.labels)
    assert not torch.equal(a.val.inputs, c.val.inputs)
    assert not (_keys(a.train) & _keys(a.val))
    assert len(_keys(a.train) | _keys(a.val)) == 200
    sub = load_dataset("cifar10", data_dir=small_dir, seed=3, train_subset=50, val_size=30, download=False)
    wide = load_dataset("cifar10", data_dir=small_dir, seed=3, val_size=30, download=False)
    assert len(sub.train) == 50 and torch.equal(sub.train.inputs, wide.train.inputs[:50])
    assert torch.equal(sub.val.inputs, wide.val.inputs) and sub.split_info["train_subset"] == 50


def test_test_subset_samples_every_class_of_a_class_sorted_test_set(tmp_path):
    arrays = make_arrays(n_test=200)
    arrays["test_y"] = np.repeat(np.arange(10), 20)  # sorted by class, like the shared CIFAR-10 file
    np.savez(tmp_path / "cifar10.npz", **arrays)
    full = load_dataset("cifar10", data_dir=tmp_path, seed=0, download=False)
    first = load_dataset("cifar10", data_dir=tmp_path, seed=0, download=False).limit_test(40)
    other_seed = load_dataset("cifar10", data_dir=tmp_path, seed=5, download=False).limit_test(40)
    assert len(first.test) == 40 and first.split_info["sizes"]["test"] == 40
    # the first 40 would be two classes; a sample of 40 out of 10 × 20 holds (nearly) all of them
    assert len(set(first.test.labels.tolist())) >= 8
    # the same images whatever the run's seed, in the test set's own order, each one a real test image
    assert torch.equal(first.test.inputs, other_seed.test.inputs)
    positions = [next(i for i in range(200) if torch.equal(full.test.inputs[i], x)) for x in first.test.inputs]
    assert positions == sorted(positions) and len(set(positions)) == 40
    assert torch.equal(full.test.labels[positions], first.test.labels)


def test_offline_without_file_names_the_path(tmp_path):
    with pytest.raises(DataUnavailableError,
                       match=r"Put cifar10\.npz \(keys train_x, train_y, test_x, test_y, classes\) in ") as info:
        load_dataset("cifar10", data_dir=tmp_path, download=False)
    assert str(tmp_path) in str(info.value) and "network access" in str(info.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.pop("test_y"), "missing test_y"),
        (lambda a: a.__setitem__("train_x", a["train_x"].astype(np.float32)), "uint8"),
        (lambda a: a.__setitem__("train_x", a["train_x"] / 255.0), r"\(x \* 255\)\.round\(\)\.astype\(np\.uint8\)"),
        (lambda a: a.__setitem__("train_x", a["train_x"].transpose(0, 3, 1, 2)), r"transpose\(0, 2, 3, 1\)"),
        (lambda a: a.update(x_train=a.pop("train_x"), y_train=a.pop("train_y")),
         "rename x_train → train_x, y_train → train_y"),
        (lambda a: a.__setitem__("train_y", a["train_y"] + 5), r"in \[0, 9\], got values from 5 to 14"),
        (lambda a: a.__setitem__("test_x", a["test_x"][:, :16]), r"shape \(32, 32, 3\)"),
        (lambda a: a.__setitem__("test_y", a["test_y"][:10]), "50 labels"),
        (lambda a: a.__setitem__("classes", a["classes"][:5]), "10 class names"),
    ],
)
def test_bad_npz_is_an_input_error_naming_the_file(tmp_path, change, message):
    arrays = make_arrays()
    change(arrays)
    np.savez(tmp_path / "cifar10.npz", **arrays)
    with pytest.raises(InputError, match=message) as info:
        load_dataset("cifar10", data_dir=tmp_path, download=False)
    assert "cifar10.npz" in str(info.value)


def test_unreadable_and_pickled_npz(tmp_path):
    (tmp_path / "cifar10.npz").write_bytes(b"not a zip file")
    with pytest.raises(InputError, match="Cannot read .*cifar10.npz"):
        load_dataset("cifar10", data_dir=tmp_path, download=False)
    arrays = make_arrays()
    arrays["classes"] = np.asarray(CLASSES, dtype=object)
    np.savez(tmp_path / "cifar10.npz", **arrays)
    with pytest.raises(InputError, match="pickled"):
        load_dataset("cifar10", data_dir=tmp_path, download=False)
    # A header declaring 10^7 images over 1,000 bytes: refused from the header, not a MemoryError traceback
    import io
    import zipfile

    header = "{'descr': '|u1', 'fortran_order': False, 'shape': (10000000, 32, 32, 3), }"
    header += " " * (64 - (11 + len(header)) % 64) + "\n"
    declared = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 1000
    arrays = make_arrays()
    with zipfile.ZipFile(tmp_path / "cifar10.npz", "w") as archive:
        archive.writestr("train_x.npy", declared)
        for key in ("train_y", "test_x", "test_y", "classes"):
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(arrays[key]))
            archive.writestr(f"{key}.npy", buffer.getvalue())
    with pytest.raises(InputError, match=r"train_x to hold the 28\.6 GiB its header declares"):
        load_dataset("cifar10", data_dir=tmp_path, download=False)


class _FakeCIFAR10:
    """Stands in for torchvision.datasets.CIFAR10 (no network in tests)."""

    calls = 0

    def __init__(self, root, train, download):
        type(self).calls += 1
        arrays = make_arrays(seed=1)
        self.data = arrays["train_x"] if train else arrays["test_x"]
        self.targets = list(arrays["train_y"] if train else arrays["test_y"])
        self.classes = CLASSES


def test_download_writes_the_npz_once(tmp_path, monkeypatch):
    import torchvision.datasets

    monkeypatch.setattr(torchvision.datasets, "CIFAR10", _FakeCIFAR10)
    first = load_dataset("cifar10", data_dir=tmp_path / "new", download=True)
    assert (tmp_path / "new" / "cifar10.npz").is_file() and _FakeCIFAR10.calls == 2
    assert not [p for p in (tmp_path / "new").iterdir() if p.name.endswith(".tmp")]
    second = load_dataset("cifar10", data_dir=tmp_path / "new", download=False)
    assert _FakeCIFAR10.calls == 2 and torch.equal(first.train.inputs, second.train.inputs)


def test_download_failure_becomes_data_unavailable(tmp_path, monkeypatch):
    import torchvision.datasets

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(torchvision.datasets, "SVHN", offline)
    with pytest.raises(DataUnavailableError, match=r"Could not download SVHN .*URLError.*Put svhn\.npz"):
        load_dataset("svhn", data_dir=tmp_path, download=True)


def test_svhn_default_val_is_a_tenth(tmp_path):
    arrays = make_arrays(n_train=730, n_test=20)
    arrays["classes"] = np.asarray([str(d) for d in range(10)])
    write_image_npz(tmp_path / "svhn.npz", **arrays)
    data = load_dataset("svhn", data_dir=tmp_path, download=False)
    assert (len(data.train), len(data.val), len(data.test)) == (657, 73, 20)


# ------------------------------------------------------------------------------------------- the real CIFAR-10


def test_real_cifar10_paper_splits_with_train_subset(real_data_file):
    path = real_data_file("cifar10.npz")
    data = load_dataset("cifar10", data_dir=path.parent, seed=0, train_subset=1000, download=False)
    assert (len(data.train), len(data.val), len(data.test)) == (1000, 5000, 10000)
    assert data.split_info["train_pool"] == 45000 and data.split_info["val_size"] == 5000
    assert data.classes[:3] == ["airplane", "automobile", "bird"]
    # val = first 5000 of default_rng(0).permutation(50000); train_subset = the next 1000 (first of the train pool)
    with np.load(path) as archive:
        train_y = archive["train_y"]
    order = np.random.default_rng(0).permutation(50000)
    assert np.array_equal(data.val.labels.numpy(), train_y[order[:5000]])
    assert np.array_equal(data.train.labels.numpy(), train_y[order[5000:6000]])
    # class balance: the file has 5000 per class sorted by class, the test set 1000 per class
    val_counts = torch.bincount(data.val.labels, minlength=10)
    assert val_counts.min() > 420 and val_counts.max() < 580  # a shuffle, not the class-sorted head of the file
    assert torch.bincount(data.train.labels, minlength=10).min() > 60
    assert torch.equal(torch.bincount(data.test.labels), torch.full((10,), 1000))
    # the published channel means hold for this (JPEG-rebuilt) copy too
    means = data.val.inputs.float().mean(dim=(0, 2, 3)) / 255
    assert torch.allclose(means, torch.tensor(data.extra["mean"]), atol=0.01)
