"""Every writer of predictions that adacal reads, as other tools write them: each `write_*(folder, scores, labels)`
saves the arrays and returns (path, ReadOptions) to read them back. Scores are (N, K) or a binary model's (N,);
text writers print each number with `repr`, which round-trips a float64 (and so a float32) exactly."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import torch

from adacal.sources import ReadOptions


def _is_probs(scores: np.ndarray) -> bool:
    return bool(scores.min() >= 0 and (scores.ndim == 1 or np.allclose(scores.sum(axis=1), 1.0, atol=1e-5)))


def _key(scores: np.ndarray) -> str:
    return "probs" if _is_probs(scores) else "logits"


def _rows(scores: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in np.atleast_1d(row)] for row in scores]


def _cells(scores: np.ndarray, labels: np.ndarray, separator: str) -> list[str]:
    return [separator.join([*(repr(float(v)) for v in np.atleast_1d(row)), str(int(y))])
            for row, y in zip(scores, labels)]


def write_npz_named(folder: Path, scores, labels):
    np.savez(folder / "named.npz", **{_key(scores): scores, "labels": labels})
    return folder / "named.npz", ReadOptions()


def write_npz_unnamed(folder: Path, scores, labels):
    np.savez(folder / "unnamed.npz", scores, labels)
    return folder / "unnamed.npz", ReadOptions()


def write_npz_split(folder: Path, scores, labels):
    """A run's predictions.npz layout: the test split is read."""
    np.savez(folder / "split.npz", val_logits=scores[::-1], val_labels=labels[::-1], test_logits=scores,
             test_labels=labels)
    return folder / "split.npz", ReadOptions()


def write_npy_pair(folder: Path, scores, labels):
    np.save(folder / "scores.npy", scores)
    np.save(folder / "scores_labels.npy", labels)
    return folder / "scores.npy", ReadOptions()


def write_pt_dict(folder: Path, scores, labels):
    torch.save({_key(scores): torch.from_numpy(scores), "labels": torch.from_numpy(labels)}, folder / "dict.pt")
    return folder / "dict.pt", ReadOptions()


def write_pt_tuple(folder: Path, scores, labels):
    torch.save((torch.from_numpy(scores), torch.from_numpy(labels)), folder / "tuple.pt")
    return folder / "tuple.pt", ReadOptions()


def write_pt_batches(folder: Path, scores, labels):
    """Lightning's `Trainer.predict`: one (scores, labels) tuple per batch, the last one short."""
    size = max(2, len(scores) // 3 + 1)
    batches = [(torch.from_numpy(scores[i:i + size]), torch.from_numpy(labels[i:i + size]))
               for i in range(0, len(scores), size)]
    torch.save(batches, folder / "batches.pt")
    return folder / "batches.pt", ReadOptions()


def write_csv_header(folder: Path, scores, labels, *, name: str = "header.csv", separator: str = ","):
    width = 1 if scores.ndim == 1 else scores.shape[1]
    header = separator.join([*(f"p{i}" for i in range(width)), "label"])
    (folder / name).write_text("\n".join([header, *_cells(scores, labels, separator)]) + "\n")
    return folder / name, ReadOptions()


def write_csv_no_header(folder: Path, scores, labels):
    (folder / "plain.csv").write_text("\n".join(_cells(scores, labels, ",")) + "\n")
    # A first row of pandas' column numbers cannot be told from a sample by the file alone: the option says.
    return folder / "plain.csv", ReadOptions(header=False)


def write_csv_index(folder: Path, scores, labels):
    """pandas' `DataFrame.to_csv()`: an unnamed index column first."""
    width = 1 if scores.ndim == 1 else scores.shape[1]
    lines = [",".join(["", *(f"p{i}" for i in range(width)), "label"])]
    lines += [f"{i}," + line for i, line in enumerate(_cells(scores, labels, ","))]
    (folder / "index.csv").write_text("\n".join(lines) + "\n")
    return folder / "index.csv", ReadOptions()


def write_csv_gz(folder: Path, scores, labels):
    path, options = write_csv_header(folder, scores, labels, name="gz.csv")
    (folder / "table.csv.gz").write_bytes(gzip.compress(path.read_bytes()))
    return folder / "table.csv.gz", options


def write_tsv(folder: Path, scores, labels):
    return write_csv_header(folder, scores, labels, name="table.tsv", separator="\t")


def write_txt(folder: Path, scores, labels):
    """np.savetxt of the scores, its labels beside it as `<stem>_labels.txt`."""
    np.savetxt(folder / "scores.txt", scores, fmt="%.17g")
    np.savetxt(folder / "scores_labels.txt", labels, fmt="%d")
    return folder / "scores.txt", ReadOptions()


def write_json_object(folder: Path, scores, labels):
    document = {_key(scores): scores.astype(np.float64).tolist(), "labels": labels.tolist()}
    (folder / "object.json").write_text(json.dumps(document))
    return folder / "object.json", ReadOptions()


def write_json_records(folder: Path, scores, labels):
    records = [{_key(scores): row if len(row) > 1 else row[0], "label": int(y)}
               for row, y in zip(_rows(scores), labels)]
    (folder / "records.json").write_text(json.dumps(records))
    return folder / "records.json", ReadOptions()


def write_jsonl(folder: Path, scores, labels):
    lines = [json.dumps({_key(scores): row if len(row) > 1 else row[0], "label": int(y)})
             for row, y in zip(_rows(scores), labels)]
    (folder / "lines.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "lines.jsonl", ReadOptions()


def write_mat(folder: Path, scores, labels):
    from scipy.io import savemat

    savemat(folder / "vars.mat", {_key(scores): scores, "labels": labels})
    return folder / "vars.mat", ReadOptions()


_SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}


def write_safetensors(folder: Path, scores, labels):
    """Hugging Face's format, by its specification: header length, JSON header, little-endian buffers."""
    header, blobs, offset = {}, [], 0
    for name, array in ((_key(scores), scores), ("labels", labels.astype(np.int64))):
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _SAFETENSORS_DTYPES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    (folder / "tensors.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return folder / "tensors.safetensors", ReadOptions()


WRITERS = {
    "npz": write_npz_named, "npz unnamed": write_npz_unnamed, "npz split": write_npz_split,
    "npy pair": write_npy_pair, "pt dict": write_pt_dict, "pt tuple": write_pt_tuple, "pt batches": write_pt_batches,
    "csv header": write_csv_header, "csv no header": write_csv_no_header, "csv index": write_csv_index,
    "csv.gz": write_csv_gz, "tsv": write_tsv, "txt": write_txt, "json object": write_json_object,
    "json records": write_json_records, "jsonl": write_jsonl, "mat": write_mat, "safetensors": write_safetensors,
}
