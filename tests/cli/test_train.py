"""`adacal train` end to end on tiny data: the run folder, exact resume, one-line errors, refusing pickled
checkpoints, SIGTERM, a CIFAR-10 slice (data-parallel training on two CPU processes is in test_train_ddp.py)."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import adacal
from adacal.cli import app
from adacal.runs import RUN_ID_KEY

from cli_helpers import one_line_error, runner

REPO = Path(adacal.__file__).resolve().parents[1]
TINY = ["--device", "cpu", "--train-subset", "320", "--batch-size", "32"]
EXACT = [*TINY, "--optimizer", "sgd", "--lr", "0.05", "--milestones", "3", "--seed", "3"]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _only_run(out: Path) -> Path:
    runs = list(out.iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def _train(*args: str):
    return runner.invoke(app, ["train", *args])


def _history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def test_train_writes_a_complete_run_folder(tmp_path):
    result = _train("--epochs", "2", "--out", str(tmp_path), *TINY)
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path)
    assert run.name.endswith("-digits-mlp-adafocal")
    assert "epoch 2/2" in result.stdout and "Test metrics" in result.stdout and str(run) in result.stdout

    config = json.loads((run / "config.json").read_text())
    assert config["kind"] == "train-config" and config["config"]["seed"] == 0 and config["config"]["epochs"] == 2
    assert set(config["results"]["versions"]) == {"adacal", "torch", "numpy", "python"}
    assert config["results"]["split"]["sizes"]["train"] == 320

    history = _history(run)
    assert [h["epoch"] for h in history] == [1, 2]
    for line in history:
        assert set(line["train"]) == {"loss", "accuracy"} and set(line["val"]) == {"error", "nll", "ece_em", "ece_ew"}
        ada = line["adafocal"]
        assert len(ada["train_confidence"]) == len(ada["train_counts"]) == 15 and sum(ada["train_counts"]) == 320
        (update,) = ada["updates"]
        assert set(update) == {"edges", "gammas", "val_confidence", "val_accuracy", "counts"}
        assert len(update["gammas"]) == 15 and len(update["edges"]) == 16

    checkpoint = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert checkpoint["format"] == "adacal-checkpoint" and checkpoint["epoch"] == 2
    assert checkpoint["loss_state"]["gammas"].tolist() == history[-1]["adafocal"]["updates"][0]["gammas"]
    assert (run / "checkpoints" / "best.pt").is_file()

    with np.load(run / "predictions.npz") as arrays:
        assert arrays["val_logits"].dtype == np.float32 and arrays["test_labels"].dtype == np.int64
        assert arrays["val_logits"].shape == (360, 10) and arrays["test_logits"].shape == (360, 10)
    report = json.loads((run / "evaluate.json").read_text())
    assert report["kind"] == "evaluate" and {"error", "ece_em", "ece_ew", "nll"} <= set(report["results"]["metrics"])


def test_test_subset_scores_a_fixed_seeded_sample_of_n_test_samples(tmp_path):
    result = _train("--epochs", "1", "--out", str(tmp_path), "--test-subset", "50", "--quiet", *TINY)
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path)
    config = json.loads((run / "config.json").read_text())
    assert config["results"]["split"]["sizes"]["test"] == 50 and config["config"]["test_subset"] == 50
    from adacal.data import load_dataset

    expected = load_dataset("digits").limit_test(50).test.labels.numpy()
    with np.load(run / "predictions.npz") as arrays:
        assert arrays["test_logits"].shape == (50, 10) and arrays["val_logits"].shape == (360, 10)
        np.testing.assert_array_equal(arrays["test_labels"], expected)
    assert json.loads((run / "evaluate.json").read_text())["results"]["n_samples"] == 50
    assert _train("--test-subset", "0", "--out", str(tmp_path)).exit_code == 2


def test_resume_reproduces_an_uninterrupted_run_exactly(tmp_path):
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert _train("--epochs", "4", "--out", str(straight), "--quiet", *EXACT).exit_code == 0
    assert _train("--epochs", "2", "--out", str(split), "--quiet", *EXACT).exit_code == 0
    run = _only_run(split)
    resumed = _train("--resume", str(run), "--epochs", "4", "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip().splitlines()[-1] == str(run)
    a = torch.load(_only_run(straight) / "checkpoints" / "last.pt", weights_only=True)
    b = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert b["epoch"] == 4 and b["config"]["epochs"] == 4
    for key, value in a["model_state"].items():
        assert torch.equal(value, b["model_state"][key]), key
    assert torch.equal(a["loss_state"]["gammas"], b["loss_state"]["gammas"])
    assert a["scheduler_state"]["_last_lr"] == b["scheduler_state"]["_last_lr"]  # the milestone at 3 fired once
    drop = lambda lines: [{k: v for k, v in line.items() if k != "seconds"} for line in lines]  # noqa: E731
    assert drop(_history(_only_run(straight))) == drop(_history(run))
    results = [json.loads((r / "evaluate.json").read_text())["results"] for r in (_only_run(straight), run)]
    assert results[0] == results[1]
    resumes = json.loads((run / "config.json").read_text())["results"]["resumes"]
    assert resumes[0]["from_epoch"] == 2 and resumes[0]["epochs"] == 4


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--dataset", "cifar1"], "Unknown dataset 'cifar1'. Did you mean 'cifar10'?"),
        (["--model", "resnet21"], "Unknown model 'resnet21'. Did you mean 'resnet20'?"),
        (["--model", "resnet21"], "Any torchvision classifier works as torchvision:<name>."),
        (["--model", "torchvision:resnet5"], "Unknown torchvision model 'resnet5'. Did you mean 'resnet50'?"),
        (["--loss", "adafocla"], "Unknown loss 'adafocla'. Did you mean 'adafocal'?"),
        (["--loss", "ce", "--gamma", "2"], "--gamma does not apply to --loss ce"),
        (["--epochs", "0"], "Expected --epochs to be a positive integer, got 0."),
        (["--milestones", "5,x"], "Expected --milestones to be comma-separated epoch numbers"),
        (["--update-every", "sometimes"], "--update-every"),
        (["--gamma-max", "-5"], "--gamma-max to be greater than --gamma-min"),
    ],
)
def test_bad_options_fail_in_one_line_before_training(tmp_path, args, expected):
    line = one_line_error(_train("--out", str(tmp_path / "runs"), *args))
    assert expected in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_resume_refuses_conflicting_options_and_pickled_checkpoints(tmp_path):
    assert _train("--epochs", "1", "--out", str(tmp_path / "runs"), "--quiet", *TINY).exit_code == 0
    run = _only_run(tmp_path / "runs")
    line = one_line_error(_train("--resume", str(run), "--epochs", "2", "--lr", "0.5"))
    assert "--lr 0.5 conflicts with the resumed run's" in line

    marker = tmp_path / "created-by-unpickling.txt"

    class CreatesAFile:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    torch.save({"format": "adacal-checkpoint", "format_version": 1, "payload": CreatesAFile()},
               run / "checkpoints" / "last.pt")
    line = one_line_error(_train("--resume", str(run), "--epochs", "2"))
    assert "Refusing to load" in line and "weights_only=True" in line
    assert not marker.exists()


def test_sigterm_stops_with_a_resume_hint_and_a_loadable_checkpoint(tmp_path):
    command = [sys.executable, "-m", "adacal", "train", "--epochs", "1000", "--out", str(tmp_path), *TINY]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in process.stdout:
            if line.startswith("epoch 1/"):
                process.send_signal(signal.SIGTERM)
                break
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "Interrupted " in stderr and "resume with: adacal train --resume" in stderr and "--epochs 1000" in stderr
    run = _only_run(tmp_path)
    checkpoint = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert checkpoint["epoch"] >= 1
    assert len(_history(run)) == checkpoint["epoch"]


INTERRUPT = ["--device", "cpu", "--train-subset", "64", "--batch-size", "32", "--optimizer", "sgd", "--lr", "0.05",
             "--milestones", "3", "--seed", "3", "--epochs", "5"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, one_torch_thread):
    out = tmp_path_factory.mktemp("uninterrupted")
    with one_torch_thread():
        assert _train(*INTERRUPT, "--out", str(out), "--quiet").exit_code == 0
    return _only_run(out)


def _signal_at_batch(signum: int, n: int) -> None:
    """Deliver `signum` to this process in the middle of the n-th training step."""
    from adacal.losses.adafocal import AdaFocalLoss

    forward, calls = AdaFocalLoss.forward, iter(range(1, 10**6))

    def patched(self, logits, labels):
        if self.training and next(calls) == n:
            os.kill(os.getpid(), signum)
        return forward(self, logits, labels)

    AdaFocalLoss.forward = patched


def _signal_in_checkpoint_write(signum: int, n: int) -> None:
    """Deliver `signum` while the n-th checkpoint is being written (the write itself then goes on)."""
    save, calls = torch.save, iter(range(1, 10**6))

    def patched(obj, f, *args, **kwargs):
        if next(calls) == n:
            os.kill(os.getpid(), signum)
        return save(obj, f, *args, **kwargs)

    torch.save = patched


def _cli_child(args, stderr_path, hook) -> None:
    """`adacal train ...` in a forked process (stdout discarded, stderr to a file) with a signal hook installed."""
    torch.set_num_threads(1)
    sys.stdout = open(os.devnull, "w")
    sys.stderr = open(stderr_path, "w", buffering=1)
    hook()
    app(args=args, prog_name="adacal")


@pytest.mark.parametrize(
    "where, signum",
    [("mid-batch", signal.SIGINT), ("mid-batch", signal.SIGTERM), ("checkpoint write", signal.SIGINT),
     ("checkpoint write", signal.SIGTERM)],
    ids=["ctrl-c mid-batch", "sigterm mid-batch", "ctrl-c during checkpoint write", "sigterm during checkpoint write"],
)
def test_interrupt_writes_a_checkpoint_and_the_printed_command_resumes_exactly(
    uninterrupted, tmp_path, where, signum
):
    """Ctrl-C / SIGTERM anywhere: exit 130, one stderr line with the resume command; a signal in a training step
    finishes the batch and saves checkpoints/interrupted.pt; a signal during a checkpoint write waits for the write to
    finish; running the printed command ends exactly as the uninterrupted run."""
    hook = (lambda: _signal_at_batch(signum, 5)) if where == "mid-batch" else (
        lambda: _signal_in_checkpoint_write(signum, 4))
    stderr = tmp_path / "stderr.txt"
    process = multiprocessing.get_context("fork").Process(
        target=_cli_child, args=(["train", *INTERRUPT, "--out", str(tmp_path / "runs")], stderr, hook))
    process.start()
    process.join(timeout=60)
    assert process.exitcode == 130, stderr.read_text()
    (line,) = stderr.read_text().strip().splitlines()
    run = _only_run(tmp_path / "runs")
    assert line.startswith("Interrupted ") and line.endswith(f"resume with: adacal train --resume {run} --epochs 5")
    checkpoint = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert len(_history(run)) == checkpoint["epoch"]
    # Batch 5 is the first of epoch 3; checkpoint write 4 is epoch 2's first (after epoch 0's, epoch 1's best and last):
    # the write finishes, so epoch 2 is complete and last.pt holds it (no interrupted.pt: nothing of epoch 3 to save).
    assert line.startswith("Interrupted at epoch 3 batch 1;" if where == "mid-batch" else
                           f"Interrupted after epoch 2; {run / 'checkpoints' / 'last.pt'} holds it; resume with:")
    assert checkpoint["epoch"] == 2
    assert not list(run.rglob("*.tmp"))
    # Mid-batch: the batch is finished and checkpoints/interrupted.pt saved, so the resumed run starts at batch 2.
    saved = run / "checkpoints" / "interrupted.pt"
    if where == "mid-batch":
        assert f"; saved {saved}; resume with:" in line
        partial = torch.load(saved, weights_only=True)["partial_epoch"]
        assert (partial["epoch"], partial["batch"]) == (3, 1)
    else:
        assert not saved.exists() and "saved" not in line

    resumed = _train(*line.split("resume with: adacal train ")[1].split(), "--quiet")
    assert resumed.exit_code == 0, resumed.output
    a = torch.load(uninterrupted / "checkpoints" / "last.pt", weights_only=True)
    b = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    for key, value in a["model_state"].items():
        assert torch.equal(value, b["model_state"][key]), key
    assert torch.equal(a["loss_state"]["gammas"], b["loss_state"]["gammas"])
    drop = lambda lines: [{k: v for k, v in line.items() if k != "seconds"} for line in lines]  # noqa: E731
    assert drop(_history(uninterrupted)) == drop(_history(run))
    assert not saved.exists()
    assert json.loads((uninterrupted / "evaluate.json").read_text())["results"] == json.loads(
        (run / "evaluate.json").read_text())["results"]
    with np.load(uninterrupted / "predictions.npz") as expected, np.load(run / "predictions.npz") as actual:
        assert expected.files == actual.files
        for key in expected.files:
            if key != RUN_ID_KEY:  # each run's own
                np.testing.assert_array_equal(expected[key], actual[key])


def test_resnet20_on_a_cifar10_slice(tmp_path, real_data_file):
    with np.load(real_data_file("cifar10.npz")) as full:
        # Images are sorted by class: a stride keeps every class.
        np.savez(
            tmp_path / "cifar10.npz", train_x=full["train_x"][::50], train_y=full["train_y"][::50],
            test_x=full["test_x"][::50], test_y=full["test_y"][::50], classes=full["classes"],
        )
    result = _train(
        "--dataset", "cifar10", "--data-dir", str(tmp_path), "--model", "resnet20", "--train-subset", "256",
        "--val-size", "200", "--epochs", "1", "--batch-size", "64", "--device", "cpu", "--out", str(tmp_path / "runs"),
    )
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path / "runs")
    assert run.name.endswith("-cifar10-resnet20-adafocal")
    with np.load(run / "predictions.npz") as arrays:
        assert arrays["test_logits"].shape == (200, 10) and arrays["val_logits"].shape == (200, 10)
    assert torch.load(run / "checkpoints" / "last.pt", weights_only=True)["input_shape"] == [3, 32, 32]


def _tiny_newsgroups(folder: Path) -> Path:
    import gzip

    words = ["space", "graphics", "atheism"]
    with gzip.open(folder / "20newsgroups.jsonl.gz", "wt", encoding="utf-8") as handle:
        for i in range(150):
            split, label = ("train" if i < 120 else "test"), i % 3
            text = f"Subject: post\n\ncommon {words[label]} topic word{i % 7} " * 3
            record = {"split": split, "label": label, "group": words[label], "id": i, "text": text}
            handle.write(json.dumps(record) + "\n")
    glove = folder / "glove.txt"
    glove.write_text("common 0.1 0.2 0.3 0.4 0.5 0.6 0.7\nspace 1 2 3 4 5 6 7\nnotinvocab 9 9 9 9 9 9 9\n")
    return glove


def test_embeddings_initialise_textcnn_from_a_glove_file(tmp_path):
    glove = _tiny_newsgroups(tmp_path)
    data = ["--dataset", "20newsgroups", "--data-dir", str(tmp_path), "--val-size", "20", "--device", "cpu"]
    result = _train(*data, "--embeddings", str(glove), "--epochs", "1", "--out", str(tmp_path / "runs"), "--quiet")
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path / "runs")
    assert json.loads((run / "config.json").read_text())["config"]["model_options"] == {"embeddings": str(glove)}
    checkpoint = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert checkpoint["model_name"] == "textcnn"
    assert checkpoint["model_state"]["embedding.weight"].shape[1] == 7  # the file's dimension, not the default 100

    glove.unlink()  # a resumed run and `adacal evaluate` take the weights from the checkpoint, not from the file
    resumed = _train("--resume", str(run), "--epochs", "2", "--quiet")
    assert resumed.exit_code == 0, resumed.output
    from adacal.training import predict_checkpoint

    assert predict_checkpoint(run, split="test", device="cpu").logits.shape == (30, 3)

    missing = one_line_error(_train(*data, "--embeddings", str(glove), "--out", str(tmp_path / "more")))
    assert f"Expected --embeddings to be a GloVe text file, but {glove} does not exist." in missing
    folder = one_line_error(_train(*data, "--embeddings", str(tmp_path), "--out", str(tmp_path / "more")))
    assert f"Expected --embeddings to be a GloVe text file, but {tmp_path} is a folder." in folder
    some_file = str(tmp_path / "20newsgroups.jsonl.gz")
    wrong = one_line_error(_train("--embeddings", some_file, "--out", str(tmp_path / "more")))
    assert "--embeddings applies to --model textcnn only, got --model mlp." in wrong
    assert not (tmp_path / "more").exists()


# ------------------------------------------------------------------------------------ run names, dry runs, one writer


def test_name_names_the_run_folder_and_a_taken_name_is_refused(tmp_path):
    out = tmp_path / "runs"
    result = _train("--epochs", "1", "--out", str(out), "--name", "ce", "--loss", "ce", "--quiet", *TINY)
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.iterdir()] == ["ce"] and (out / "ce" / "config.json").is_file()
    assert json.loads((out / "ce" / "config.json").read_text())["config"]["name"] == "ce"
    before = sorted(str(p) for p in out.rglob("*"))
    line = one_line_error(_train("--epochs", "1", "--out", str(out), "--name", "ce", "--quiet", *TINY))
    assert f"{out / 'ce'} already exists" in line and "--resume" in line
    assert sorted(str(p) for p in out.rglob("*")) == before
    line = one_line_error(_train("--resume", str(out / "ce"), "--epochs", "2", "--name", "other"))
    assert "--name names a new run folder" in line


def test_print_config_is_a_dry_run_with_everything_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _train("--print-config", "--loss", "adafocal", "--num-bins", "10", "--name", "af")
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert config["model"] == "mlp" and config["epochs"] == 30 and config["loss_reduction"] == "mean"
    assert config["loss_options"] == {"n_bins": 10, "lam": 1.0, "gamma_init": 1.0, "gamma_max": 20.0,
                                      "gamma_min": -2.0, "switch_threshold": 0.2}
    assert list(tmp_path.iterdir()) == []  # no folder, no file
    paper = json.loads(_train("--print-config", "--dataset", "cifar10", "--preset", "paper", "--loss", "focal").stdout)
    assert (paper["loss_reduction"], paper["grad_clip"], paper["lr"], paper["epochs"]) == ("sum", 2.0, 0.1, 350)
    assert paper["loss_options"] == {"gamma": 3.0}
    assert one_line_error(_train("--print-config", "--lr", "1e39")).startswith("Error: Expected --lr")
    assert list(tmp_path.iterdir()) == []


def test_config_json_records_the_resolved_loss_options_and_resume_accepts_them(tmp_path):
    out = tmp_path / "runs"
    assert _train("--epochs", "1", "--out", str(out), "--loss", "focal", "--gamma", "2", "--quiet",
                  *TINY).exit_code == 0
    run = _only_run(out)
    assert json.loads((run / "config.json").read_text())["config"]["loss_options"] == {"gamma": 2.0}
    assert _train("--epochs", "1", "--out", str(out), "--loss", "mmce", "--quiet", *TINY).exit_code == 0
    mmce = next(p for p in out.iterdir() if p.name.endswith("-mmce"))
    assert json.loads((mmce / "config.json").read_text())["config"]["loss_options"] == {"weight": 2.0}
    assert _train("--resume", str(run), "--epochs", "2", "--gamma", "2", "--quiet").exit_code == 0
    assert "conflicts" in one_line_error(_train("--resume", str(run), "--epochs", "3", "--gamma", "3"))


def test_help_shows_every_default_and_they_are_the_real_ones():
    import re

    from adacal.cli.train import DIGITS_DEFAULTS_HELP, LOSS_DEFAULTS_HELP, LOSS_FLAGS
    from adacal.training.config import COMMON_DEFAULTS, QUICK_PRESETS, resolved_loss_options

    digits = {**COMMON_DEFAULTS, **QUICK_PRESETS["digits"]}
    for key, text in DIGITS_DEFAULTS_HELP.items():
        value = digits[key]
        expected = (",".join(map(str, value)) if isinstance(value, tuple)
                    else f"{value:g}" if isinstance(value, float) else str(value))
        assert text == expected, key
    for flag, text in LOSS_DEFAULTS_HELP.items():
        option = LOSS_FLAGS[flag]
        for part in text.split(", "):
            loss, _, value = part.rpartition(" ")
            losses = [loss] if loss else [n for n in ("adafocal", "calfocal") if option in resolved_loss_options(n, {})]
            for name in losses:
                assert float(resolved_loss_options(name, {})[option]) == float(value), (flag, name)
    result = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert result.exit_code == 0
    options = re.findall(r"(--[a-z][a-z-]+)", result.stdout)
    assert "--loss-reduction" in options and "--name" in options and "--print-config" in options
    assert result.stdout.count("(default") >= 30


def test_two_resumes_of_one_run_started_apart_one_writer(tmp_path):
    """Two real processes resume the same run 0-1 s apart: the second is refused at once in one line (the run
    folder's lock), and history.jsonl keeps one line per epoch, in order."""
    out = tmp_path / "runs"
    assert _train("--epochs", "1", "--out", str(out), "--name", "r", "--quiet", *TINY).exit_code == 0
    run = out / "r"
    epochs = 16
    command = [sys.executable, "-m", "adacal", "train", "--resume", str(run), "--epochs", str(epochs), "--quiet"]
    delay = float(np.random.default_rng(7).uniform(0.0, 1.0))
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    import time

    time.sleep(delay)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    outcomes = []
    for process in (first, second):
        stdout, stderr = process.communicate(timeout=600)
        outcomes.append((process.returncode, stdout, stderr))
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(o for o in outcomes if o[0] == 2)
    assert refused[2].strip().splitlines() == [refused[2].strip()]
    assert "Expected no other 'adacal train' to be writing the run folder" in refused[2] and refused[1] == ""
    assert [record["epoch"] for record in _history(run)] == list(range(1, epochs + 1))
    config = json.loads((run / "config.json").read_text())
    assert len(config["results"]["resumes"]) == 1  # only the process that held the lock resumed


def test_n_bins_is_the_flag_and_num_bins_a_hidden_alias(tmp_path, monkeypatch):
    import re

    monkeypatch.chdir(tmp_path)
    help_text = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).stdout
    flags = re.findall(r"(--[a-z][a-z-]+)", help_text)
    assert "--n-bins" in flags and "--num-bins" not in flags
    printed = {}
    for args in (["--n-bins", "7"], ["--num-bins", "7"], ["--n-bins", "7", "--num-bins", "7"]):
        result = _train("--print-config", "--loss", "calfocal", *args)
        assert result.exit_code == 0, result.output
        printed[tuple(args)] = json.loads(result.stdout)["loss_options"]
    assert all(options == {"lam": 10.0, "n_bins": 7, "mode": "bin"} for options in printed.values()), printed
    assert "--n-bins and --num-bins" in one_line_error(_train("--print-config", "--n-bins", "7", "--num-bins", "8"))
    # Errors name the flag as typed.
    assert one_line_error(_train("--print-config", "--n-bins", "0")) == (
        "Error: Expected --n-bins to be a positive integer, got 0.")
    assert one_line_error(_train("--print-config", "--num-bins", "0")) == (
        "Error: Expected --num-bins to be a positive integer, got 0.")
    assert one_line_error(_train("--print-config", "--loss", "ce", "--num-bins", "4")).startswith(
        "Error: --num-bins does not apply to --loss ce")
    assert list(tmp_path.iterdir()) == []


