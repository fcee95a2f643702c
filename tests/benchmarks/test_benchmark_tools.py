"""benchmarks/pack_cifar10.py: the JPEG and the lossless packs that carry CIFAR-10 to a machine that cannot download
it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adacal.data import load_dataset
from benchmark_scripts import load_benchmark_script

pack_cifar10 = load_benchmark_script("pack_cifar10")


def natural_images(n: int, size: int = 32, seed: int = 0) -> np.ndarray:
    """(n, size, size, 3) uint8 random fields with the statistics JPEG is built for: a 1/f² amplitude spectrum in
    luminance (smooth shapes with soft edges, like photographs) and smoother, weaker colour (JPEG halves chroma
    resolution). At quality 85 they keep ~37 dB and pack to ~30% of their size; real CIFAR-10: ~40 dB, ~32%."""
    rng = np.random.default_rng(seed)
    frequency = np.hypot(*np.meshgrid(np.fft.fftfreq(size), np.fft.fftfreq(size), indexing="ij"))
    frequency[0, 0] = 1.0

    def field(falloff: float) -> np.ndarray:
        spectrum = rng.standard_normal((n, size, size)) + 1j * rng.standard_normal((n, size, size))
        spectrum /= frequency**falloff
        spectrum[:, 0, 0] = 0
        values = np.fft.ifft2(spectrum).real
        return values / values.std(axis=(1, 2), keepdims=True)

    luma = 128 + 40 * field(2.0)[..., None]
    chroma = np.stack([field(3.0), field(3.0)], axis=-1) @ np.array([[1.0, -0.3, -0.7], [0.0, 0.6, -0.6]]) * 20
    return np.clip(np.rint(luma + chroma), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module", params=["synthetic", pytest.param("real", marks=pytest.mark.real_data)])
def small_cifar(request, tmp_path_factory) -> Path:
    """Smooth synthetic images, or every 250th training and 50th test image of the real CIFAR-10 ($ADACAL_TEST_DATA)."""
    path = tmp_path_factory.mktemp("pack") / "small.npz"
    if request.param == "real":
        with np.load(request.getfixturevalue("real_data_file")("cifar10.npz")) as npz:
            arrays = {"train_x": npz["train_x"][::250], "train_y": npz["train_y"][::250],
                      "test_x": npz["test_x"][::50], "test_y": npz["test_y"][::50], "classes": npz["classes"]}
    else:
        images = natural_images(400)
        arrays = {"train_x": images[:200], "train_y": np.arange(200) % 10, "test_x": images[200:],
                  "test_y": np.arange(200) % 10, "classes": np.array([f"c{i}" for i in range(10)])}
    np.savez(path, **arrays)
    return path


def test_pack_then_unpack_gives_the_same_labels_and_close_images_that_adacal_loads(small_cifar, tmp_path):
    packed, unpacked = tmp_path / "cifar10.jpeg.npz", tmp_path / "data" / "cifar10.npz"
    assert pack_cifar10.main(["pack", str(small_cifar), str(packed)]) == 0
    assert packed.stat().st_size < small_cifar.stat().st_size / 2
    assert pack_cifar10.main(["unpack", str(packed), str(unpacked)]) == 0
    with np.load(small_cifar) as before, np.load(unpacked) as after:
        assert sorted(after.files) == sorted(before.files)
        for key in ("train_y", "test_y", "classes"):
            np.testing.assert_array_equal(after[key], before[key])
        for key in ("train_x", "test_x"):
            assert after[key].dtype == np.uint8 and after[key].shape == before[key].shape
            assert pack_cifar10.psnr(before[key], after[key]) > 33.0
    dataset = load_dataset("cifar10", data_dir=unpacked.parent, download=False, val_size=20)
    assert len(dataset.train.labels) + len(dataset.val.labels) == 200


def test_decoding_a_subset_matches_decoding_everything(small_cifar):
    with np.load(small_cifar) as npz:
        images = npz["test_x"]
    data, offsets = pack_cifar10.encode_images(images, quality=85)
    picks = np.array([3, 0, 17])
    np.testing.assert_array_equal(pack_cifar10.decode_images(data, offsets, picks),
                                  pack_cifar10.decode_images(data, offsets)[picks])


def test_bad_input_is_one_error_line_and_writes_nothing(small_cifar, tmp_path, capsys):
    target = tmp_path / "out.npz"
    assert pack_cifar10.main(["unpack", str(small_cifar), str(target)]) == 2  # not a packed file
    assert pack_cifar10.main(["pack", str(tmp_path / "missing.npz"), str(target)]) == 2
    assert pack_cifar10.main(["pack", str(small_cifar), str(target), "--quality", "0"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("Error: ") for line in errors)
    assert list(tmp_path.iterdir()) == []


def test_lossless_pack_gives_back_every_image_bit_for_bit(small_cifar, tmp_path):
    packed, unpacked = tmp_path / "cifar10.webp.npz", tmp_path / "data" / "cifar10.npz"
    assert pack_cifar10.main(["pack", "--lossless", str(small_cifar), str(packed)]) == 0
    assert packed.stat().st_size < small_cifar.stat().st_size
    assert pack_cifar10.main(["unpack", str(packed), str(unpacked)]) == 0
    with np.load(small_cifar) as before, np.load(unpacked) as after:
        assert sorted(before.files) == sorted(after.files)
        for key in before.files:
            np.testing.assert_array_equal(before[key], after[key])


def test_sheets_hold_any_count_of_images_in_order():
    images = natural_images(130)  # two full sheet rows and a partial third
    data, offsets = pack_cifar10.encode_sheets(images)
    np.testing.assert_array_equal(pack_cifar10.decode_sheets(data, offsets, 130, (32, 32)), images)
    with pytest.raises(ValueError, match="hold 192 images, 500 expected"):
        pack_cifar10.decode_sheets(data, offsets, 500, (32, 32))
    with pytest.raises(ValueError, match="images of 8x300 pixels do not fit a WebP sheet"):
        pack_cifar10.encode_sheets(np.zeros((2, 8, 300, 3), dtype=np.uint8))


def test_a_lossless_pack_for_some_seeds_loads_their_splits_exactly(small_cifar, tmp_path, capsys):
    """Only the images seeds 1 and 2 draw travel; their train/val/test splits load identical to the original's,
    while another seed's split meets the blanks the pack put in place of the images it left out."""
    packed, unpacked = tmp_path / "cifar10.s12.npz", tmp_path / "data" / "cifar10.npz"
    sizes = {"train_subset": 40, "val_size": 20}
    assert pack_cifar10.main(["pack", "--lossless", "--seeds", "1,2", "--train-subset", "40", "--val-size", "20",
                              str(small_cifar), str(packed)]) == 0
    assert pack_cifar10.main(["unpack", str(packed), str(unpacked)]) == 0
    out = capsys.readouterr().out
    assert "training images are real (the training images of seeds 1,2 with train_subset=40 and val_size=20)" in out
    original = tmp_path / "original"
    original.mkdir()
    (original / "cifar10.npz").write_bytes(small_cifar.read_bytes())
    for seed in (1, 2):
        expected = load_dataset("cifar10", data_dir=original, download=False, seed=seed, **sizes)
        carried = load_dataset("cifar10", data_dir=unpacked.parent, download=False, seed=seed, **sizes)
        for split in ("train", "val", "test"):
            assert expected.split(split).inputs.equal(carried.split(split).inputs)
            assert expected.split(split).labels.equal(carried.split(split).labels)
    kept = pack_cifar10.training_images_in_use(small_cifar, [1, 2], **sizes)
    with np.load(unpacked) as after:
        train_x = after["train_x"]
    blank = np.flatnonzero(train_x.reshape(len(train_x), -1).max(axis=1) == 0)
    assert 60 <= len(kept) <= 120 and set(blank.tolist()) == set(range(len(train_x))) - set(kept.tolist())


def test_bad_lossless_options_are_one_error_line_and_write_nothing(small_cifar, tmp_path, capsys):
    target = tmp_path / "out.npz"
    assert pack_cifar10.main(["pack", "--seeds", "1", str(small_cifar), str(target)]) == 2
    assert pack_cifar10.main(["pack", "--lossless", "--seeds", "1,x", str(small_cifar), str(target)]) == 2
    assert pack_cifar10.main(["pack", "--val-size", "20", str(small_cifar), str(target)]) == 2
    assert pack_cifar10.main(["pack", "--lossless", "--quality", "90", str(small_cifar), str(target)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors == ["Error: --seeds keeps exact images only in a lossless pack: add --lossless",
                      "Error: --seeds must be comma-separated integers, got '1,x'",
                      "Error: --train-subset and --val-size only describe the splits of --seeds: add --seeds",
                      "Error: --quality sets JPEG's quality; a --lossless pack has none"]
    assert list(tmp_path.iterdir()) == []
