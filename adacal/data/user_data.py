"""The user's own data by path, as `adacal train --dataset <path>` takes it: an image folder (`user_images`), a CSV
file with a label column (`user_tables`) or an .npz of arrays (here). The written rules are in docs/data.md.

A `--dataset` value that is a registered name is that dataset; otherwise an existing path is the user's data; anything
else is the unknown-name error, which lists the names and says a path works too. The path is recorded absolute (a run
reloads it from anywhere), with a fingerprint of its content: a resumed or re-evaluated run refuses data that changed.

Splits: the parts the data gives (train/ val/ test/ folders, x_train / x_val / x_test arrays) are used as given; a
missing test split is a class-stratified fifth of the labelled pool drawn with seed 0 (whatever --seed is, so every
run scores the same test samples, as digits' fixed test set); a missing validation split is `val_size` samples
(default a tenth of what is left, at least one) class-stratified with --seed; the rest is the training split
(`train_subset=N` keeps the first N of its seeded order). Feature vectors are standardised with the training split's
per-feature mean and std, images normalised with its per-channel mean and std; both are recorded in the split record.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from adacal.data.base import (
    DATASETS,
    Dataset,
    Split,
    default_val_size,
    split_record,
    stratified_split,
    take_subset,
)
from adacal.errors import InputError

# The fixed seed of a test split drawn from the user's data: every --seed scores the same test samples.
USER_TEST_SEED = 0
# Keys of an .npz of arrays, in the order they are looked for.
INPUT_KEYS = ("x", "X", "features", "inputs")
LABEL_KEYS = ("y", "labels", "targets")
SPLIT_KEYS = {part: (f"x_{part}", f"y_{part}") for part in ("train", "val", "test")}
PREPARED_KEYS = {"train": ("train_x", "train_y"), "test": ("test_x", "test_y")}  # the prepared-image format
TABLE_SUFFIXES = (".csv", ".tsv")


def user_data_path(name: Any) -> Path | None:
    """The absolute path `--dataset name` means when it is not a registered dataset name but an existing file or
    folder; None otherwise (a registered name always wins).

    >>> user_data_path("digits") is None
    True
    """
    text = str(name)
    if not text or text.lower() in DATASETS:
        return None
    path = Path(text).expanduser()
    if not (path.exists() or path.is_symlink()):
        return None
    return Path(os.path.abspath(path))


def is_user_data(name: Any) -> bool:
    """Whether `--dataset name` names the user's own data (a path), not a registered dataset."""
    return user_data_path(name) is not None


def user_data_kind(path: Path) -> str:
    """'image-folder', 'table' or 'arrays' by what the path is (a folder, a .csv/.tsv, an .npz); else an InputError."""
    path = Path(path)
    if path.is_dir():
        return "image-folder"
    suffix = path.suffix.lower()
    if path.is_file() and suffix in TABLE_SUFFIXES:
        return "table"
    if path.is_file() and suffix == ".npz":
        return "arrays"
    if not path.is_file():
        found = "something that is neither file nor folder"
    else:
        found = f"a {suffix} file" if suffix else "a file without a known suffix"
    raise InputError(f"Expected --dataset {path} to be an image folder, a .csv file or an .npz file, got {found}.")


def default_user_model(name: Any) -> str | None:
    """The model a run on the user's data builds when none is named: mlp for a table or feature vectors, resnet20 for
    images; None when `name` is not a path. An .npz is opened to see which it holds (its headers only)."""
    path = user_data_path(name)
    if path is None:
        return None
    kind = user_data_kind(path)
    if kind == "image-folder":
        return "resnet20"
    if kind == "table":
        return "mlp"
    from adacal.data.image_arrays import read_npz

    arrays = read_npz(path)
    key = next((k for k in (*INPUT_KEYS, "x_train", "train_x") if k in arrays), None)
    ndim = arrays[key].ndim if key is not None else None
    return "resnet20" if ndim is not None and ndim >= 3 else "mlp"


def fingerprint(path: Path, files: list[Path] | None = None) -> str:
    """A content fingerprint: the sha256 of a file's bytes, or for a folder of the sorted list of its data files
    (path relative to the folder, and size). Recorded in the split record; resume and evaluate compare it."""
    digest = hashlib.sha256()
    path = Path(path)
    if files is None:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return f"sha256:{digest.hexdigest()}"
    for file in sorted(files):
        digest.update(f"{file.relative_to(path).as_posix()}\t{file.stat().st_size}\n".encode())
    return f"files-sha256:{digest.hexdigest()}"