def test_milestones_at_or_past_the_last_epoch_are_noted(tmp_path):
    """`--milestones 5,9 --epochs 2` (or --preset paper's 150, 250 with a short --epochs): the rate never drops in
    this run, which the user should hear about before it trains."""
    from adacal.training import TrainConfig
    from adacal.training.config import resolve_config, unreached_milestones

    result = _train("--epochs", "2", "--milestones", "1,5,9", "--out", str(tmp_path), "--test-subset", "50", *TINY)
    assert result.exit_code == 0, result.output
    assert ("Note: --milestones 5,9 are at or past the last epoch (2): the learning rate does not drop there in this "
            "run (a later --resume to more epochs reaches them).") in result.stderr
    assert unreached_milestones(resolve_config(TrainConfig(epochs=2, milestones=(1,)))) == []
    paper = resolve_config(TrainConfig(dataset="cifar10", preset="paper", epochs=30))
    assert (unreached_milestones(paper)
            and "150,250 are at or past the last epoch (30)" in unreached_milestones(paper)[0])


def test_an_update_schedule_longer_than_an_epoch_is_noted_before_training(tmp_path):
    """`--update-every N` counts batches within each epoch: with N above an epoch's batches γ never moves in those
    epochs (AdaFocal silently becomes focal loss with γ = 1 there)."""
    from adacal.training.update_schedule import idle_update_epochs

    assert idle_update_epochs("epoch:1,100:3,5", epochs=6, batches_per_epoch=7) == [
        "--update-every epoch:1,100:3,5 asks for more batches than an epoch has (7) in epochs 2-3: γ is not updated "
        "there (the count restarts every epoch); use at most 7, or 'epoch'"]
    assert idle_update_epochs("epoch", epochs=6, batches_per_epoch=7) == []
    assert idle_update_epochs(7, epochs=6, batches_per_epoch=7) == []
    assert "epochs 1-6:" in idle_update_epochs(8, epochs=6, batches_per_epoch=7)[0]
    result = _train("--epochs", "1", "--update-every", "1000", "--out", str(tmp_path), "--test-subset", "50", *TINY)
    assert result.exit_code == 0, result.output
    assert "Note: --update-every 1000 asks for more batches than an epoch has" in result.stderr
    ce = _train("--epochs", "1", "--loss", "ce", "--update-every", "1000", "--out", str(tmp_path), "--test-subset",
                "50", *TINY)
    assert ce.exit_code == 0 and "--update-every" not in ce.stderr  # CE learns nothing from validation


