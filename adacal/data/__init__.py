"""Datasets by name with the paper's splits, a tensor-based batch loader, and corruptions / OOD sets.

    from adacal.data import load_dataset, BatchLoader
    data = load_dataset("cifar10", data_dir="/data", seed=0)        # Dataset: .train/.val/.test Splits
    loader = BatchLoader(data.train, 128, dataset=data, shuffle=True, augment=True, device="cuda")
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for inputs, labels in loader: ...

Registered datasets: digits (offline, bundled), cifar10, cifar100, svhn (`<data-dir>/<name>.npz` or a torchvision
download), tiny-imagenet, imagenet (folders), 20newsgroups (`20newsgroups.jsonl.gz` or scikit-learn).
"""

from adacal.data import folders, text, user_data, vectors, vision  # noqa: F401  (register the loaders)
from adacal.data.augment import augment_batch, crop_and_flip, draw_augmentation
from adacal.data.base import (
    DATASETS,
    NORMALIZATION,
    Dataset,
    Split,
    dataset_names,
    default_data_dir,
    load_dataset,
    normalization,
)
from adacal.data.corruptions import (
    CIFAR_C_CORRUPTIONS,
    CORRUPTIONS,
    GAUSSIAN_NOISE_SIGMAS,
    SEVERITY_TABLES,
    OODSet,
    check_corruption,
    cifar_c_folder,
    corrupt,
    corruption_names,
    gaussian_noise,
    known_corruptions,
    load_cifar_c,
    load_ood_set,
    load_ood_split,
    load_shifted_set,
    ood_names,
    severity_table_for,
    shift_corruptions,
)
from adacal.data.folders import LazyImages
from adacal.data.image_arrays import IMAGE_NPZ_KEYS, read_image_npz, write_image_npz
from adacal.data.loader import BatchLoader, resolve_device
from adacal.data.text import build_vocab, encode, tokenize

__all__ = [
    "CIFAR_C_CORRUPTIONS",
    "CORRUPTIONS",
    "DATASETS",
    "GAUSSIAN_NOISE_SIGMAS",
    "IMAGE_NPZ_KEYS",
    "NORMALIZATION",
    "SEVERITY_TABLES",
    "BatchLoader",
    "Dataset",
    "LazyImages",
    "OODSet",
    "Split",
    "augment_batch",
    "build_vocab",
    "check_corruption",
    "cifar_c_folder",
    "corrupt",
    "corruption_names",
    "crop_and_flip",
    "dataset_names",
    "default_data_dir",
    "draw_augmentation",
    "encode",
    "gaussian_noise",
    "known_corruptions",
    "load_cifar_c",
    "load_dataset",
    "load_ood_set",
    "load_ood_split",
    "load_shifted_set",
    "normalization",
    "ood_names",
    "read_image_npz",
    "resolve_device",
    "severity_table_for",
    "shift_corruptions",
    "tokenize",
    "write_image_npz",
]
