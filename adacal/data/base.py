"""What every dataset loader returns (`Dataset`, `Split`), the dataset registry and `load_dataset`."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from adacal.errors import InputError
from adacal.registry import Registry

DatasetKind = Literal["image", "vector", "text"]

DATASETS: Registry[Dataset] = Registry("dataset")

# The seed of the test sample `--test-subset N` keeps: fixed, so every run of a comparison sees the same images.
TEST_SUBSET_SEED = 0

# Per-channel mean and std of the training images, on the [0, 1] scale. Published constants (hardcoded so a loader
# needs no pass over the data). The CIFAR-10 std is the true per-pixel std (0.2470, ...); kuangliu's and the AdaFocal
# reference code use (0.2023, 0.1994, 0.2010), the std of per-image means, which only rescales the inputs slightly.
NORMALIZATION: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "svhn": ((0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970)),
    # Tiny-ImageNet as in Mukhoti et al.'s reference loader: the ImageNet constants.
    "tiny-imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
}


@dataclass
class Split:
    """One part of a dataset: `inputs` (first axis = samples) and `labels` int64 (N,).

    Images are uint8 (N, C, H, W), vectors float32 (N, D), text int64 token ids (N, L). For datasets too big for memory
    (ImageNet) `inputs` is a `LazyImages`, which behaves like a uint8 tensor for `len`, `.shape` and `inputs[indices]`.
    """

    inputs: Any
    labels: torch.Tensor

    def __post_init__(self) -> None:
        if isinstance(self.inputs, np.ndarray):  # numpy arrays work like the tensors they become
            if self.inputs.dtype.kind not in "biuf":
                raise InputError("Expected the inputs of a split to be numbers, got a numpy array of dtype "
                                 f"{self.inputs.dtype}.")
            self.inputs = torch.from_numpy(np.ascontiguousarray(self.inputs))
        self.labels = _split_labels(self.labels)
        if len(self.inputs) != len(self.labels):
            raise InputError(
                f"Expected as many labels as inputs in a split, got {len(self.labels)} labels for {len(self.inputs)} "
                "inputs."
            )

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices: Sequence[int] | np.ndarray | torch.Tensor) -> Split:
        index = torch.as_tensor(np.asarray(indices), dtype=torch.long)
        if isinstance(self.inputs, torch.Tensor):
            return Split(self.inputs[index], self.labels[index])
        return Split(self.inputs.select(index), self.labels[index])  # LazyImages: a lazy subset, nothing decoded


def _split_labels(labels: Any) -> torch.Tensor:
    """A split's labels as an int64 tensor (N,): integer class indices (a list, numpy array or tensor of any integer
    type); floats, booleans and one-hot rows are refused here rather than misread by a loss later."""
    if not isinstance(labels, torch.Tensor):
        array = np.asarray(labels)
        if array.dtype.kind not in "iu":
            raise InputError(
                f"Expected the labels of a split to be 1-D integer class indices, got dtype {array.dtype} shape "
                f"{array.shape}."
            )
        labels = torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64))
    if labels.ndim != 1 or labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise InputError(
            f"Expected the labels of a split to be 1-D integer class indices, got {labels.dtype} of shape "
            f"{tuple(labels.shape)}."
        )
    return labels if labels.dtype == torch.int64 else labels.long()


@dataclass
class Dataset:
    """A dataset split three ways, plus what a model and a run config need to know about it."""

    name: str
    kind: DatasetKind
    num_classes: int
    classes: list[str]
    input_shape: tuple[int, ...]
    train: Split
    val: Split
    test: Split
    split_info: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> Split:
        if name not in ("train", "val", "test"):
            raise InputError(f"Expected a split name train, val or test, got '{name}'.")
        return getattr(self, name)

    def limit_test(self, n: int | None, *, method: str = "every-class") -> Dataset:
        """Keep `n` test samples (quick experiments); None, or an `n` of at least the test split's size, keeps them
        all. Recorded in split_info (`test_subset`, `test_subset_seed`, `test_subset_method`).

        A seeded random sample kept in the original order, not the first n: test sets are often sorted by class (the
        prepared CIFAR-10 arrays are), and their first n would hold a single class. The seed is fixed, so runs with
        different training seeds are scored on the same test images. See `subset_test_rows` for `method`: with the
        default, every class of the test split is in the sample whenever n is at least the number of classes
        (`check_test_subset` refuses a smaller or larger n, as `adacal train --test-subset` does).
        """
        if n is None:
            return self
        n = check_int("test_subset", n, minimum=1)
        if n >= len(self.test):
            return self
        keep = subset_test_rows(self.test.labels.numpy(), n, method=method)
        self.test = self.test.subset(keep)
        sizes = {**self.split_info.get("sizes", {}), "test": int(n)}
        self.split_info = {**self.split_info, "test_subset": int(n), "test_subset_seed": TEST_SUBSET_SEED,
                           "test_subset_method": method, "sizes": sizes}
        return self

    def check_test_subset(self, n: int | None) -> None:
        """Refuse a test subset that cannot be what `--test-subset` promises: more samples than the test split holds,
        or fewer than its classes (one sample of each class)."""
        if n is None:
            return
        n = check_int("test_subset", n, minimum=1)
        if n > len(self.test):
            raise InputError(f"Expected test_subset at most {len(self.test)} (the test split of {self.name}), got {n}.")
        classes = len(np.unique(self.test.labels.numpy()))
        if n < classes:
            raise InputError(
                f"Expected test_subset at least {classes} (one sample of each class in the test split of "
                f"{self.name}), got {n}."
            )

    @property
    def mean(self) -> tuple[float, ...] | None:
        return self.extra.get("mean")

    @property
    def std(self) -> tuple[float, ...] | None:
        return self.extra.get("std")


def split_record(
    *, source: str, seed: int, val_size: int, train_subset: int | None, train_pool: int, train: Split, val: Split,
    test: Split, method: str, **details: Any,
) -> dict[str, Any]:
    """A dataset's `split_info`, in every loader's key order: where the data came from, the split's seed and sizes,
    the training pool the training subset is drawn from, how it was split (`method`), then loader-specific details."""
    return {
        "source": source,
        "seed": seed,
        "val_size": int(val_size),
        "train_subset": train_subset,
        "train_pool": int(train_pool),
        "sizes": {"train": len(train), "val": len(val), "test": len(test)},
        "method": method,
        **details,
    }


# How `Dataset.limit_test` draws its sample: "every-class" (the default) is "random" with every class of the test split
# in it; "random" is kept so that runs recorded with it (split_info without test_subset_method) keep their test images.
TEST_SUBSET_METHODS = ("every-class", "random")


def subset_test_rows(labels: np.ndarray, n: int, *, method: str = "every-class") -> np.ndarray:
    """The sorted positions of the `n` test samples `Dataset.limit_test` keeps, from the test split's labels.

    "random": a seeded sample (numpy default_rng(TEST_SUBSET_SEED).choice without replacement).
    "every-class": the same sample, then, while n is at least the number of classes, each class it misses (in class
    order) takes the place of a seeded-random sample of the class the sample holds most of (the lowest class id on a
    tie): every class is represented, the size stays n, and a sample that already held every class is unchanged.
    """
    if method not in TEST_SUBSET_METHODS:
        raise InputError(f"Expected a test subset method {' or '.join(TEST_SUBSET_METHODS)}, got {method!r}.")
    labels = np.asarray(labels)
    total = len(labels)
    if not 0 < n <= total:
        raise InputError(f"Expected a test subset of 1 to {total} samples, got {n}.")
    rng = np.random.default_rng(TEST_SUBSET_SEED)
    rows = np.sort(rng.choice(total, size=n, replace=False))
    classes = np.unique(labels)
    if method == "random" or n < len(classes):
        return rows
    for missing in np.setdiff1d(classes, labels[rows]):
        sampled, counts = np.unique(labels[rows], return_counts=True)
        largest = sampled[int(np.argmax(counts))]
        held = np.flatnonzero(labels[rows] == largest)
        members = np.flatnonzero(labels == missing)
        rows[held[rng.integers(len(held))]] = members[rng.integers(len(members))]
    return np.sort(rows)


def default_data_dir() -> Path:
    """Where datasets live when no --data-dir is given: $ADACAL_DATA, else the user cache dir (~/.cache/adacal)."""
    env = os.environ.get("ADACAL_DATA")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "adacal"


def data_location_hint(*, downloadable: bool = True) -> str:
    """The end of every "dataset not found" message (which names the folder looked in): the two ways to point adacal
    at a folder that holds the dataset, and (`downloadable`) the download.

    >>> data_location_hint(downloadable=False)
    'or point --data-dir DIR or $ADACAL_DATA at a folder that holds it'
    """
    where = "or point --data-dir DIR or $ADACAL_DATA at a folder that holds it"
    return f"{where}, or run with network access to download it" if downloadable else where


def dataset_names() -> list[str]:
    """The registered dataset names, as `load_dataset` and `adacal train --dataset` take them."""
    return DATASETS.names()


# The end of the unknown-dataset message: a path is the other thing --dataset takes.
PATH_HINT = "A path to your own data works too: an image folder, a .csv or an .npz file."


def check_dataset_name(name: str) -> None:
    """Refuse a name that is no registered dataset (closest names listed) and no path, saying a path works too."""
    from adacal.errors import UnknownNameError

    text = str(name)
    if text.lower() not in DATASETS and ("/" in text or os.sep in text or text.lower().endswith((".csv", ".npz"))):
        raise InputError(f"Expected --dataset {text} to be a dataset name or your data's image folder, .csv or .npz "
                         "file, but that path does not exist.")
    try:
        DATASETS.get(name)
    except UnknownNameError as exc:
        raise UnknownNameError(f"{exc} {PATH_HINT}") from None


def normalization(dataset: Dataset | str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(mean, std) per channel on the [0, 1] scale for an image dataset (a Dataset or a registered name), else None.

    Feed OOD images to a model with its *training* dataset's normalisation, e.g. `BatchLoader(ood_split, ...,
    dataset=in_dataset)` or `normalization("cifar10")`.
    """
    if isinstance(dataset, Dataset):
        if dataset.mean is None or dataset.std is None:
            return None
        return tuple(dataset.mean), tuple(dataset.std)
    if isinstance(dataset, tuple) and len(dataset) == 2:  # (mean, std) given directly (`checkpoint_normalisation`)
        return tuple(float(v) for v in dataset[0]), tuple(float(v) for v in dataset[1])
    name = str(dataset).lower()
    DATASETS.get(name)  # an unknown name raises UnknownNameError with suggestions
    return NORMALIZATION.get(name)