def check_same_data(saved: Any, split_info: dict[str, Any], *, what: str) -> None:
    """Refuse data whose fingerprint differs from the one a run recorded (`what`: the command, for the message);
    records without a fingerprint (registered datasets) are not compared."""
    if not isinstance(saved, dict) or "fingerprint" not in saved or "fingerprint" not in split_info:
        return
    if saved["fingerprint"] != split_info["fingerprint"]:
        raise InputError(
            f"Expected {split_info.get('source')} to hold the data the run trained on, but its content changed since "
            f"(fingerprint {split_info['fingerprint'][:20]}..., the run recorded {str(saved['fingerprint'])[:20]}...): "
            f"restore the data, or train a new run on it instead of {what}."
        )


def load_user_data(
    path: Path, *, seed: int = 0, train_subset: int | None = None, val_size: int | None = None,
    label_column: str | None = None, workers: int | None = None, **options: Any,
) -> Dataset:
    """The user's data at `path` (absolute) as a `Dataset`: an image folder, a CSV or an .npz (see the module doc).

    >>> import numpy as np, tempfile, os
    >>> rng = np.random.default_rng(0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     file = os.path.join(folder, "arrays.npz")
    ...     np.savez(file, x=rng.normal(size=(40, 3)).astype(np.float32), y=np.arange(40) % 2)
    ...     data = load_user_data(file, seed=0)
    >>> data.kind, data.num_classes, data.split_info["sizes"]
    ('vector', 2, {'train': 29, 'val': 3, 'test': 8})
    """
    if options:
        raise InputError(f"Expected no loader options for --dataset {path} besides label_column, got "
                         f"{', '.join(sorted(options))}.")
    path = Path(os.path.abspath(Path(path).expanduser()))
    kind = user_data_kind(path)
    if label_column is not None and kind != "table":
        raise InputError(f"--label-column applies to a CSV file dataset, got --dataset {path} (an {kind}).")
    if kind == "image-folder":
        from adacal.data.user_images import load_image_folder

        return load_image_folder(path, seed=seed, train_subset=train_subset, val_size=val_size, workers=workers)
    if kind == "table":
        from adacal.data.user_tables import read_table

        inputs, labels, classes, details = read_table(path, label_column=label_column)
        return vector_dataset(path, {"all": (inputs, labels)}, classes, seed=seed, train_subset=train_subset,
                              val_size=val_size, source_kind="csv", details=details)
    return _load_arrays(path, seed=seed, train_subset=train_subset, val_size=val_size)


# ------------------------------------------------------------------------------------------------------ splitting


def class_counts_check(labels: np.ndarray, classes: list[str], *, carved: int, what: str) -> None:
    """Every class of a pool that `carved` splits are drawn from needs carved + 1 samples (one left for training)."""
    if carved == 0:
        return
    counts = np.bincount(labels, minlength=len(classes))
    low = int(np.argmin(counts))
    if counts[low] < carved + 1:
        parts = "validation and test splits" if carved == 2 else "a split"
        raise InputError(
            f"Expected at least {carved + 1} samples of each class in {what} (to split off {parts} by class and keep "
            f"some for training), got {int(counts[low])} of class '{classes[low]}': add samples of it, or give "
            "separate val/test parts."
        )


