"""Carry CIFAR-10 to a machine that cannot download it, inside a 64 MiB transfer: pack here, unpack there.

    python benchmarks/pack_cifar10.py pack ../shared/data/cifar10.npz .data/cifar10.jpeg.npz      # here (~30 MiB)
    python benchmarks/pack_cifar10.py unpack .data/cifar10.jpeg.npz data/cifar10.npz               # there

The prepared array file (`train_x/train_y/test_x/test_y/classes`, uint8 HWC, the format adacal's loaders read) is
170 MB and does not compress losslessly below ~80 MB. `pack` writes JPEG sheets (Pillow's libjpeg, which torchvision
brings): 64 images a row in one JPEG per 32,704 images, quality 95, colour kept at full resolution (4:4:4), so every
8×8 block lies inside one image and an image decodes the same whatever its neighbours. All 60,000 images take ~30 MiB
at ~47 dB PSNR against the input — well above the ~30 dB that the shared copy itself carries against the original
CIFAR-10 — where one JPEG per image (`--per-image`, the first format; quality 85, 4:2:0) needed 58 MiB for ~40 dB:
a JPEG file's ~600 bytes of tables outweighed a 32×32 image's own data. `pack` prints the size and the PSNR it measured
(decoding a sample of what it wrote), `unpack` writes the standard array file atomically and reads every format this
script ever wrote. Labels and class names travel unchanged. No pickle anywhere.

Runs that must see exactly the images they would see here (more seeds of a committed benchmark) use the lossless
pack instead: `pack --lossless --seeds 1,2 --train-subset 10000 --val-size 5000` keeps, bit for bit (WebP lossless
sheets of 64 images a row, about half the raw bytes), only the training images the splits of those seeds draw (their
training subset and validation split, found by loading the splits through adacal itself) and the whole test set.
`unpack` puts them back at their own indices and fills the training images no kept split uses with zeros, so the
file loads as the full dataset and those seeds' splits are identical to the original's; any other seed or split
size would train on blank images, which is why the pack records the splits it kept and `unpack` prints them.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from adacal.errors import AdacalError  # noqa: E402
from adacal.writing import write_file  # noqa: E402

SPLITS = ("train", "test")
FORMAT = "adacal-jpeg-pack-1"  # one JPEG per image (`pack --per-image`)
SHEETS_FORMAT = "adacal-jpeg-sheets-pack-1"  # JPEG sheets (`pack`)
LOSSLESS_FORMAT = "adacal-webp-lossless-pack-1"
SHEET_QUALITY = 95
PER_IMAGE_QUALITY = 85
TRANSFER_LIMIT = 64 * 2**20
SHEET_COLUMNS = 64  # images a row of a lossless sheet
WEBP_MAX_SIDE = 16383
MARKED_LIMIT = 1 << 24  # training images a 3-byte index mark can tell apart


def encode_images(images: np.ndarray, quality: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W, 3) uint8 → (all JPEG streams concatenated as uint8, N + 1 offsets into them)."""
    streams: list[np.ndarray] = []
    for image in images:
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="JPEG", quality=quality)
        streams.append(np.frombuffer(buffer.getbuffer(), dtype=np.uint8).copy())
    offsets = np.zeros(len(streams) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in streams], out=offsets[1:])
    data = np.concatenate(streams) if streams else np.zeros(0, dtype=np.uint8)
    return data, offsets


def decode_images(data: np.ndarray, offsets: np.ndarray, picks: np.ndarray | None = None) -> np.ndarray:
    """Inverse of `encode_images`: (N, H, W, 3) uint8, or only the images at the indices `picks`."""
    picks = np.arange(len(offsets) - 1) if picks is None else picks
    if len(picks) == 0:
        raise ValueError("the packed split holds no images")
    decoded = []
    for i in picks:
        with Image.open(io.BytesIO(data[offsets[i] : offsets[i + 1]].tobytes())) as image:
            decoded.append(np.asarray(image.convert("RGB")))
    return np.stack(decoded)


