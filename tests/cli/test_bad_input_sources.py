"""Bad input files, class by class, for every command that reads that kind of file (the sibling of test_bad_input.py,
for what `adacal.sources` guards): non-regular files, declared sizes, JSON documents and their schemas, history
lines, checkpoint contents and the formats of other frameworks' outputs.

Each case must fail with a non-zero exit, exactly one `Error:` line on stderr naming the problem, no traceback, and
no file created or modified anywhere in the working folder or the fixtures. Placeholders: {run} a trained
digits/mlp/adafocal run folder, {preds} logits/labels .npz, {split} val_/test_ .npz, {ckpt} the run's last.pt,
{ws} the folder of malformed files built once by `_bad_files`.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot, write_prediction_files

K = 10
MEMORY_LIMIT = str(16 << 20)  # ADACAL_MEMORY_LIMIT for every case: the bounds are tested without a big machine


@pytest.fixture(scope="module")
def base(tmp_path_factory, train_tiny_run):
    from adacal.calibrators import build_calibrator, save_calibrator
    from adacal.ood import detect_ood, ood_report
    from adacal.reports import write_json

    root = tmp_path_factory.mktemp("bad-sources")
    run = train_tiny_run(root, epochs=2, loss="adafocal")
    split = write_prediction_files(root, run)
    save_calibrator(build_calibrator("temperature").fit(split["val_logits"], split["val_labels"]),
                    root / "calibrator.json")
    write_json(root / "ood.json", ood_report(detect_ood(split["test_logits"], split["val_logits"]),
                                             config={"in": "digits", "out": "val"}))
    base = {"root": root, "run": run, "preds": root / "preds.npz", "split": root / "split.npz",
            "ckpt": run / "checkpoints" / "last.pt", "calibrator": root / "calibrator.json",
            "ood_json": root / "ood.json", "ws": root / "bad"}
    base["ws"].mkdir()
    _bad_files(base["ws"], base, split)
    yield base
    base["sock"].close()


def _npy_bytes(shape, dtype="<f8", body=b""):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": dtype, "fortran_order": False, "shape": shape})
    return out.getvalue() + body


def _bad_files(ws: Path, base: dict, a: dict) -> None:
    logits, labels = a["test_logits"], a["test_labels"]
    n = len(labels)
    # --- not regular files
    os.mkfifo(ws / "fifo.npz")
    os.mkfifo(ws / "fifo.pt")
    os.mkfifo(ws / "fifo.json")
    os.mkfifo(ws / "fifo.npy")
    os.mkfifo(ws / "fifo.csv")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock.npz"))
    base["sock"] = sock
    (ws / "folder.npz").mkdir()
    (ws / "folder.json").mkdir()
    (ws / "folder.pt").mkdir()
    # --- declared sizes
    with zipfile.ZipFile(ws / "huge_header.npz", "w") as archive:
        archive.writestr("logits.npy", _npy_bytes((10**9, 10**6), body=b"\0" * 80))
        archive.writestr("labels.npy", _npy_bytes((3,), "<i8", b"\0" * 24))
    (ws / "huge_header.npy").write_bytes(_npy_bytes((10**12, K), body=b"\0" * 800))
    # 24 MiB of zeros, over the 16 MiB limit, compressed to a few KiB.
    np.savez_compressed(ws / "bomb_used.npz", logits=np.zeros(((3 << 20) // K, K)), labels=np.zeros(1, int))
    np.savez_compressed(ws / "bomb_labels.npz", labels=np.zeros(3 << 20, np.int64))
    torch.save({"logits": torch.zeros(1, 1).expand(10**6, K), "labels": torch.zeros(10**6, dtype=torch.long)},
               ws / "expanded.pt")
    torch.save({"logits": torch.eye(K).to_sparse(), "labels": torch.arange(K)}, ws / "sparse.pt")
    np.savez(ws / "object.npz", logits=np.array([{"a": 1}] * 3, dtype=object), labels=np.zeros(3, int))
    # --- formats of other frameworks
    (ws / "ragged.csv").write_text("a,b,label\n0.1,0.9,1\n0.3,1\n")
    (ws / "text.csv").write_text("a,b,label\n0.1,0.9,1\n0.3,high,0\n")
    (ws / "header_only.csv").write_text("a,b,label\n")
    (ws / "empty.csv").write_text("")
    (ws / "one_column.csv").write_text("label\n1\n0\n")
    (ws / "zebra.csv").write_text("cat,dog,label\n0.2,0.8,dog\n0.6,0.4,zebra\n")
    (ws / "latin1.csv").write_bytes("a,b,label\n0.1,0.9,caf\xe9\n".encode("latin-1"))
    names = np.array([f"c{i}" for i in range(K)])
    np.savez(ws / "strings_no_classes.npz", logits=logits, labels=names[labels])
    np.savez(ws / "strings_unknown.npz", logits=logits, labels=np.where(labels == 0, "zz", names[labels]),
             classes=names)
    np.savez(ws / "classes_short.npz", logits=logits, labels=names[labels], classes=names[:3])
    np.save(ws / "scores.npy", logits)
    np.save(ws / "labels_short.npy", labels[:-2])
    np.save(ws / "labels_2d.npy", labels[:, None, None])
    np.savez(ws / "binary_k10.npz", probs=np.full(n, 0.5), labels=labels)
    np.savez(ws / "rounded.npz", probs=np.round(np.full((n, 3), 1 / 3), 2), labels=labels % 3)
    np.savez(ws / "percent.npz", probs=np.full((n, 4), 25.0), labels=labels % 4)
    (ws / "bad.safetensors").write_bytes(b"\x10\0\0\0\0\0\0\0{not json at all")
    np.savez(ws / "weird_keys.npz", out=logits, gt=labels)
    torch.save([torch.tensor(logits)], ws / "list1.pt")
    torch.save("just a string", ws / "string.pt")
    (ws / "preds.xlsx").write_text("0.1 0.9 1\n")
    (ws / "preds.h5").write_bytes(b"\x89HDF\r\n\x1a\n")
    (ws / "model.ckpt").write_bytes(b"PK\x03\x04")
    (ws / "preds.pkl").write_bytes(b"\x80\x04K\x01.")  # a real pickle (the int 1): never loaded
    np.savez(ws / "val_k3.npz", logits=logits[:, :3], labels=labels % 3)
    # --- JSON documents (as calibrators, reports)
    calibrator = json.loads(base["calibrator"].read_text())
    ood = json.loads(base["ood_json"].read_text())
    documents = {
        "deep": "[" * 100_000 + "]" * 100_000,
        "bigint": '{"schema_version": 1, "results": {}, "x": ' + "7" * 5000 + "}",
        "nan": json.dumps(calibrator).replace('"results": {', '"results": {"n": NaN, ', 1),
        "overflow": json.dumps(calibrator).replace('"results": {', '"results": {"n": 1e999, ', 1),
        "latin1": None,
        "list": "[1, 2, 3]",
        "calib_method_number": json.dumps({**calibrator, "results": {"calibrator": {
            **calibrator["results"]["calibrator"], "method": 7}}}),
        "calib_no_params": json.dumps({**calibrator, "results": {"calibrator": {
            k: v for k, v in calibrator["results"]["calibrator"].items() if k != "params"}}}),
        "ood_auroc_text": json.dumps({**ood, "results": {**ood["results"], "scores": {
            "entropy": {"pre": {"auroc": "high"}}}}}),
        "ood_n_zero": json.dumps({**ood, "results": {**ood["results"], "in": {"name": "x", "n": 0}}}),
        "version_true": json.dumps({**calibrator, "schema_version": True}),
    }
    for name, text in documents.items():
        path = ws / f"{name}.json"
        if text is None:
            path.write_bytes(b'{"schema_version": 1, "kind": "caf\xe9"}')
        else:
            path.write_text(text)
    # --- checkpoints with one thing wrong
    loaded = torch.load(base["ckpt"], weights_only=True)
    state = loaded["model_state"]
    first = next(iter(state))
    checkpoints = {
        "absurd_classes": {"num_classes": 10**12},
        "absurd_hidden": {"model_options": {**loaded["model_options"], "hidden": [1 << 20, 1 << 20]}},
        "huge_option": {"model_options": {**loaded["model_options"], "hidden": 10**15}},
        "inf_option": {"model_options": {**loaded["model_options"], "dropout": float("inf")}},
        "huge_input": {"input_shape": [10**5, 10**5]},
        "sparse_weight": {"model_state": {**state, first: state[first].to_sparse()}},
        "complex_weight": {"model_state": {**state, first: state[first].to(torch.complex64)}},
        "shape_weight": {"model_state": {**state, first: state[first][:1]}},
        "missing_weight": {"model_state": {k: v for k, v in state.items() if k != first}},
        "list_state": {"model_state": [1, 2]},
        "expanded_weight": {"model_state": {**state, first: torch.zeros(1, 1).expand(1 << 16, 1 << 16)}},
    }
    for name, change in checkpoints.items():
        torch.save({**loaded, **change}, ws / f"{name}.pt")
        run = ws / f"run_{name}"
        shutil.copytree(base["run"], run)
        torch.save({**loaded, **change}, run / "checkpoints" / "last.pt")
        (run / "predictions.npz").unlink()
        (run / "evaluate.json").unlink()
    # --- run folders with a damaged history.jsonl or config.json (for --resume and plot)
    history = (base["run"] / "history.jsonl").read_text().splitlines()
    damaged = {
        "type": [history[0], history[1].replace('"epoch": 2', '"epoch": "two"')],
        "garbage": [history[0], "}}} garbage {{{", history[1]],
        "order": [history[1], history[0]],
        "gap": [history[1]],
        "nan": [history[0], history[1].replace('"lr": ', '"lr": NaN, "x": ', 1)],
        "list": [history[0], "[1, 2]"],
    }
    for name, lines in damaged.items():
        run = ws / f"history_{name}"
        shutil.copytree(base["run"], run)
        (run / "history.jsonl").write_text("\n".join(lines) + "\n")
    run = ws / "history_latin1"
    shutil.copytree(base["run"], run)
    (run / "history.jsonl").write_bytes((history[0] + "\n").encode() + b'{"epoch": 2, "note": "caf\xe9"}\n')
    run = ws / "history_fifo"
    shutil.copytree(base["run"], run)
    (run / "history.jsonl").unlink()
    os.mkfifo(run / "history.jsonl")
    for name, text in {"list": "[1, 2]", "nan": '{"schema_version": 1, "results": {}, "config": {"lr": NaN}}',
                       "epochs_text": None}.items():
        run = ws / f"config_{name}"
        shutil.copytree(base["run"], run)
        if text is None:
            config = json.loads((run / "config.json").read_text())
            config["config"]["epochs"] = "many"
            text = json.dumps(config)
        (run / "config.json").write_text(text)


# ------------------------------------------------------------------------------------------------ the table
# (id, argv, distinctive substring of the one error line)

READERS = {  # how each command reads one predictions file FILE
    "evaluate": "evaluate {f}",
    "calibrate": "calibrate {f}",
    "calibrate --val": "calibrate {preds} --val {f}",
    "calibrate test": "calibrate {f} --val {preds}",
    "ood --in-preds": "ood --in-preds {f} --out-preds {preds}",
    "ood --out-preds": "ood --in-preds {preds} --out-preds {f}",
    "evaluate --labels": "evaluate {ws}/scores.npy --labels {f}",
}


def _each(name: str, file: str, expected: str, readers=tuple(READERS)) -> list[tuple[str, str, str]]:
    return [(f"{reader}: {name}", READERS[reader].replace("{f}", file), expected) for reader in readers]


CASES = [
    # --- only regular files: FIFO, socket, device, folder, for every reader of every kind of file
    *_each("FIFO", "{ws}/fifo.npz", "is a FIFO"),
    *_each("socket", "{ws}/sock.npz", "is a socket"),
    *_each("device", "/dev/null", "character device", ("evaluate", "calibrate --val", "ood --out-preds",
                                                       "evaluate --labels")),
    *_each("FIFO .npy", "{ws}/fifo.npy", "is a FIFO", ("evaluate", "ood --in-preds", "evaluate --labels")),
    *_each("FIFO .csv", "{ws}/fifo.csv", "is a FIFO", ("evaluate", "calibrate --val", "evaluate --labels")),
    *_each("folder", "{ws}/folder.npz", "is a folder", ("calibrate --val", "ood --out-preds", "evaluate --labels")),
    ("evaluate: FIFO .pt", "evaluate {ws}/fifo.pt", "is a FIFO"),
    ("evaluate --calibrator FIFO", "evaluate {preds} --calibrator {ws}/fifo.json", "is a FIFO"),
    ("evaluate --calibrator device", "evaluate {preds} --calibrator /dev/zero", "character device"),
    ("evaluate --calibrator folder", "evaluate {preds} --calibrator {ws}/folder.json", "is a folder"),
    ("train --resume FIFO", "train --resume {ws}/fifo.pt", "is a FIFO"),
    ("train --resume history FIFO", "train --resume {ws}/history_fifo", "is a FIFO"),
    ("ood --model FIFO", "ood --model {ws}/fifo.pt --in digits --out digits", "is a FIFO"),
    ("ood --model device", "ood --model /dev/null --in digits --out digits", "character device"),
    ("ood --out FIFO of images", "ood --model {run} --in digits --out {ws}/fifo.npz", "is a FIFO"),
    ("ood --out folder of images", "ood --model {run} --in digits --out {ws}/folder.npz", "is a folder"),
    ("plot roc FIFO", "plot roc {ws}/fifo.json --out {ws}/r.png", "is a FIFO"),
    ("plot reliability FIFO", "plot reliability {ws}/fifo.npz --out {ws}/r.png", "is a FIFO"),
    # --- declared sizes, checked before allocation
    *_each("npz header declares a huge shape", "{ws}/huge_header.npz", "its zip entry holds",
           ("evaluate", "calibrate --val", "calibrate test", "ood --in-preds", "ood --out-preds")),
    *_each("npy header declares a huge shape", "{ws}/huge_header.npy", "header declares",
           ("evaluate", "ood --in-preds", "evaluate --labels")),
    *_each("member inflates past memory", "{ws}/bomb_used.npz", "to fit in memory, but it would need 24.0 MiB",
           ("evaluate", "calibrate --val", "ood --out-preds")),
    ("evaluate --labels: labels inflate past memory", "evaluate {ws}/scores.npy --labels {ws}/bomb_labels.npz",
     "to fit in memory, but it would need 24.0 MiB"),
    *_each("expanded (stride-0) view", "{ws}/expanded.pt", "would need 38.1 MiB",
           ("evaluate", "calibrate --val", "ood --in-preds", "ood --out-preds")),
    *_each("sparse tensor", "{ws}/sparse.pt", "to be a dense tensor, got a sparse_coo one",
           ("evaluate", "calibrate test", "ood --out-preds")),
    *_each("object array", "{ws}/object.npz", "holds Python objects",
           ("evaluate", "calibrate --val", "ood --in-preds")),
    # --- checkpoint contents, for every command that reads a checkpoint
    *[case for name, expected in (
        ("absurd_classes", "'num_classes' in"), ("absurd_hidden", "would need"),
        ("huge_option", "model option 'hidden'"),
        ("inf_option", "model option 'dropout'"), ("huge_input", "'input_shape' in"),
        ("sparse_weight", "dense tensor, got a sparse_coo one"), ("complex_weight", "to be a real tensor"),
        ("list_state", "'model_state' in"), ("expanded_weight", "would need 16.0 GiB"),
    ) for case in (
        (f"evaluate checkpoint {name}", f"evaluate {{ws}}/{name}.pt", expected),
        (f"evaluate run {name}", f"evaluate {{ws}}/run_{name}", expected),
        (f"calibrate run {name}", f"calibrate {{ws}}/run_{name}", expected),
        (f"ood --model {name}", f"ood --model {{ws}}/{name}.pt --in digits --out digits", expected),
        (f"train --resume {name}", f"train --resume {{ws}}/run_{name}", expected),
    )],
    ("evaluate checkpoint weight of another shape", "evaluate {ws}/shape_weight.pt", "fit model 'mlp'"),
    ("evaluate checkpoint missing weight", "evaluate {ws}/missing_weight.pt", "fit model 'mlp'"),
    ("ood --model weight of another shape", "ood --model {ws}/shape_weight.pt --in digits --out digits", "fit model"),
    # --- JSON documents: limits and schemas, as calibrators and reports
    *[case for name, expected in (
        ("deep", "nest at most"), ("bigint", "integer of 5000 digits"), ("nan", "NaN is not a JSON number"),
        ("overflow", "out of range for a float"), ("latin1", "not UTF-8"), ("list", "no schema_version/results"),
        ("version_true", "schema_version 1, got true"),
    ) for case in (
        (f"evaluate --calibrator {name}", f"evaluate {{preds}} --calibrator {{ws}}/{name}.json", expected),
        (f"plot roc {name}", f"plot roc {{ws}}/{name}.json --out {{ws}}/r.png", expected),
    )],
    ("evaluate --calibrator method is a number", "evaluate {preds} --calibrator {ws}/calib_method_number.json",
     "'results.calibrator.method'"),
    ("evaluate --calibrator without params", "evaluate {preds} --calibrator {ws}/calib_no_params.json",
     "'results.calibrator.params'"),
    ("plot roc auroc is text", "plot roc {ws}/ood_auroc_text.json --out {ws}/r.png",
     "'results.scores.entropy.pre.auroc'"),
    ("plot roc n is zero", "plot roc {ws}/ood_n_zero.json --out {ws}/r.png", "'results.in.n'"),
    ("train --resume config.json a list", "train --resume {ws}/config_list", "no schema_version/results"),
    ("train --resume config.json NaN", "train --resume {ws}/config_nan", "NaN is not a JSON number"),
    ("train --resume config.json epochs text", "train --resume {ws}/config_epochs_text", "'config.epochs'"),
    ("plot curves config.json a list", "plot curves {ws}/config_list --out {ws}/c.png", "no schema_version/results"),
    # --- history.jsonl: every damaged line refused with its number before resume writes anything
    ("train --resume history type", "train --resume {ws}/history_type", "'epoch' in line 2"),
    ("train --resume history garbage", "train --resume {ws}/history_garbage", "line 2 of"),
    ("train --resume history order", "train --resume {ws}/history_order", "records epoch 2 first"),
    ("train --resume history gap", "train --resume {ws}/history_gap", "records epoch 2 first"),
    ("train --resume history NaN", "train --resume {ws}/history_nan", "line 2 of"),
    ("train --resume history list", "train --resume {ws}/history_list", "line 2 of"),
    ("train --resume history not UTF-8", "train --resume {ws}/history_latin1", "line 2 of"),
    # --- formats of other frameworks' outputs
    *_each("csv row of another width", "{ws}/ragged.csv", "line 3 of",
           ("evaluate", "calibrate --val", "ood --in-preds")),
    *_each("csv text score", "{ws}/text.csv", "to be numbers, got 'high'", ("evaluate", "ood --out-preds")),
    *_each("csv header only", "{ws}/header_only.csv", "only a header", ("evaluate", "calibrate test")),
    *_each("csv empty", "{ws}/empty.csv", "empty", ("evaluate", "ood --in-preds")),
    ("evaluate: csv of one column", "evaluate {ws}/one_column.csv", "got 1 column(s)"),
    ("evaluate: csv unknown class name", "evaluate {ws}/zebra.csv", "'zebra' is not"),
    ("evaluate: csv not UTF-8", "evaluate {ws}/latin1.csv", "UTF-8"),
    ("evaluate: csv --labels-key not a column", "evaluate {ws}/zebra.csv --labels-key truth",
     "column named 'truth' (--labels-key)"),
    *_each("string labels without classes", "{ws}/strings_no_classes.npz", "add a 'classes' array",
           ("evaluate", "calibrate --val")),
    ("evaluate: string label not a class", "evaluate {ws}/strings_unknown.npz", "'zz' is not"),
    ("evaluate: classes of another count", "evaluate {ws}/classes_short.npz", "to name the 10 classes, got 3"),
    ("evaluate: npy without labels", "evaluate {ws}/scores.npy", "give --labels FILE"),
    ("calibrate --val: npy without labels", "calibrate {preds} --val {ws}/scores.npy", "give --labels FILE"),
    ("evaluate --labels: too few", "evaluate {ws}/scores.npy --labels {ws}/labels_short.npy", "entries"),
    ("evaluate --labels: 2-D", "evaluate {ws}/scores.npy --labels {ws}/labels_2d.npy", "1-D"),
    ("evaluate --labels: missing", "evaluate {ws}/scores.npy --labels {ws}/nope.npy", "does not exist"),
    ("evaluate --labels: no labels key", "evaluate {ws}/scores.npy --labels {ws}/weird_keys.npz",
     "to contain labels or targets or y"),
    ("evaluate: binary scores with 10 labels", "evaluate {ws}/binary_k10.npz",
     "one score per sample is read as a binary"),
    ("ood: binary in, 10-class out", "ood --in-preds {ws}/binary_k10.npz --out-preds {preds}",
     "same number of classes"),
    ("evaluate: rounded probabilities", "evaluate {ws}/rounded.npz",
     "whose rows sum to 1, as its name says, got values in [0, 1]"),
    ("evaluate: damaged safetensors", "evaluate {ws}/bad.safetensors",
     "bad.safetensors to be JSON, but it could not be parsed"),
    ("calibrate: percentages", "calibrate {ws}/percent.npz --val {ws}/percent.npz",
     "percentages it seems: pass --renormalize"),
    ("evaluate: --renormalize on logits", "evaluate {preds} --renormalize", "for --renormalize"),
    ("ood: --renormalize on logits", "ood --in-preds {preds} --out-preds {preds} --renormalize", "for --renormalize"),
    ("evaluate: --logits-key missing", "evaluate {ws}/weird_keys.npz --logits-key scores", "'scores' (--logits-key)"),
    ("evaluate: --labels-key missing", "evaluate {ws}/weird_keys.npz --logits-key out --labels-key y",
     "'y' (--labels-key)"),
    ("evaluate: --logits-key with an .npy", "evaluate {ws}/scores.npy --logits-key x",
     "only with a file of named arrays"),
    ("ood: --logits-key with a .csv", "ood --in-preds {ws}/zebra.csv --out-preds {preds} --logits-key x",
     "only with a file of named arrays"),
    ("evaluate: --logits-key empty", "evaluate {preds} --logits-key ''", "--logits-key to be a key name"),
    ("ood: --logits-key missing", "ood --in-preds {ws}/weird_keys.npz --out-preds {preds} --logits-key z",
     "'z' (--logits-key)"),
    ("calibrate: --logits-key missing in a split file", "calibrate {split} --logits-key z", "val_logits"),
    ("evaluate: pt list of one", "evaluate {ws}/list1.pt", "which holds one tensor of scores: give --labels FILE"),
    ("evaluate: pt string", "evaluate {ws}/string.pt", "got a str"),
    ("evaluate: a pickle", "evaluate {ws}/preds.pkl", "Refusing to read preds.pkl: loading a pickle can run code"),
    ("evaluate: unknown extension", "evaluate {ws}/preds.xlsx",
     "ending in .npz or .pt (or .npy, .txt, .safetensors, .mat, .csv, .tsv, .json, .jsonl; the text ones also .gz)"),
    ("evaluate: a data frame format", "evaluate {ws}/preds.xlsx", "got preds.xlsx; convert it with pandas: df.to_csv"),
    ("calibrate: HDF5", "calibrate {preds} --val {ws}/preds.h5", "got preds.h5; convert it with h5py: np.savez"),
    ("ood: a model file", "ood --in-preds {ws}/model.ckpt --out-preds {preds}",
     "a model file of another framework, which adacal cannot run: save the model's outputs"),
    ("evaluate: --labels with a run", "evaluate {run} --labels {ws}/labels_short.npy",
     "--labels only with a predictions file"),
    ("evaluate: --logits-key with a checkpoint", "evaluate {ckpt} --logits-key x",
     "--logits-key only with a predictions"),
    ("calibrate: --val with a run", "calibrate {run} --val {preds}", "--val only with a predictions file"),
    ("calibrate: --val of other classes", "calibrate {preds} --val {ws}/val_k3.npz", "same number of classes"),
    ("calibrate: --labels with a split file", "calibrate {split} --labels {ws}/labels_short.npy",
     "--labels only with --val"),
    ("ood: --logits-key with --model", "ood --model {run} --in digits --out digits --logits-key x",
     "only with --in-preds/--out-preds"),
]




def test_the_table_is_large_and_covers_every_reading_command():
    assert len(CASES) >= 170 and len({case[0] for case in CASES}) == len(CASES)
    assert {argv.split()[0] for _, argv, _ in CASES} == {"train", "evaluate", "calibrate", "ood", "plot"}


@pytest.mark.parametrize("argv, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_source_fails_in_one_line_and_touches_nothing(base, tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", MEMORY_LIMIT)
    names = {key: value for key, value in base.items() if isinstance(value, Path)}
    args = [part.format(**names) for part in argv.split()]
    args = ["" if part == "''" else part for part in args]
    before = snapshot(tmp_path, base["root"])

    result = runner.invoke(app, args)

    one_line_error(result, expected)
    assert snapshot(tmp_path, base["root"]) == before