def test_a_run_that_fails_before_its_first_checkpoint_leaves_no_folder(tmp_path):
    """Grayscale CIFAR arrays load, then fail at the model's normalisation: the new run folder held only .lock (and
    with --name, the retry after fixing the data was refused as 'already exists')."""
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    np.savez(data / "cifar10.npz", train_x=rng.integers(0, 255, (100, 32, 32), dtype=np.uint8),
             train_y=np.arange(100) % 10, test_x=rng.integers(0, 255, (30, 32, 32), dtype=np.uint8),
             test_y=np.arange(30) % 10, classes=np.array([f"c{i}" for i in range(10)]))
    args = ("--dataset", "cifar10", "--data-dir", str(data), "--epochs", "1", "--train-subset", "64",
            "--test-subset", "20", "--batch-size", "32", "--out", str(tmp_path / "runs"), "--name", "gray")
    one_line_error(_train(*args), "3 channels")
    assert not (tmp_path / "runs" / "gray").exists()


def test_a_relative_data_dir_is_recorded_absolute(tmp_path, monkeypatch):
    """`ood --model RUN` and `evaluate RUN` read the recorded data folder from wherever they run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    result = _train("--epochs", "1", "--data-dir", "data", "--out", "runs", "--name", "rel", "--test-subset", "50",
                    *TINY)
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "runs" / "rel" / "config.json").read_text())["config"]
    assert config["data_dir"] == str(tmp_path / "data")


def test_validation_bins_too_small_to_measure_are_noted(tmp_path):
    result = _train("--epochs", "1", "--n-bins", "100", "--out", str(tmp_path), "--test-subset", "50", *TINY)
    assert result.exit_code == 0, result.output
    assert "validation samples in 100 bins leave fewer than 10 in each" in result.stderr
    default = _train("--epochs", "1", "--out", str(tmp_path), "--test-subset", "50", *TINY)
    assert "leave fewer than" not in default.stderr


def test_a_model_that_cannot_take_the_input_size_is_refused_before_any_folder(tmp_path):
    """torchvision's AlexNet pools 32x32 images to nothing: a traceback in the first batch, and a run folder with an
    epoch-0 checkpoint that then crashed evaluate, calibrate, ood and --resume alike."""
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    np.savez(data / "cifar10.npz", train_x=rng.integers(0, 255, (100, 32, 32, 3), dtype=np.uint8),
             train_y=np.arange(100) % 10, test_x=rng.integers(0, 255, (30, 32, 32, 3), dtype=np.uint8),
             test_y=np.arange(30) % 10, classes=np.array([f"c{i}" for i in range(10)]))
    result = _train("--dataset", "cifar10", "--data-dir", str(data), "--model", "torchvision:alexnet", "--epochs", "1",
                    "--train-subset", "64", "--test-subset", "20", "--out", str(tmp_path / "runs"), "--name", "ax")
    one_line_error(result, "Expected model torchvision:alexnet to take cifar10's inputs of shape (3, 32, 32), but its "
                           "forward pass fails")
    assert not (tmp_path / "runs" / "ax").exists()


def test_word_vectors_that_cover_little_of_the_vocabulary_are_noted(tmp_path):
    _tiny_newsgroups(tmp_path)
    elsewhere = tmp_path / "other.txt"
    elsewhere.write_text("zzz 0.1 0.2 0.3\nyyy 1 2 3\n")  # another language's file, say: no word matches
    data = ["--dataset", "20newsgroups", "--data-dir", str(tmp_path), "--val-size", "20", "--device", "cpu"]
    result = _train(*data, "--embeddings", str(elsewhere), "--epochs", "1", "--out", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert "holds 0 % of the vocabulary's words: the others start random (no word matched" in result.stderr