def encode_sheets(images: np.ndarray, *, quality: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W, 3) uint8 → WebP-lossless sheets of `SHEET_COLUMNS` images a row (or, with `quality`, JPEG sheets at
    that quality with full-resolution colour), concatenated, and their offsets.

    A lossless sheet compresses ~10 % better than the same images one file each (one header, and context across
    images); a JPEG sheet about half as much as one JPEG per image (one set of tables instead of one an image)."""
    if len(images) == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    height, width = images.shape[1:3]
    if SHEET_COLUMNS * width > WEBP_MAX_SIDE or height > WEBP_MAX_SIDE:
        raise ValueError(f"images of {height}x{width} pixels do not fit a WebP sheet of {SHEET_COLUMNS} a row "
                         f"(at most {WEBP_MAX_SIDE} pixels a side)")
    per_sheet = SHEET_COLUMNS * max(1, WEBP_MAX_SIDE // height)
    streams: list[np.ndarray] = []
    for start in range(0, len(images), per_sheet):
        chunk = images[start : start + per_sheet]
        rows = -(-len(chunk) // SHEET_COLUMNS)
        padded = np.zeros((rows * SHEET_COLUMNS, *chunk.shape[1:]), dtype=np.uint8)
        padded[: len(chunk)] = chunk
        sheet = padded.reshape(rows, SHEET_COLUMNS, height, width, 3).transpose(0, 2, 1, 3, 4)
        buffer = io.BytesIO()
        picture = Image.fromarray(sheet.reshape(rows * height, SHEET_COLUMNS * width, 3))
        if quality is None:
            picture.save(buffer, format="WEBP", lossless=True, quality=100, method=4)
        else:  # 4:4:4: no chroma subsampling, whose upsampling would blend neighbouring images
            picture.save(buffer, format="JPEG", quality=quality, subsampling=0, optimize=True)
        streams.append(np.frombuffer(buffer.getbuffer(), dtype=np.uint8).copy())
    offsets = np.zeros(len(streams) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in streams], out=offsets[1:])
    return np.concatenate(streams), offsets


def decode_sheets(data: np.ndarray, offsets: np.ndarray, count: int, image_shape: tuple[int, int]) -> np.ndarray:
    """Inverse of `encode_sheets`: the first `count` images, (count, H, W, 3) uint8."""
    height, width = image_shape
    images = []
    for i in range(len(offsets) - 1):
        with Image.open(io.BytesIO(data[offsets[i] : offsets[i + 1]].tobytes())) as sheet:
            pixels = np.asarray(sheet.convert("RGB"))
        rows = pixels.shape[0] // height
        images.append(pixels.reshape(rows, height, SHEET_COLUMNS, width, 3).transpose(0, 2, 1, 3, 4)
                      .reshape(rows * SHEET_COLUMNS, height, width, 3))
    decoded = np.concatenate(images) if images else np.zeros((0, height, width, 3), dtype=np.uint8)
    if len(decoded) < count:
        raise ValueError(f"the packed sheets hold {len(decoded)} images, {count} expected")
    return decoded[:count]


def training_images_in_use(source: Path, seeds: list[int], *, train_subset: int | None, val_size: int | None,
                           ) -> np.ndarray:
    """Sorted indices of the training images that adacal's own CIFAR-10 loader puts in the training subset or the
    validation split for each seed: the loader reads a copy of `source` whose every training image carries its own
    index in its first pixel, so the answer is whatever the loader does, not a copy of its rules."""
    import tempfile

    from adacal.data import load_dataset

    with np.load(source, allow_pickle=False) as npz:
        labels, test_count = npz["train_y"], len(npz["test_y"])
        shape = npz["train_x"].shape
        if shape[0] > MARKED_LIMIT:
            raise ValueError(f"--seeds can tell apart at most {MARKED_LIMIT} training images, got {shape[0]}")
        marked = np.zeros(shape, dtype=np.uint8)
        index = np.arange(shape[0])
        marked[:, 0, 0, 0], marked[:, 0, 0, 1], marked[:, 0, 0, 2] = index % 256, index // 256 % 256, index // 65536
        arrays = {"train_x": marked, "train_y": labels, "test_x": np.zeros((test_count, *shape[1:]), np.uint8),
                  "test_y": npz["test_y"]}
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
    used: set[int] = set()
    with tempfile.TemporaryDirectory() as folder:
        np.savez(Path(folder) / "cifar10.npz", **arrays)
        for seed in seeds:
            dataset = load_dataset("cifar10", data_dir=folder, download=False, seed=seed,
                                   train_subset=train_subset, val_size=val_size)
            for split in (dataset.train, dataset.val):
                pixel = split.inputs[:, :, 0, 0].numpy().astype(np.int64)  # (N, C): the marked first pixel
                used.update((pixel[:, 0] + 256 * pixel[:, 1] + 65536 * pixel[:, 2]).tolist())
    return np.array(sorted(used), dtype=np.int64)


def pack_lossless(source: Path, target: Path, seeds: list[int] | None, *, train_subset: int | None,
                  val_size: int | None) -> dict[str, Any]:
    """The lossless pack: every test image, and every training image (or only those the seeds' splits draw)."""
    with np.load(source, allow_pickle=False) as npz:
        _check_source(npz, source)
        train_x = npz["train_x"]
        kept = (np.arange(len(train_x)) if seeds is None else
                training_images_in_use(source, seeds, train_subset=train_subset, val_size=val_size))
        kept_for = ("every training image" if seeds is None else
                    f"the training images of seeds {','.join(map(str, seeds))} with train_subset={train_subset} "
                    f"and val_size={val_size}")
        arrays: dict[str, np.ndarray] = {
            "format": np.array(LOSSLESS_FORMAT), "kept_for": np.array(kept_for), "train_kept": kept,
            "train_count": np.array(len(train_x)), "test_count": np.array(len(npz["test_x"])),
            "image_shape": np.array(train_x.shape[1:3]), "train_y": npz["train_y"], "test_y": npz["test_y"]}
        arrays["train_sheets"], arrays["train_offsets"] = encode_sheets(train_x[kept])
        arrays["test_sheets"], arrays["test_offsets"] = encode_sheets(npz["test_x"])
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
    write_file(target, lambda handle: np.savez(handle, **arrays), binary=True)
    return {"bytes": target.stat().st_size, "kept": len(kept), "train_count": len(train_x), "kept_for": kept_for}


def _unpack_lossless(npz: Any) -> dict[str, np.ndarray]:
    shape = tuple(int(v) for v in npz["image_shape"])
    kept = npz["train_kept"]
    train_x = np.zeros((int(npz["train_count"]), *shape, 3), dtype=np.uint8)
    train_x[kept] = decode_sheets(npz["train_sheets"], npz["train_offsets"], len(kept), shape)
    arrays = {"train_x": train_x, "train_y": npz["train_y"],
              "test_x": decode_sheets(npz["test_sheets"], npz["test_offsets"], int(npz["test_count"]), shape),
              "test_y": npz["test_y"]}
    if "classes" in npz.files:
        arrays["classes"] = npz["classes"]
    return arrays


def _check_source(npz: Any, source: Path) -> None:
    """A prepared array file's train/test images and labels are there, images (N, H, W, 3) uint8."""
    missing = {f"{s}_{k}" for s in SPLITS for k in "xy"} - set(npz.files)
    if missing:
        raise ValueError(f"{source} lacks {', '.join(sorted(missing))}")
    for split in SPLITS:
        images = npz[f"{split}_x"]
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"{source}:{split}_x must be (N, H, W, 3) uint8, got {images.shape} {images.dtype}")


