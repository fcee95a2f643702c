"""Carry CIFAR-10 to a machine that cannot download it, inside a 64 MiB transfer: JPEG-pack, then unpack there.

    python benchmarks/pack_cifar10.py pack ../shared/data/cifar10.npz .data/cifar10.jpeg.npz      # here (~58 MiB)
    python benchmarks/pack_cifar10.py unpack .data/cifar10.jpeg.npz data/cifar10.npz               # there

The prepared array file (`train_x/train_y/test_x/test_y/classes`, uint8 HWC, the format adacal's loaders read) is
170 MB and does not compress losslessly below ~160 MB; JPEG at quality 85 (Pillow's libjpeg, which torchvision brings) brings it to
~58 MiB at ~40 dB PSNR against the input (quality 90: 61 MiB, 42 dB, too close to the limit with the working tree
beside it) — well above the ~30 dB that the shared copy itself carries against the original CIFAR-10. `pack` prints the size and the PSNR it measured (decoding a sample of what it wrote), `unpack`
writes the standard array file atomically. Labels and class names travel unchanged. No pickle anywhere.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from adacal.errors import AdacalError  # noqa: E402
from adacal.reports import atomic_write  # noqa: E402

SPLITS = ("train", "test")
FORMAT = "adacal-jpeg-pack-1"
TRANSFER_LIMIT = 64 * 2**20


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


def psnr(reference: np.ndarray, decoded: np.ndarray) -> float:
    mse = np.mean((reference.astype(np.float64) - decoded.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def pack(source: Path, target: Path, quality: int) -> dict[str, float]:
    arrays: dict[str, np.ndarray] = {"format": np.array(FORMAT), "quality": np.array(quality)}
    with np.load(source, allow_pickle=False) as npz:
        missing = {f"{s}_{k}" for s in SPLITS for k in "xy"} - set(npz.files)
        if missing:
            raise ValueError(f"{source} lacks {', '.join(sorted(missing))}")
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
        sample_psnr = []
        for split in SPLITS:
            images = npz[f"{split}_x"]
            if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
                raise ValueError(f"{source}:{split}_x must be (N, H, W, 3) uint8, got {images.shape} {images.dtype}")
            data, offsets = encode_images(images, quality)
            arrays[f"{split}_jpeg"], arrays[f"{split}_offsets"] = data, offsets
            arrays[f"{split}_y"] = npz[f"{split}_y"]
            # PSNR on a seeded sample of what was written (decoding all of it would double the time)
            picks = np.sort(np.random.default_rng(0).choice(len(images), size=min(2000, len(images)), replace=False))
            sample_psnr.append(psnr(images[picks], decode_images(data, offsets, picks)))
    atomic_write(target, lambda handle: np.savez(handle, **arrays), binary=True)
    return {"bytes": target.stat().st_size, "psnr_db": float(np.mean(sample_psnr))}


def unpack(source: Path, target: Path) -> dict[str, int]:
    arrays: dict[str, np.ndarray] = {}
    with np.load(source, allow_pickle=False) as npz:
        if "format" not in npz.files or str(npz["format"]) != FORMAT:
            raise ValueError(f"{source} is not a file written by `pack_cifar10.py pack`")
        for split in SPLITS:
            arrays[f"{split}_x"] = decode_images(npz[f"{split}_jpeg"], npz[f"{split}_offsets"])
            arrays[f"{split}_y"] = npz[f"{split}_y"]
            if len(arrays[f"{split}_x"]) != len(arrays[f"{split}_y"]):
                raise ValueError(f"{source}: {split} has {len(arrays[f'{split}_x'])} images but "
                                 f"{len(arrays[f'{split}_y'])} labels")
        if "classes" in npz.files:
            arrays["classes"] = npz["classes"]
    atomic_write(target, lambda handle: np.savez(handle, **arrays), binary=True)
    return {split: len(arrays[f"{split}_x"]) for split in SPLITS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packer = commands.add_parser("pack", help="prepared cifar10.npz -> JPEG-packed file")
    packer.add_argument("source", type=Path)
    packer.add_argument("target", type=Path)
    packer.add_argument("--quality", type=int, default=85, help="JPEG quality 1-100 (default 85)")
    unpacker = commands.add_parser("unpack", help="JPEG-packed file -> prepared cifar10.npz")
    unpacker.add_argument("source", type=Path)
    unpacker.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            if not 1 <= args.quality <= 100:
                raise ValueError(f"--quality must be in 1..100, got {args.quality}")
            figures = pack(args.source, args.target, args.quality)
            mib = figures["bytes"] / 2**20
            print(f"wrote {args.target}: {mib:.1f} MiB, {figures['psnr_db']:.1f} dB PSNR against {args.source}")
            if figures["bytes"] > TRANSFER_LIMIT - 4 * 2**20:
                print(f"warning: {mib:.1f} MiB leaves little of a 64 MiB transfer; try a lower --quality",
                      file=sys.stderr)
        else:
            counts = unpack(args.source, args.target)
            print(f"wrote {args.target}: " + ", ".join(f"{n} {split}" for split, n in counts.items()) + " images")
    except (AdacalError, OSError, ValueError, RuntimeError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
