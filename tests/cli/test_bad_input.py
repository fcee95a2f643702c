"""Bad input to every command, in one table: each case must fail with a non-zero exit, exactly one `Error:` line on
stderr naming the problem, no traceback, and no file created or modified anywhere in the working folder (the run
folder and reports the fixtures made included).

Each case is (command line, distinctive substring of the error). A command line is built from placeholders filled in
per test: {run} a trained digits/mlp/adafocal run folder, {preds} an .npz with logits/labels, {split} one with
val_/test_ arrays, {evaluate_json}, {ood_json}, {calibrate_json}, {calibrator_json} reports of each kind, and {ws}
a folder of malformed files (`_bad_files`). All are built once; every command runs in its own empty working folder,
and the snapshot covers that folder and everything the fixtures built.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot, write_prediction_files

K = 10


# ------------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def base(tmp_path_factory, train_tiny_run):
    """One tiny trained run and a report of each kind, built once (about a second)."""
    from adacal.calibrators import build_calibrator, save_calibrator
    from adacal.ood import detect_ood, ood_report
    from adacal.reports import write_json

    root = tmp_path_factory.mktemp("bad-input")
    run = train_tiny_run(root)
    split = write_prediction_files(root, run)
    calibrator = build_calibrator("temperature").fit(split["val_logits"], split["val_labels"])
    save_calibrator(calibrator, root / "calibrator.json")
    results = detect_ood(split["test_logits"], split["val_logits"], temperature=1.5)
    write_json(root / "ood.json", ood_report(results, config={"in": "digits", "out": "digits-val"}))
    assert runner.invoke(app, ["calibrate", str(root / "split.npz"), "--json", str(root / "calibrate.json"),
                               "--quiet"]).exit_code == 0
    base = {
        "root": root,
        "run": run,
        "preds": root / "preds.npz",
        "split": root / "split.npz",
        "evaluate_json": run / "evaluate.json",
        "ood_json": root / "ood.json",
        "calibrate_json": root / "calibrate.json",
        "calibrator_json": root / "calibrator.json",
        "arrays": split,
        "ws": root / "bad",
    }
    base["ws"].mkdir()
    _bad_files(base["ws"], base)
    return base


def _npz(path: Path, **arrays) -> None:
    np.savez(path, **arrays)


def _bad_files(ws: Path, base: dict) -> None:
    """Every malformed file the table refers to, written into the working folder before its snapshot."""
    a = base["arrays"]
    logits, labels = a["test_logits"], a["test_labels"]
    good = {"logits": logits, "labels": labels}
    (ws / "empty.npz").write_bytes(b"")
    data = base["preds"].read_bytes()
    (ws / "truncated.npz").write_bytes(data[: len(data) // 2])
    (ws / "preds.csv").write_text("a,b,label\n0.1,0.9,1\n0.2,0\n")  # ragged: a row lacks a column
    (ws / "notes.pt").write_text("these are notes, not a torch file\n")
    _npz(ws / "wrong_keys.npz", out=logits, gt=labels)
    _npz(ws / "flat.npz", logits=logits[:, 0], labels=labels)
    _npz(ws / "nan.npz", **{**good, "logits": np.where(np.arange(K) == 3, np.nan, logits)})
    _npz(ws / "nan_split.npz", **{**a, "val_logits": np.where(np.arange(K) == 3, np.nan, a["val_logits"])})
    _npz(ws / "inf.npz", **{**good, "logits": np.where(np.arange(K) == 3, np.inf, logits)})
    _npz(ws / "label_range.npz", **{**good, "labels": np.where(labels == 0, K, labels)})
    _npz(ws / "negative_labels.npz", **{**good, "labels": labels - 1})
    _npz(ws / "float_labels.npz", **{**good, "labels": labels + 0.5})
    _npz(ws / "text_logits.npz", **{**good, "logits": logits.astype(str)})
    _npz(ws / "bool_logits.npz", **{**good, "logits": logits > 0})
    _npz(ws / "short_labels.npz", **{**good, "labels": labels[:-3]})
    _npz(ws / "k1.npz", logits=logits[:, :1], labels=labels)  # one column: a binary model's, but 10 classes' labels
    _npz(ws / "k3.npz", logits=logits[:, :3], labels=labels % 3)
    _npz(ws / "n0.npz", logits=np.zeros((0, K), np.float32), labels=np.zeros(0, np.int64))
    _npz(ws / "labels_2d.npz", **{**good, "labels": labels[:, None, None]})
    np.save(ws / "object.npy", np.array([1]))  # not an npz at all
    with open(ws / "object.npz", "wb") as handle:  # an object array: would need pickle to load
        np.savez(handle, logits=np.array([{"a": 1}] * 3, dtype=object), labels=np.zeros(3, np.int64))
    torch.save([torch.zeros(3, K)], ws / "list.pt")
    torch.save({"logits": torch.zeros(4, K), "labels": torch.tensor([0, 1, 2, 3])}, ws / "zeros_ok.pt")
    _npz(ws / "test_only.npz", test_logits=a["test_logits"], test_labels=a["test_labels"])
    _npz(ws / "k_split.npz", val_logits=a["val_logits"][:, :3], val_labels=a["val_labels"] % 3,
         test_logits=a["test_logits"], test_labels=a["test_labels"])
    _npz(ws / "out_k3.npz", logits=logits[:, :3])
    _npz(ws / "images32.npz", x=np.zeros((6, 32, 32, 3), np.uint8))
    (ws / "broken.json").write_text('{"schema_version": 1, "kind": "calib')
    (ws / "not_a_report.json").write_text('{"hello": "world"}\n')
    (ws / "plain_folder").mkdir()
    (ws / "a_file").write_text("in the way\n")
    # A tiny CIFAR-10-shaped data folder (a model trained on 8x8 digits cannot take its 32x32 images).
    (ws / "data").mkdir()
    rng = np.random.default_rng(0)
    _npz(ws / "data" / "cifar10.npz", train_x=rng.integers(0, 255, (20, 32, 32, 3), dtype=np.uint8),
         train_y=np.arange(20) % 10, test_x=rng.integers(0, 255, (10, 32, 32, 3), dtype=np.uint8),
         test_y=np.arange(10), classes=np.array([f"c{i}" for i in range(10)]))
    (ws / "wrongdata").mkdir()
    _npz(ws / "wrongdata" / "cifar10.npz", images=np.zeros((2, 32, 32, 3), np.uint8))
    # Checkpoints: damaged copies, and well-formed ones that do not fit what they are used with.
    checkpoint = base["run"] / "checkpoints" / "last.pt"
    data = checkpoint.read_bytes()
    (ws / "empty.pt").write_bytes(b"")
    (ws / "truncated.pt").write_bytes(data[: len(data) // 3])
    loaded = torch.load(checkpoint, weights_only=True)
    torch.save({**loaded, "format_version": 99}, ws / "future.pt")
    torch.save({**loaded, "config": {**loaded["config"], "data_dir": 5, "seed": "zero"}}, ws / "odd_config.pt")
    torch.save({**loaded, "num_classes": 3}, ws / "k_mismatch.pt")
    torch.save({**loaded, "model_name": "no-such-net"}, ws / "unknown_model.pt")
    torch.save({**loaded, "input_shape": ["sixty-four"]}, ws / "bad_shape.pt")
    # Run folders that are copies of the trained run with one thing wrong.
    for name in ("run_truncated_preds", "run_partial_history", "run_ce", "run_odd_config"):
        shutil.copytree(base["run"], ws / name)
    shutil.copy(ws / "odd_config.pt", ws / "run_odd_config" / "checkpoints" / "last.pt")
    (ws / "run_truncated_preds" / "predictions.npz").write_bytes(
        (base["run"] / "predictions.npz").read_bytes()[:200])
    with open(ws / "run_partial_history" / "history.jsonl", "a") as handle:
        handle.write('{"epoch": 2, "lr": 0.1, "train": {"lo')
    config = json.loads((ws / "run_ce" / "config.json").read_text())
    config["config"]["loss"] = "ce"
    (ws / "run_ce" / "config.json").write_text(json.dumps(config))
    calibrate = json.loads(base["calibrate_json"].read_text())
    calibrate["results"]["best"] = "../../outside"
    calibrate["results"]["calibrators"]["../../outside"] = {
        "params": {}, "calibrator": {"method": "../../outside", "format_version": 1, "options": {}, "params": {},
                                     "num_classes": K}}
    (ws / "calibrate_elsewhere.json").write_text(json.dumps(calibrate))


# ------------------------------------------------------------------------------------------------------ the table
# (id, argv, distinctive substring of the one error line)

CASES = [
    # --- train: names, numbers, output folder, resume
    ("train unknown dataset", "train --dataset cifar1", "Did you mean 'cifar10'?"),
    ("train unknown model", "train --model resnet21", "Did you mean 'resnet20'?"),
    ("train unknown loss", "train --loss adafocla", "Did you mean 'adafocal'?"),
    ("train unknown optimizer", "train --optimizer adamm", "Did you mean 'adam"),
    ("train unknown preset", "train --preset papr", "Did you mean 'paper'?"),
    ("train negative epochs", "train --epochs -3", "Expected --epochs to be a positive integer, got -3."),
    ("train gamma-max below gamma-min", "train --gamma-max 1 --gamma-min 2",
     "--gamma-max to be greater than --gamma-min"),
    ("train switch-threshold zero", "train --switch-threshold 0", "--switch-threshold"),
    ("train switch-threshold negative", "train --switch-threshold -0.5", "--switch-threshold"),
    ("train num-bins zero", "train --num-bins 0", "--num-bins"),
    ("train negative lr", "train --lr -0.1", "--lr"),
    ("train nan lr", "train --lr nan", "--lr"),
    ("train batch-size zero", "train --batch-size 0", "--batch-size"),
    ("train train-subset zero", "train --train-subset 0", "--train-subset"),
    ("train smoothing out of range", "train --loss label-smoothing --smoothing 1.5", "--smoothing"),
    ("train bad milestones", "train --milestones 5,x", "--milestones"),
    ("train bad update-every", "train --update-every sometimes", "--update-every"),
    ("train update-every epoch 0", "train --update-every epoch:0,1", "epochs in --update-every to be positive"),
    ("train unknown device", "train --device tpu", "--device"),
    ("train epochs not a number", "train --epochs ten", "--epochs"),
    ("train model for other inputs", "train --dataset digits --model resnet20", "resnet20"),
    ("train dataset file with wrong keys", "train --dataset cifar10 --data-dir {ws}/wrongdata", "cifar10.npz"),
    ("train out is a file", "train --out {ws}/a_file", "is a file"),
    ("train resume other model", "train --resume {run} --model resnet20", "--model 'resnet20' conflicts"),
    ("train resume odd options", "train --resume {ws}/run_odd_config", "--seed"),
    ("train resume missing", "train --resume {ws}/no_such_run", "does not exist"),
    ("train resume empty checkpoint", "train --resume {ws}/empty.pt", "truncated or corrupt"),
    ("train resume truncated checkpoint", "train --resume {ws}/truncated.pt", "truncated or corrupt"),
    ("train resume not a checkpoint", "train --resume {ws}/notes.pt", "notes.pt"),
    ("train resume future format", "train --resume {ws}/future.pt", "format_version"),
    ("train resume a plain folder", "train --resume {ws}/plain_folder", "has none"),
    # --- evaluate: files, arrays, options, calibrators
    ("evaluate missing file", "evaluate {ws}/missing.npz", "does not exist"),
    ("evaluate empty file", "evaluate {ws}/empty.npz", "readable .npz"),
    ("evaluate truncated npz", "evaluate {ws}/truncated.npz", "readable .npz"),
    ("evaluate ragged csv", "evaluate {ws}/preds.csv", "line 3 of"),
    ("evaluate npy without labels", "evaluate {ws}/object.npy", "give --labels FILE"),
    ("evaluate a report", "evaluate {ood_json}", "is an adacal 'ood' report (results, not per-sample scores)"),
    ("evaluate wrong keys", "evaluate {ws}/wrong_keys.npz", "to contain logits or test_logits"),
    ("evaluate 1-D logits", "evaluate {ws}/flat.npz", "2-D"),
    ("evaluate NaN", "evaluate {ws}/nan.npz", "finite"),
    ("evaluate Inf", "evaluate {ws}/inf.npz", "finite"),
    ("evaluate label out of range", "evaluate {ws}/label_range.npz", "in [0, 9]"),
    ("evaluate negative label", "evaluate {ws}/negative_labels.npz", "in [0, 9]"),
    ("evaluate float labels", "evaluate {ws}/float_labels.npz", "integers"),
    ("evaluate 2-D labels", "evaluate {ws}/labels_2d.npz", "1-D"),
    ("evaluate text logits", "evaluate {ws}/text_logits.npz", "numeric"),
    ("evaluate bool logits", "evaluate {ws}/bool_logits.npz", "numeric"),
    ("evaluate N mismatch", "evaluate {ws}/short_labels.npz", "entries"),
    ("evaluate one column", "evaluate {ws}/k1.npz", "one score per sample is read as a binary model"),
    ("evaluate no samples", "evaluate {ws}/n0.npz", "at least one sample"),
    ("evaluate object array", "evaluate {ws}/object.npz", "readable .npz"),
    ("evaluate pt list", "evaluate {ws}/list.pt", "holds one tensor of scores: give --labels FILE"),
    ("evaluate not a torch file", "evaluate {ws}/notes.pt", "notes.pt"),
    ("evaluate folder not a run", "evaluate {ws}/plain_folder", "config.json"),
    ("evaluate n-bins zero", "evaluate {preds} --n-bins 0", "Expected --n-bins to be a positive integer, got 0."),
    ("evaluate unknown metric", "evaluate {preds} --metrics ece-em,ece-eww", "Did you mean 'ece-ew'?"),
    ("evaluate negative bootstrap", "evaluate {preds} --bootstrap -1", "--bootstrap"),
    ("evaluate calibrator is an ood report", "evaluate {preds} --calibrator {ood_json}",
     "kind 'calibrator', got one of kind 'ood'"),
    ("evaluate calibrator is a calibrate report", "evaluate {preds} --calibrator {calibrate_json}",
     "kind 'calibrator', got one of kind 'calibrate'"),
    ("evaluate calibrator broken json", "evaluate {preds} --calibrator {ws}/broken.json", "could not be parsed"),
    ("evaluate calibrator not a report", "evaluate {preds} --calibrator {ws}/not_a_report.json", "schema_version"),
    ("evaluate calibrator K mismatch", "evaluate {ws}/k3.npz --calibrator {calibrator_json}", "10 classes"),
    ("evaluate checkpoint future format", "evaluate {ws}/future.pt", "format_version"),
    ("evaluate checkpoint odd config", "evaluate {ws}/odd_config.pt", "odd_config.pt"),
    ("evaluate checkpoint K mismatch", "evaluate {ws}/k_mismatch.pt", "fit model 'mlp'"),
    ("evaluate checkpoint unknown model", "evaluate {ws}/unknown_model.pt", "Unknown model 'no-such-net'"),
    # --- calibrate
    ("calibrate unknown method", "calibrate {split} --method temprature", "Did you mean 'temperature'?"),
    ("calibrate unknown objective", "calibrate {split} --objective ece-xm", "Did you mean 'ece-em'?"),
    ("calibrate n-bins zero", "calibrate {split} --n-bins 0", "Expected --n-bins to be a positive integer, got 0."),
    ("calibrate no validation split", "calibrate {ws}/test_only.npz", "validation predictions"),
    ("calibrate K differs val/test", "calibrate {ws}/k_split.npz", "same number of classes"),
    ("calibrate json is a folder", "calibrate {split} --json {ws}/plain_folder", "--json to be a file path"),
    ("calibrate save is a folder", "calibrate {split} --save {ws}/plain_folder", "--save to be a file path"),
    ("calibrate run with truncated predictions", "calibrate {ws}/run_truncated_preds", "readable .npz"),
    ("calibrate missing", "calibrate {ws}/missing.npz", "does not exist"),
    ("calibrate NaN", "calibrate {ws}/nan_split.npz", "val_logits to be finite"),
    ("calibrate plain predictions", "calibrate {preds}", "to hold val_logits, val_labels, test_logits and test_labels"),
    # --- ood
    ("ood unknown score", "ood --in-preds {split} --out-preds {preds} --scores entropyy", "Did you mean 'entropy'?"),
    ("ood unknown in dataset", "ood --model {run} --in cifar1 --out svhn", "Did you mean 'cifar10'?"),
    ("ood unknown out dataset", "ood --model {run} --in digits --out svhnn", "Did you mean 'svhn'?"),
    ("ood unknown corruption", "ood --model {run} --in digits --out cifar10-c --corruption gausian_noise",
     "Did you mean 'gaussian_noise'?"),
    ("ood zero temperature", "ood --in-preds {split} --out-preds {preds} --temperature 0", "--temperature"),
    ("ood severity out of range", "ood --model {run} --in digits --out cifar10-c --severity 7", "--severity"),
    ("ood only in-preds", "ood --in-preds {split}", "both --in-preds and --out-preds"),
    ("ood K mismatch", "ood --in-preds {split} --out-preds {ws}/out_k3.npz", "same number of classes"),
    ("ood NaN logits", "ood --in-preds {split} --out-preds {ws}/nan.npz", "finite"),
    ("ood OOD images of another shape", "ood --model {run} --in digits --out {ws}/images32.npz",
     "to be feature vectors of shape (N, 64) like the model's input, got uint8 of shape (6, 32, 32, 3)"),
    ("ood in-distribution of another shape", "ood --model {run} --in cifar10 --out digits --data-dir {ws}/data",
     "Expected in-distribution inputs of shape (64,) like the model's input, got (3, 32, 32) (cifar10)"),
    ("ood truncated checkpoint", "ood --model {ws}/truncated.pt --in digits --out digits", "truncated or corrupt"),
    ("ood checkpoint odd config", "ood --model {ws}/odd_config.pt --in digits --out digits", "odd_config.pt"),
    ("ood checkpoint bad shape", "ood --model {ws}/bad_shape.pt --in digits --out digits", "'input_shape'"),
    ("ood both temperatures", "ood --in-preds {split} --out-preds {preds} --temperature 2 --fit-temperature",
     "not both"),
    ("ood nothing to score", "ood", "Expected --model"),
    ("ood batch-size zero", "ood --model {run} --in digits --out digits --batch-size 0", "--batch-size"),
    ("ood limit zero", "ood --model {run} --in digits --out digits --limit 0", "--limit"),
    # --- plot
    ("plot roc of an evaluate report", "plot roc {evaluate_json} --out {ws}/roc.png",
     "kind 'ood', got one of kind 'evaluate'"),
    ("plot reliability of an ood report", "plot reliability {ood_json} --out {ws}/r.png",
     "kind 'evaluate', got one of kind 'ood'"),
    ("plot reliability binning typo", "plot reliability {preds} --binning equal-mas --out {ws}/r.png",
     "Did you mean 'equal-mass'?"),
    ("plot reliability bands typo", "plot reliability {preds} --bands consistncy --out {ws}/r.png",
     "Did you mean 'consistency'?"),
    ("plot reliability calibrated by an evaluate report",
     "plot reliability {preds} --calibrated {evaluate_json} --out {ws}/r.png",
     "kind 'calibrate', got one of kind 'evaluate'"),
    ("plot reliability calibrator named like a path",
     "plot reliability {preds} --calibrated {ws}/calibrate_elsewhere.json --out {ws}/r.png",
     "Unknown calibrator '../../outside'"),
    ("plot unknown binning", "plot reliability {preds} --binning equal-mas --out {ws}/r.png", "--binning"),
    ("plot n-bins zero", "plot reliability {preds} --n-bins 0 --out {ws}/r.png", "--n-bins"),
    ("plot bin out of range", "plot gamma {run} --bins 99 --out {ws}/g.png", "got 99"),
    ("plot bad extension", "plot reliability {preds} --out {ws}/r.jpg", ".png, .svg or .pdf"),
    ("plot dpi zero", "plot reliability {preds} --dpi 0 --out {ws}/r.png", "--dpi"),
    ("plot roc unknown score", "plot roc {ood_json} --score energi --out {ws}/roc.png", "energi"),
    ("plot curves of a plain folder", "plot curves {ws}/plain_folder --out {ws}/c.png", "config.json"),
    ("plot roc truncated report", "plot roc {ws}/broken.json --out {ws}/roc.png", "could not be parsed"),
    ("plot gamma partial history", "plot gamma {ws}/run_partial_history --out {ws}/g.png", "line 2"),
    ("plot gamma of a ce run", "plot gamma {ws}/run_ce --out {ws}/g.png", "needs an adafocal run"),
    ("plot labels count", "plot reliability {preds} --labels a,b --out {ws}/r.png", "--labels"),
    ("plot reliability truncated npz", "plot reliability {ws}/truncated.npz --out {ws}/r.png", "readable .npz"),
]




def test_the_table_is_large_and_covers_every_command():
    assert len(CASES) >= 40 and len({case[0] for case in CASES}) == len(CASES)
    commands = {argv.split()[0] for _, argv, _ in CASES}
    assert commands == {"train", "evaluate", "calibrate", "ood", "plot"}


@pytest.mark.parametrize("argv, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_fails_in_one_line_and_touches_nothing(base, tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)  # the working folder: commands that default to ./runs would write here
    names = {key: value for key, value in base.items() if isinstance(value, Path)}
    args = [part.format(**names) for part in argv.split()]
    before = snapshot(tmp_path, base["root"])

    result = runner.invoke(app, args)

    one_line_error(result, expected)
    assert snapshot(tmp_path, base["root"]) == before