def _check_label_counts(arrays: dict[str, np.ndarray], source: Path) -> None:
    """An unpacked split has as many labels as images."""
    for split in SPLITS:
        if len(arrays[f"{split}_x"]) != len(arrays[f"{split}_y"]):
            raise ValueError(f"{source}: {split} has {len(arrays[f'{split}_x'])} images but "
                             f"{len(arrays[f'{split}_y'])} labels")


def psnr(reference: np.ndarray, decoded: np.ndarray) -> float:
    mse = np.mean((reference.astype(np.float64) - decoded.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def pack_sheets(source: Path, target: Path, quality: int = SHEET_QUALITY) -> dict[str, float]:
    """The default pack: both splits as JPEG sheets at `quality`; returns the size and the PSNR of what was written
    (every image decoded)."""
    arrays: dict[str, np.ndarray] = {"format": np.array(SHEETS_FORMAT), "quality": np.array(quality)}
    with np.load(source, allow_pickle=False) as npz:
        _check_source(npz, source)
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
        errors = []
        for split in SPLITS:
            images = npz[f"{split}_x"]
            data, offsets = encode_sheets(images, quality=quality)
            arrays[f"{split}_sheets"], arrays[f"{split}_offsets"] = data, offsets
            arrays[f"{split}_count"], arrays[f"{split}_y"] = np.array(len(images)), npz[f"{split}_y"]
            arrays["image_shape"] = np.array(images.shape[1:3])
            decoded = decode_sheets(data, offsets, len(images), images.shape[1:3])
            errors.append(((images.astype(np.float64) - decoded) ** 2).mean())
    write_file(target, lambda handle: np.savez(handle, **arrays), binary=True)
    mse = float(np.mean(errors))
    return {"bytes": target.stat().st_size, "psnr_db": float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)}


def pack(source: Path, target: Path, quality: int) -> dict[str, float]:
    """The first format (`pack --per-image`): one JPEG per image."""
    arrays: dict[str, np.ndarray] = {"format": np.array(FORMAT), "quality": np.array(quality)}
    with np.load(source, allow_pickle=False) as npz:
        _check_source(npz, source)
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
        sample_psnr = []
        for split in SPLITS:
            images = npz[f"{split}_x"]
            data, offsets = encode_images(images, quality)
            arrays[f"{split}_jpeg"], arrays[f"{split}_offsets"] = data, offsets
            arrays[f"{split}_y"] = npz[f"{split}_y"]
            # PSNR on a seeded sample of what was written (decoding all of it would double the time)
            picks = np.sort(np.random.default_rng(0).choice(len(images), size=min(2000, len(images)), replace=False))
            sample_psnr.append(psnr(images[picks], decode_images(data, offsets, picks)))
    write_file(target, lambda handle: np.savez(handle, **arrays), binary=True)
    return {"bytes": target.stat().st_size, "psnr_db": float(np.mean(sample_psnr))}


def unpack(source: Path, target: Path) -> dict[str, Any]:
    with np.load(source, allow_pickle=False) as npz:
        kind = str(npz["format"]) if "format" in npz.files else None
        if kind not in (FORMAT, SHEETS_FORMAT, LOSSLESS_FORMAT):
            raise ValueError(f"{source} is not a file written by `pack_cifar10.py pack`")
        if kind == LOSSLESS_FORMAT:
            arrays = _unpack_lossless(npz)
            kept = {"kept": len(npz["train_kept"]), "kept_for": str(npz["kept_for"])}
        elif kind == SHEETS_FORMAT:
            shape = tuple(int(v) for v in npz["image_shape"])
            arrays = {f"{split}_{key}": value for split in SPLITS for key, value in (
                ("x", decode_sheets(npz[f"{split}_sheets"], npz[f"{split}_offsets"], int(npz[f"{split}_count"]),
                                    shape)), ("y", npz[f"{split}_y"]))}
            if "classes" in npz.files:
                arrays["classes"] = npz["classes"]
            kept = {}
        else:
            arrays = {}
            for split in SPLITS:
                arrays[f"{split}_x"] = decode_images(npz[f"{split}_jpeg"], npz[f"{split}_offsets"])
                arrays[f"{split}_y"] = npz[f"{split}_y"]
            if "classes" in npz.files:
                arrays["classes"] = npz["classes"]
            kept = {}
    _check_label_counts(arrays, source)
    write_file(target, lambda handle: np.savez(handle, **arrays), binary=True)
    return {**{split: len(arrays[f"{split}_x"]) for split in SPLITS}, **kept}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packer = commands.add_parser("pack", help="prepared cifar10.npz -> JPEG-packed file")
    packer.add_argument("source", type=Path)
    packer.add_argument("target", type=Path)
    packer.add_argument("--quality", type=int, default=None,
                        help=f"JPEG quality 1-100 (default {SHEET_QUALITY}; {PER_IMAGE_QUALITY} with --per-image)")
    packer.add_argument("--per-image", action="store_true",
                        help="one JPEG per image (the first format: about twice the bytes for less quality)")
    packer.add_argument("--lossless", action="store_true",
                        help="WebP lossless sheets instead of JPEG: the images bit for bit (about half the raw bytes)")
    packer.add_argument("--seeds", default=None,
                        help="lossless only: keep just the training images the splits of these seeds draw (e.g. 1,2)")
    packer.add_argument("--train-subset", type=int, default=None, help="with --seeds: the runs' --train-subset")
    packer.add_argument("--val-size", type=int, default=None, help="with --seeds: the runs' --val-size")
    unpacker = commands.add_parser("unpack", help="JPEG-packed file -> prepared cifar10.npz")
    unpacker.add_argument("source", type=Path)
    unpacker.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "pack" and args.seeds is None and (args.train_subset, args.val_size) != (None, None):
            raise ValueError("--train-subset and --val-size only describe the splits of --seeds: add --seeds")
        if args.command == "pack" and (args.lossless or args.seeds is not None):
            if not args.lossless:
                raise ValueError("--seeds keeps exact images only in a lossless pack: add --lossless")
            if args.quality is not None:
                raise ValueError("--quality sets JPEG's quality; a --lossless pack has none")
            if args.per_image:
                raise ValueError("--per-image is a JPEG format; a --lossless pack uses sheets")
            seeds = None
            if args.seeds is not None:
                try:
                    seeds = [int(v) for v in args.seeds.split(",")]
                except ValueError:
                    raise ValueError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
            figures = pack_lossless(args.source, args.target, seeds, train_subset=args.train_subset,
                                    val_size=args.val_size)
            mib = figures["bytes"] / 2**20
            print(f"wrote {args.target}: {mib:.1f} MiB, lossless; {figures['kept']} of {figures['train_count']} "
                  f"training images ({figures['kept_for']}) and every test image")
            if figures["bytes"] > TRANSFER_LIMIT - 4 * 2**20:
                advice = "keep fewer seeds" if seeds else "keep only some seeds' images (--seeds)"
                print(f"warning: {mib:.1f} MiB "
                      f"{'exceeds' if figures['bytes'] > TRANSFER_LIMIT else 'leaves little of'} a 64 MiB transfer; "
                      f"{advice}", file=sys.stderr)
        elif args.command == "pack":
            if args.quality is None:
                args.quality = PER_IMAGE_QUALITY if args.per_image else SHEET_QUALITY
            if not 1 <= args.quality <= 100:
                raise ValueError(f"--quality must be in 1..100, got {args.quality}")
            if args.per_image:
                figures = pack(args.source, args.target, args.quality)
            else:
                figures = pack_sheets(args.source, args.target, args.quality)
            mib = figures["bytes"] / 2**20
            print(f"wrote {args.target}: {mib:.1f} MiB, {figures['psnr_db']:.1f} dB PSNR against {args.source}")
            if figures["bytes"] > TRANSFER_LIMIT - 4 * 2**20:
                print(f"warning: {mib:.1f} MiB leaves little of a 64 MiB transfer; try a lower --quality",
                      file=sys.stderr)
        else:
            counts = unpack(args.source, args.target)
            print(f"wrote {args.target}: " + ", ".join(f"{counts[split]} {split}" for split in SPLITS) + " images")
            if "kept" in counts and counts["kept"] < counts["train"]:
                print(f"  only {counts['kept']} training images are real ({counts['kept_for']}); the others are blank")
    except (AdacalError, OSError, ValueError, RuntimeError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