def load_dataset(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    train_subset: int | None = None,
    download: bool = True,
    val_size: int | None = None,
    **options: Any,
) -> Dataset:
    """Load a registered dataset with its train/val/test splits (see each loader's docstring for sizes and sources).

    `seed` fixes the validation split (and any shuffle); `train_subset=N` keeps the first N training samples of the
    shuffled training part, after the validation part was split off (so val and test do not change with N);
    `val_size` overrides the default validation size; `download=False` never touches the network. Extra `options`
    go to the loader (e.g. `max_length` for 20newsgroups); an option it does not take is an InputError.
    """
    key = str(name).lower()
    check_int("seed", seed, minimum=0)
    if train_subset is not None:
        check_int("train_subset", train_subset, minimum=1)
    if val_size is not None:
        check_int("val_size", val_size, minimum=1)
    from adacal.data.user_data import load_user_data, user_data_path

    path = user_data_path(name)  # a registered name wins; else an existing path is the user's own data
    if path is not None:
        return load_user_data(path, seed=seed, train_subset=train_subset, val_size=val_size, **options)
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    if root.exists() and not root.is_dir():
        raise InputError(f"Expected --data-dir to be a folder, got the file {root}.")
    check_dataset_name(str(name))  # unknown name → UnknownNameError with suggestions, before any work
    with folders_removed_on_failure(root):
        return DATASETS.build(
            key, data_dir=root, seed=seed, train_subset=train_subset, download=bool(download), val_size=val_size,
            **options,
        )