def split_pool(
    labels: np.ndarray, classes: list[str], *, given: dict[str, np.ndarray], seed: int, val_size: int | None,
    train_subset: int | None, what: str,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Indices into the pool (`labels`) of each split the data does not give (`given`: the labels of the splits it
    gives, "val" and/or "test"), by the module's rules; and the split details for the record."""
    need_test, need_val = "test" not in given, "val" not in given
    if val_size is not None and not need_val:
        raise InputError(f"--val-size applies when the validation split is drawn from the training data, but {what} "
                         "has its own validation part.")
    class_counts_check(labels, classes, carved=int(need_test) + int(need_val), what=what)
    n = len(labels)
    rest = np.random.default_rng(seed).permutation(n)
    parts: dict[str, np.ndarray] = {}
    method = []
    if need_test:
        keep, test = stratified_split(labels, take=max(1, n // 5), seed=USER_TEST_SEED, what=what)
        rest, parts["test"] = keep, test
        method.append("test: a class-stratified fifth of the data, seed 0")
    else:
        method.append("test: as given")
    if need_val:
        size = default_val_size(len(rest)) if val_size is None else val_size
        train_pos, val_pos = stratified_split(labels[rest], take=size, seed=seed, what=f"{what} (val)")
        parts["val"] = rest[val_pos]
        rest = rest[train_pos]
        method.append("val: val_size class-stratified with the seed (default a tenth of the rest)")
    else:
        size = len(given["val"])
        method.append("val: as given")
    missing = sorted(set(range(len(classes))) - set(labels[rest].tolist()))
    if missing:
        raise InputError(
            f"Expected samples of every class left for training in {what}, but class '{classes[missing[0]]}' has none "
            "after the validation and test splits: add samples of it, or lower --val-size."
        )
    parts["train"] = take_subset(rest, train_subset, what)
    method.append("train: the rest in seeded order (train_subset keeps its first N)")
    return parts, {"val_size": int(size), "train_pool": len(rest), "method": "; ".join(method)}


def make_dataset(
    path: Path, *, kind: str, classes: list[str], input_shape: tuple[int, ...], splits: dict[str, Split],
    seed: int, train_subset: int | None, details: dict[str, Any], split_details: dict[str, Any],
    extra: dict[str, Any],
) -> Dataset:
    return Dataset(
        name=str(path), kind=kind, num_classes=len(classes), classes=list(classes), input_shape=input_shape,
        train=splits["train"], val=splits["val"], test=splits["test"],
        split_info=split_record(
            source=str(path), seed=seed, val_size=split_details["val_size"], train_subset=train_subset,
            train_pool=split_details["train_pool"], train=splits["train"], val=splits["val"], test=splits["test"],
            method=split_details["method"], **details,
        ),
        extra={"default_model": "resnet20" if kind == "image" else "mlp", **extra},
    )


def vector_dataset(
    path: Path, parts: dict[str, tuple[np.ndarray, np.ndarray]], classes: list[str], *, seed: int,
    train_subset: int | None, val_size: int | None, source_kind: str, details: dict[str, Any],
) -> Dataset:
    """Feature vectors (float) and labels by part ("all" for one pool, or "train" with optional "val", "test"),
    split by the rules, standardised with the training split's mean and std."""
    pool_name = "all" if "all" in parts else "train"
    inputs, labels = parts[pool_name]
    given = {name: labels_ for name, (_, labels_) in parts.items() if name in ("val", "test")}
    index, split_details = split_pool(labels, classes, given=given, seed=seed, val_size=val_size,
                                      train_subset=train_subset, what=str(path))
    arrays = {name: (inputs[rows], labels[rows]) for name, rows in index.items()}
    arrays.update({name: parts[name] for name in given})
    train_x = arrays["train"][0].astype(np.float64)
    mean = train_x.mean(axis=0)
    std = train_x.std(axis=0)
    std[std == 0] = 1.0  # a constant feature: centred, not scaled
    splits = {name: Split(((x - mean) / std).astype(np.float32), y) for name, (x, y) in arrays.items()}
    scaled = splits["train"].inputs
    return make_dataset(
        path, kind="vector", classes=classes, input_shape=(int(inputs.shape[1]),), splits=splits, seed=seed,
        train_subset=train_subset,
        details={"kind": source_kind, "fingerprint": fingerprint(path), "classes": list(classes), **details,
                 "feature_mean": [float(v) for v in mean], "feature_std": [float(v) for v in std]},
        split_details=split_details,
        extra={"feature_range": (float(scaled.min()), float(scaled.max())), "feature_mean": mean, "feature_std": std},
    )


# --------------------------------------------------------------------------------------------------------- arrays


def _load_arrays(path: Path, *, seed: int, train_subset: int | None, val_size: int | None) -> Dataset:
    from adacal.data.image_arrays import check_images, read_npz

    arrays = read_npz(path)
    parts = _array_parts(arrays, path)
    classes_given = arrays.get("classes")
    labels_by_part, classes = _array_labels({name: y for name, (_, y) in parts.items()}, classes_given, path)
    first = parts["all" if "all" in parts else "train"][0]
    if first.ndim >= 3:
        images = {}
        for name, (x, _) in parts.items():
            images[name] = check_images(x, name=f"the {_part(name)}inputs in {path}")
        shapes = {tuple(x.shape[1:]) for x in images.values()}
        if len(shapes) > 1:
            raise InputError(f"Expected every part of {path} to hold images of one shape, got {sorted(shapes)}.")
        from adacal.data.user_images import image_dataset

        return image_dataset(
            path, {name: (images[name], labels_by_part[name]) for name in parts}, classes, seed=seed,
            train_subset=train_subset, val_size=val_size, details={"kind": "npz", "fingerprint": fingerprint(path),
                                                                   "classes": list(classes)},
        )
    vectors = {}
    for name, (x, _) in parts.items():
        if x.ndim != 2 or x.dtype.kind not in "biuf":
            raise InputError(f"Expected the {_part(name)}inputs in {path} to be numeric feature vectors (N, D) or "
                             f"images (N, H, W[, C]), got {x.dtype} of shape {x.shape}.")
        with np.errstate(over="ignore", invalid="ignore"):
            values = x.astype(np.float64)
        if not np.isfinite(values).all():
            row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
            raise InputError(f"Expected finite features in {path}, got {x[row][~np.isfinite(values[row])][0]} in "
                             f"row {row} of {name}: fill or drop it.")
        vectors[name] = (values, labels_by_part[name])
    widths = {v.shape[1] for v, _ in vectors.values()}
    if len(widths) > 1:
        raise InputError(f"Expected every part of {path} to hold vectors of one length, got {sorted(widths)}.")
    return vector_dataset(path, vectors, classes, seed=seed, train_subset=train_subset, val_size=val_size,
                          source_kind="npz", details={})


def _array_parts(arrays: dict[str, np.ndarray], path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"all": (x, y)} or {"train": ..., "val"?: ..., "test"?: ...} from the keys of an .npz."""
    listed = ", ".join(sorted(arrays)) or "nothing"
    if SPLIT_KEYS["train"][0] in arrays or PREPARED_KEYS["train"][0] in arrays:
        named = dict(SPLIT_KEYS) if SPLIT_KEYS["train"][0] in arrays else dict(PREPARED_KEYS)
        parts = {}
        for name, (x_key, y_key) in named.items():
            if x_key not in arrays:
                continue
            if y_key not in arrays:
                raise InputError(f"Expected labels {y_key} beside {x_key} in {path} (it has {listed}).")
            parts[name] = (arrays[x_key], arrays[y_key])
        return parts
    x_key = next((k for k in INPUT_KEYS if k in arrays), None)
    y_key = next((k for k in LABEL_KEYS if k in arrays), None)
    if x_key is None:
        raise InputError(f"Expected the inputs of {path} under one of the keys {', '.join(INPUT_KEYS)} (or x_train, "
                         f"y_train, x_val, ...), got {listed}.")
    if y_key is None:
        raise InputError(f"Expected the labels of {path} under one of the keys {', '.join(LABEL_KEYS)} (or "
                         f"y_train, ...), got {listed}: training needs a label per sample.")
    return {"all": (arrays[x_key], arrays[y_key])}


def _array_labels(labels: dict[str, np.ndarray], classes_given: np.ndarray | None, path: Path
                  ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Each part's labels as int64 class indices, and the class names: integer labels 0..K-1 (K from a `classes`
    array when given, else the largest training label + 1, every class present in training), or class names (str),
    sorted."""
    out = {}
    for name, y in labels.items():
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise InputError(f"Expected the {_part(name)}labels in {path} to be 1-D (one per sample), got shape "
                             f"{y.shape}.")
        out[name] = y
    for name, y in out.items():  # booleans, and whole numbers stored as floats (a pandas export), are integers
        if y.dtype.kind == "b":
            out[name] = y.astype(np.int64)
        elif y.dtype.kind == "f" and np.isfinite(y).all() and (y == np.round(y)).all():
            out[name] = y.astype(np.int64)
    kinds = {y.dtype.kind for y in out.values()}
    if kinds <= {"U", "S"}:
        if classes_given is not None:
            raise InputError(f"Expected integer labels with the 'classes' array of {path}, got class names.")
        names = sorted({str(v) for y in out.values() for v in y.astype(str)})
        lookup = {c: i for i, c in enumerate(names)}
        return {name: np.asarray([lookup[str(v)] for v in y.astype(str)], dtype=np.int64)
                for name, y in out.items()}, names
    if not kinds <= {"i", "u"}:
        bad = next(name for name, y in out.items() if y.dtype.kind not in "iu")
        raise InputError(f"Expected the {_part(bad)}labels in {path} to be integer classes or class names, got dtype "
                         f"{out[bad].dtype}.")
    pool = out.get("all", out.get("train"))
    if classes_given is not None:
        if classes_given.ndim != 1 or classes_given.dtype.kind not in "US":
            raise InputError(f"Expected 'classes' in {path} to be a 1-D array of names, got {classes_given.dtype} "
                             f"{classes_given.shape}.")
        names = [str(c) for c in classes_given]
    else:
        names = [str(c) for c in range(int(pool.max()) + 1 if len(pool) else 0)]
    k = len(names)
    for name, y in out.items():
        if len(y) and (int(y.min()) < 0 or int(y.max()) >= k):
            raise InputError(
                f"Expected the {_part(name)}labels in {path} in [0, {k - 1}] ({k} classes, "
                f"{'its classes array' if classes_given is not None else 'from the training labels'}), got values "
                f"from {int(y.min())} to {int(y.max())}."
            )
    if classes_given is None:
        present = np.bincount(pool.astype(np.int64), minlength=k)
        if (present == 0).any():
            missing = int(np.flatnonzero(present == 0)[0])
            raise InputError(f"Expected the training labels of {path} to be 0..{k - 1} with every class present, but "
                             f"class {missing} has no sample: renumber the classes, or add a 'classes' array.")
    if k < 2:
        raise InputError(f"Expected at least 2 classes in {path}, got {k}.")
    return {name: y.astype(np.int64) for name, y in out.items()}, names


def _part(name: str) -> str:
    """"test " for the part test of an .npz, "" for its one pool: words for the messages."""
    return "" if name == "all" else f"{name} "


# ------------------------------------------------------------------------------------------------------------ OOD


def load_user_ood(path: Path, record: dict[str, Any], input_shape: tuple[int, ...]) -> Split:
    """An OOD set for a model trained on the user's data (`record`: its run's split record), read as that data was:
    a folder of images (class folders or not; labels -1) decoded at the training size and channels, or a CSV / an .npz
    of feature vectors standardised with the training split's mean and std (a CSV needs the training feature
    columns; its label column, if any, is not read)."""
    path = Path(path).expanduser()
    kind = record.get("kind")
    if path.is_dir():
        if len(input_shape) != 3 or kind not in ("image-folder", "npz") or "image_size" not in record and kind != "npz":
            raise InputError(f"Expected --out {path} to be of the kind the model trained on ({record.get('source')}), "
                             "got an image folder.")
        from adacal.data.user_images import read_ood_images

        channels, height, width = input_shape
        return read_ood_images(path, size=(int(width), int(height)), channels=int(channels))
    mean, std = record.get("feature_mean"), record.get("feature_std")
    if len(input_shape) != 1 or not isinstance(mean, list) or not isinstance(std, list):
        raise InputError(f"Expected --out {path} to be of the kind the model trained on ({record.get('source')}): an "
                         "image folder, or an .npz of images.")
    if path.suffix.lower() in TABLE_SUFFIXES:
        from adacal.data.user_tables import read_table

        columns = record.get("feature_columns")
        if not isinstance(columns, list):
            raise InputError(f"Expected a CSV run's record to name its feature columns, got none for {path}.")
        values = read_table(path, feature_columns=[str(c) for c in columns])[0]
    else:
        from adacal.data.image_arrays import read_npz

        arrays = read_npz(path)
        key = next((k for k in (*INPUT_KEYS, "x_test", "test_x") if k in arrays), None)
        if key is None:
            raise InputError(f"Expected the OOD inputs of {path} under one of the keys {', '.join(INPUT_KEYS)}, got "
                             f"{', '.join(sorted(arrays)) or 'nothing'}.")
        values = arrays[key]
        if values.ndim != 2 or values.dtype.kind not in "iuf":
            raise InputError(f"Expected '{key}' in {path} to be feature vectors (N, D), got {values.dtype} of shape "
                             f"{values.shape}.")
        values = values.astype(np.float64)
        if not np.isfinite(values).all():
            raise InputError(f"Expected finite features in '{key}' of {path}.")
    if values.shape[1] != len(mean):
        raise InputError(f"Expected {len(mean)} features per sample in {path} like the model's input, got "
                         f"{values.shape[1]}.")
    scaled = (values - np.asarray(mean)) / np.asarray(std)
    return Split(scaled.astype(np.float32), np.full(len(values), -1, dtype=np.int64))
