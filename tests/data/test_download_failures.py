"""A download that cannot happen leaves no folder behind, whichever command asked for the data (train's datasets,
ood's OOD sets): the folders made for it are removed with what the failed download left in them."""

import dataclasses
from urllib.error import URLError

import pytest

from adacal.data import load_ood_set, vision
from adacal.errors import AdacalError


@pytest.fixture
def offline(monkeypatch):
    def fetch(root):
        (root / "partial.tar.gz.part").write_bytes(b"half")  # what a failed download leaves
        raise URLError("no network")

    for name in ("cifar10", "svhn"):
        monkeypatch.setitem(vision.SPECS, name, dataclasses.replace(vision.SPECS[name], fetch=fetch))


@pytest.mark.parametrize("load", [
    lambda root: load_ood_set("svhn", data_dir=root),
    lambda root: load_ood_set("cifar10", data_dir=root),
    lambda root: load_ood_set("cifar10-c", data_dir=root, corruption="gaussian_noise", severity=5),
], ids=["ood-svhn", "ood-cifar10", "ood-cifar10-c"])
def test_a_failed_download_leaves_no_folder(tmp_path, offline, load):
    with pytest.raises(AdacalError, match=r"Could not download .*--data-dir DIR or \$ADACAL_DATA"):
        load(tmp_path / "typo" / "deeper")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_data_folder_is_never_removed(tmp_path, offline):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mine.txt").write_text("keep me")
    with pytest.raises(AdacalError, match="Could not download"):
        load_ood_set("svhn", data_dir=tmp_path / "data")
    assert (tmp_path / "data" / "mine.txt").read_text() == "keep me"