@contextlib.contextmanager
def folders_removed_on_failure(path: Path) -> Iterator[None]:
    """Folders a loader creates on the way to `path` (a data folder, a downloader's cache) are removed again when
    loading fails, with whatever a failed download left in them: a failing command leaves no folder behind (a --data-dir
    typo, a download that cannot happen). Folders that existed before are never touched."""
    path = Path(path).absolute()
    first_missing = None
    probe = path
    while not probe.exists() and probe.parent != probe:
        first_missing = probe
        probe = probe.parent
    try:
        yield
    except BaseException:
        if first_missing is not None and first_missing.is_dir() and not first_missing.is_symlink():
            shutil.rmtree(first_missing, ignore_errors=True)
        raise


# ---------------------------------------------------------------------------------------------------------- helpers


def check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        qualifier = "a non-negative" if minimum == 0 else "a positive"
        raise InputError(f"Expected {name} to be {qualifier} integer, got {value!r}.")
    return int(value)


def shuffled_split(
    n: int, *, val_size: int, seed: int, train_subset: int | None, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """(train_indices, val_indices) of range(n): a seeded permutation; the first `val_size` go to validation.

    As the AdaFocal / focal_calibration reference code does (it shuffles, then takes the first 10% for validation).
    `train_subset` keeps the first N of the remaining (still shuffled) training indices.
    """
    if n < 2:
        raise InputError(_too_few_to_split(n, what))
    if val_size >= n:
        raise InputError(f"Expected val_size below the {n} training samples of {what}, got {val_size}.")
    order = np.random.default_rng(seed).permutation(n)
    val, train = order[:val_size], order[val_size:]
    return take_subset(train, train_subset, what), val


def stratified_split(
    labels: np.ndarray, *, take: int, seed: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """(rest, taken): a seeded class-stratified sample of `take` indices (per-class counts by largest remainder).

    Both index arrays are returned in a seeded shuffled order (not sorted by class).
    """
    labels = np.asarray(labels)
    n = len(labels)
    if n < 2:
        raise InputError(_too_few_to_split(n, what))
    if not 0 < take < n:
        raise InputError(f"Expected a split size between 1 and {n - 1} for {what}, got {take}.")
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    exact = counts * (take / n)
    per_class = np.floor(exact).astype(np.int64)
    remainder = take - int(per_class.sum())
    if remainder:
        # Largest fractional part first; ties go to the lower class id (stable sort), deterministic.
        order = np.argsort(-(exact - per_class), kind="stable")
        per_class[order[:remainder]] += 1
    taken = []
    for cls, k in zip(classes, per_class):
        members = np.flatnonzero(labels == cls)
        taken.append(members[rng.permutation(len(members))[:k]])
    taken_idx = np.concatenate(taken) if taken else np.empty(0, dtype=np.int64)
    mask = np.ones(n, dtype=bool)
    mask[taken_idx] = False
    rest = np.flatnonzero(mask)
    return rest[rng.permutation(len(rest))], taken_idx[rng.permutation(len(taken_idx))]


def check_data_file(path: Path, what: str) -> None:
    """Refuse a dataset file's path that is there but is no file (a folder of that name, a symlink to nothing or to
    itself): otherwise it reads as "not in the data folder" and a download is tried, or a cache written over it."""
    path = Path(path)
    if path.is_file() or not (path.exists() or path.is_symlink()):
        return
    if path.is_dir():
        found = "a folder"
    elif path.is_symlink():
        try:
            path.resolve(strict=True)
            found = "a symlink to something that is not a file"
        except RuntimeError:  # Python < 3.13 reports a loop so
            found = "a symlink loop"
        except OSError as exc:
            found = "a symlink loop" if exc.errno == errno.ELOOP else f"a broken symlink (to {os.readlink(path)})"
    else:
        found = "something that is not a regular file"
    raise InputError(f"Expected {path} to be the file {what}, got {found}.")


def default_val_size(n: int) -> int:
    """The validation split's default size: a tenth of the `n` official training samples, and at least one (a tiny
    file of fewer than ten images still gets a validation split, which AdaFocal and calibration need)."""
    return max(1, int(n) // 10)


def _too_few_to_split(n: int, what: str) -> str:
    return (f"Expected at least 2 training samples in {what} (one or more go to the validation split, the rest to "
            f"training), got {n}.")


def take_subset(train: np.ndarray, train_subset: int | None, what: str) -> np.ndarray:
    """The first `train_subset` entries of an (already shuffled) index array; error when there are not enough."""
    if train_subset is None:
        return train
    if train_subset > len(train):
        raise InputError(
            f"Expected train_subset at most {len(train)} (the training split of {what}), got {train_subset}."
        )
    return train[:train_subset]


def images_to_tensor(images_hwc: np.ndarray, indices: np.ndarray | None = None) -> torch.Tensor:
    """uint8 (N, H, W, C) numpy → contiguous uint8 (N, C, H, W) tensor (optionally only `indices`)."""
    selected = images_hwc if indices is None else images_hwc[indices]
    return torch.from_numpy(np.ascontiguousarray(selected.transpose(0, 3, 1, 2)))


def labels_to_tensor(labels: np.ndarray, indices: np.ndarray | None = None) -> torch.Tensor:
    selected = labels if indices is None else labels[indices]
    return torch.from_numpy(np.ascontiguousarray(selected, dtype=np.int64))
