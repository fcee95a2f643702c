"""The quality benchmarks' runner (benchmarks/quality_common.py and the quality_* modules it re-exports): result keys,
arms, temperature fits, resumability from the committed result files alone, the summary over seeds, and
summarize_runs.py reading those files."""

from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.special import softmax
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    # Imported by name (not from a file spec) so its dataclasses and pickled cells resolve their module.
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


qc = _load("quality_common")
qs = _load("quality_summary")  # the private helpers a test reads, in their modules
qt = _load("quality_training")
quality_files = _load("quality_files")
summarize_runs = _load("summarize_runs")


# ------------------------------------------------------------------------------------------------ temperature fits


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sampled(n: int, k: int, true_t: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose labels are drawn from softmax(logits / true_t): calibrated exactly at T = true_t."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=3.0, size=(n, k))
    probs = _softmax(logits / true_t)
    labels = (probs.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return logits, labels


def _slow_nll(logits: np.ndarray, labels: np.ndarray, t: float) -> float:
    return float(-np.mean(np.log(_softmax(logits / t)[np.arange(len(labels)), labels])))


def test_nll_fit_matches_an_independent_minimiser_and_recovers_the_true_temperature():
    from scipy.optimize import minimize_scalar

    logits, labels = _sampled(20_000, 5, 2.0, seed=0)
    t, nll = qc.fit_temperature_nll(logits, labels)
    reference = minimize_scalar(lambda u: _slow_nll(logits, labels, float(np.exp(u))), bounds=(-3, 3),
                                method="bounded", options={"xatol": 1e-10})
    assert t == pytest.approx(float(np.exp(reference.x)), rel=1e-5)
    assert nll == pytest.approx(_slow_nll(logits, labels, t), rel=1e-12)
    assert t == pytest.approx(2.0, rel=0.05)  # labels drawn at T = 2


def test_nll_fit_stops_at_the_bounds_when_the_minimum_is_outside():
    # Every prediction right: the NLL keeps falling as T → 0, so the fit stops at the lower bound.
    logits = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
    assert qc.fit_temperature_nll(logits, np.array([0, 1, 0]))[0] == pytest.approx(0.01)


def _slow_ece_em(logits: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Equal-mass ECE the obvious way: sort by confidence, cut into n_bins equal chunks (N divisible by n_bins)."""
    probs = _softmax(logits)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    order = np.argsort(conf)
    return float(sum(len(c) / len(conf) * abs(conf[c].mean() - correct[c].mean())
                     for c in np.array_split(order, n_bins)))


def test_grid_fit_is_the_first_minimum_of_equal_mass_ece_over_the_papers_grid():
    logits, labels = _sampled(1500, 4, 2.0, seed=1)
    slow = np.array([_slow_ece_em(logits / t, labels) for t in qc.T_GRID])
    t, ece = qc.fit_temperature_grid(logits, labels)
    assert qc.T_GRID[0] == pytest.approx(0.1) and qc.T_GRID[-1] == pytest.approx(10.0) and len(qc.T_GRID) == 100
    assert t == pytest.approx(float(qc.T_GRID[int(np.argmin(slow))]))
    assert ece == pytest.approx(float(slow.min()), abs=1e-12)
    assert 1.5 <= t <= 2.6  # labels drawn at T = 2


# ------------------------------------------------------------------------------------------------ keys and arms

RESOLVED = {"dataset": "cifar10", "model": "resnet20", "loss": "focal", "model_options": {}, "loss_options":
            {"gamma": 3.0}, "epochs": 30, "batch_size": 128, "lr": 0.1, "milestones": [15, 25], "lr_decay": 0.1,
            "momentum": 0.9, "weight_decay": 5e-4, "optimizer": "sgd", "seed": 0, "device": "cpu", "amp": False,
            "channels_last": True, "update_every": "epoch", "select": "last", "grad_clip": None, "eval_test_every": 0,
            "out": "/tmp/a", "resume": None, "workers": 0, "data_dir": "/data", "train_subset": 10000,
            "val_size": 5000, "test_subset": None, "preset": "quick"}


def _key(**changes) -> str:
    return qc.protocol_key(qc.protocol_options({**RESOLVED, **changes}))


@pytest.mark.parametrize("changes", [{"out": "/elsewhere"}, {"data_dir": "/other"}, {"device": "cuda"},
                                     {"workers": 4}, {"resume": "x"}, {"eval_test_every": 1}, {"preset": "paper"},
                                     {"lr": 0.1000000}, {"milestones": (15, 25)}, {"epochs": 30.0},
                                     {"loss_reduction": "mean"}])
def test_key_ignores_where_things_live_and_equal_spellings(changes):
    assert _key(**changes) == _key()


@pytest.mark.parametrize("changes", [{"seed": 1}, {"lr": 0.05}, {"epochs": 29}, {"milestones": [15]},
                                     {"loss_options": {"gamma": 2.0}}, {"loss": "ce"}, {"train_subset": 5000},
                                     {"val_size": 2000}, {"grad_clip": 2.0}, {"loss_reduction": "sum"},
                                     {"channels_last": False}, {"update_every": "16"}, {"model": "resnet110"}])
def test_key_changes_with_every_option_that_changes_the_result(changes):
    assert _key(**changes) != _key()


def test_key_changes_with_the_analysis_protocol():
    options = qc.protocol_options(RESOLVED)
    assert qc.protocol_key(options) != qc.protocol_key(options, analysis=qc.ANALYSIS_PROTOCOL + " v2")
    assert len(qc.protocol_key(options)) == 16


def test_arms_follow_the_train_config_fields():
    old = {"loss", "grad_clip", "seed"}
    new = old | {"loss_reduction"}
    assert qc.parse_arms(None, old) == ["mean"]
    assert qc.parse_arms(None, new) == ["mean", "sum-clip"]
    assert qc.parse_arms("sum-clip,mean", new) == ["sum-clip", "mean"]
    with pytest.raises(SystemExit, match="arm 'sum-clip' needs TrainConfig option.*loss_reduction"):
        qc.parse_arms("mean,sum-clip", old)
    with pytest.raises(SystemExit, match="unknown arm 'sum'.*mean, sum-clip"):
        qc.parse_arms("sum", new)
    assert qc.arm_options("mean", old) == {"grad_clip": None}
    assert qc.arm_options("sum-clip", new) == {"loss_reduction": "sum", "grad_clip": 2.0}
    assert qc.arm_of(qc.protocol_options({**RESOLVED, "grad_clip": 2, "loss_reduction": "sum"})) == "sum-clip"
    assert qc.arm_of(qc.protocol_options(RESOLVED)) == "mean"
    assert qc.arm_of(qc.protocol_options({**RESOLVED, "grad_clip": 2})) is None  # clipped mean: neither arm


STORED_20NG = ROOT / "benchmarks" / "results" / "quality_runs" / "20newsgroups"


def _stored_20ng_config(**changes):
    """The TrainConfig quality_20newsgroups.py builds for AdaFocal, mean arm, seed 0, with its default arguments."""
    import dataclasses

    from adacal.training import TrainConfig

    args = _load("quality_20newsgroups").build_parser().parse_args([])
    config = TrainConfig(dataset="20newsgroups", model="textcnn", loss="adafocal", loss_options={}, epochs=args.epochs,
                         batch_size=args.batch_size, lr=1e-3, milestones=(), optimizer="adam", weight_decay=0.0, seed=0,
                         device="cpu", select="last", update_every=args.update_every, train_subset=args.train_subset,
                         val_size=args.val_size, **qc.arm_options("mean"))
    return dataclasses.replace(config, **changes)


def _key_of(config) -> str:
    cell = qc.Cell(name="adafocal", arm="mean", seed=0, config=config, folder=STORED_20NG,
                   result=STORED_20NG / "adafocal-mean-seed0.json")
    return qc.cell_key(cell)[1]


def test_a_committed_result_key_is_still_current_and_the_bin_count_spelling_does_not_change_keys():
    stored = json.loads((STORED_20NG / "adafocal-mean-seed0.json").read_text())
    assert _key_of(_stored_20ng_config()) == stored["key"]
    assert qc.read_result(STORED_20NG / "adafocal-mean-seed0.json", stored["key"]) is not None
    # The bin count under either name (n_bins, or the deprecated num_bins) gives one key, another than without it.
    spelled = {name: _key_of(_stored_20ng_config(loss_options={name: 10})) for name in ("n_bins", "num_bins")}
    assert spelled["n_bins"] == spelled["num_bins"] != stored["key"]
    # ... and that key is the hash of the options as a result written with `num_bins` recorded them.
    assert spelled["n_bins"] == qc.protocol_key({**stored["options"], "loss_options": {"num_bins": 10.0}})
    # A run folder whose config.json says num_bins (with every default) is the finished run of the same options.
    old_config = {**RESOLVED, "loss": "adafocal", "loss_options": {"num_bins": 15, "lam": 1.0, "gamma_init": 1.0,
                  "gamma_max": 20.0, "gamma_min": -2.0, "switch_threshold": 0.2}}
    new_options = qc.protocol_options({**RESOLVED, "loss": "adafocal", "loss_options": {}})
    assert qc.with_loss_defaults(qc.protocol_options(old_config)) == qc.with_loss_defaults(new_options)


# ------------------------------------------------------------------------------------------------ the grid, end to end


def _cell(tmp: Path, seed: int, *, loss: str = "adafocal", epochs: int = 2) -> "qc.Cell":
    from adacal.training import TrainConfig

    config = TrainConfig(dataset="digits", model="mlp", loss=loss, epochs=epochs, batch_size=32, train_subset=96,
                         optimizer="sgd", lr=0.05, milestones=(), seed=seed, device="cpu", update_every="2",
                         select="last", **qc.arm_options("mean"))
    return qc.Cell(name=loss, arm="mean", seed=seed, config=config, folder=tmp / "runs" / f"{loss}-s{seed}",
                   result=qc.result_path(tmp / "results", loss, "mean", seed))


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    """The scripts' main() sets torch's thread count for the process (`--threads`); restored after each test, so that
    a run resumed here computes on as many threads as the run it must equal bit for bit (float sums differ between
    one thread and two)."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Two seeds of a tiny AdaFocal grid, run once for the module."""
    tmp = tmp_path_factory.mktemp("grid")
    cells = [_cell(tmp, 0), _cell(tmp, 1)]
    entries = [qc.run_cell(c, dataset="digits", reuse=True, commit=False, keep=True) for c in cells]
    return tmp, cells, entries


def test_a_finished_run_writes_its_result_file_at_once(finished):
    tmp, cells, entries = finished
    for cell, entry in zip(cells, entries):
        stored = json.loads(cell.result.read_text())
        assert stored["key"] == qc.cell_key(cell)[1] and stored["schema"] == qc.RESULT_SCHEMA
        assert (stored["loss"], stored["arm"], stored["seed"]) == ("adafocal", "mean", cell.seed)
        assert stored["test_pre"]["ece_em"] == pytest.approx(entry["test_pre"]["ece_em"])
        assert stored["ts_ece_em"]["temperature"] in set(np.round(qc.T_GRID, 1).tolist())
        # T fitted by NLL on the validation logits cannot give a higher validation NLL than T = 1.
        assert stored["ts_nll"]["val_nll"] <= stored["val_pre"]["nll"] + 1e-12
        assert stored["history"] and "adafocal_final_bins" in stored
        assert not list(cell.result.parent.glob("*.tmp*"))


def test_result_files_alone_resume_the_grid(finished, monkeypatch, tmp_path):
    tmp, cells, entries = finished
    moved = tmp_path / "gone"
    shutil.move(str(tmp / "runs"), moved)  # the run folders vanish (another session, another machine)
    try:
        import adacal.training

        monkeypatch.setattr(adacal.training, "train", lambda *a, **k: pytest.fail("a finished cell was retrained"))
        done, missing = qc.collect(cells)
        assert [e["seed"] for e in done] == [0, 1] and missing == []
        again = qc.run_cell(cells[0], dataset="digits", reuse=True, commit=False)
        assert again == json.loads(cells[0].result.read_text())
        # Another protocol for the same cell (3 epochs) is not taken for the finished one.
        changed = _cell(tmp, 0, epochs=3)
        assert qc.cell_key(changed)[1] != qc.cell_key(cells[0])[1]
        done, missing = qc.collect([changed])
        assert done == [] and missing == [changed]
    finally:
        shutil.move(str(moved), tmp / "runs")


def test_each_result_keeps_the_runs_validation_and_test_predictions_beside_it(finished):
    tmp, cells, entries = finished
    from adacal.predictions import load_split_predictions

    for cell, entry in zip(cells, entries):
        kept = qc.predictions_path(cell.result)
        assert kept.name == f"adafocal-mean-seed{cell.seed}.predictions.npz"
        assert quality_files.result_files(cell.result) == [cell.result, kept]
        splits = load_split_predictions(kept)
        original = load_split_predictions(cell.folder.glob("*/predictions.npz").__next__())
        assert set(splits) >= {"val", "test"}
        with np.load(kept) as arrays:
            assert arrays["test_logits"].dtype == np.float16 and arrays["val_logits"].dtype == np.float16
        for name in ("val", "test"):
            # float16 logits minus the row's maximum: the same softmax to float16's precision, the top logit 0.
            z = np.asarray(original[name].logits, dtype=np.float64)
            shifted = z - z.max(axis=1, keepdims=True)
            np.testing.assert_allclose(splits[name].logits, shifted, rtol=2**-10, atol=1e-6)
            assert (splits[name].logits.max(axis=1) == 0).all()
            np.testing.assert_allclose(softmax(splits[name].logits, axis=1), softmax(z, axis=1), atol=1e-3)
            np.testing.assert_array_equal(splits[name].labels, original[name].labels)
        # The kept test predictions are those the committed figures come from.
        test = splits["test"]
        assert 1 - (test.logits.argmax(axis=1) == test.labels).mean() == pytest.approx(entry["test_pre"]["error"])


def test_a_run_keeps_no_predictions_unless_asked(finished, tmp_path):
    """Every run's predictions would outgrow what a GPU slice carries: only the runs asked for keep them."""
    tmp, cells, _ = finished
    cell = qc.Cell(name=cells[0].name, arm="mean", seed=0, config=cells[0].config, folder=cells[0].folder,
                   result=tmp_path / cells[0].result.name)
    qc.run_cell(cell, dataset="digits", reuse=True, commit=False)
    assert cell.result.is_file() and not qc.predictions_path(cell.result).is_file()
    assert quality_files.result_files(cell.result) == [cell.result]


def test_compact_logits_keep_the_argmax_of_near_ties_and_clip_far_classes():
    logits = np.array([[10.0, 10.0 - 1e-5, -3.0], [0.5, 2e5, 0.0]])
    compact = quality_files.compact_logits(logits)
    assert compact.dtype == np.float16
    assert compact[0, 0] == 0 and compact[0, 1] < 0  # 1e-5 below the top stays below it
    assert compact[1].argmax() == 1 and np.isfinite(compact).all()


def test_recover_predictions_retrains_a_done_cell_and_keeps_its_result_saying_whether_it_reproduces(finished,
                                                                                                      tmp_path):
    tmp, cells, _ = finished
    result = tmp_path / "results" / cells[0].result.name
    result.parent.mkdir()
    shutil.copy(cells[0].result, result)
    committed = result.read_text()
    cell = qc.Cell(name=cells[0].name, arm="mean", seed=0, config=cells[0].config, folder=tmp_path / "again",
                   result=result)
    assert not qc.predictions_path(result).is_file()
    # Without the flag a done cell is done, predictions or not.
    qc.run_cell(cell, dataset="digits", reuse=True, commit=False)
    assert not qc.predictions_path(result).is_file() and not cell.folder.exists()
    qc.run_cell(cell, dataset="digits", reuse=True, commit=False, recover_predictions=True)
    assert qc.predictions_path(result).is_file() and result.read_text() == committed
    record = qc.read_predictions_record(result)
    assert record["reproduces_result"] is True and record["figures"]["error"] == record["result_figures"]["error"]
    assert quality_files.result_files(result) == [result, qc.predictions_path(result),
                                                  qc.predictions_record_path(result)]
    # A retrained run whose figures differ leaves the committed result as it is, and says so beside the predictions.
    changed = json.loads(committed)
    changed["test_pre"]["error"] += 0.01
    qc.predictions_path(result).unlink()
    result.write_text(json.dumps(changed))
    shutil.rmtree(cell.folder)
    entry = qc.run_cell(cell, dataset="digits", reuse=True, commit=False, recover_predictions=True)
    assert entry["test_pre"]["error"] == pytest.approx(changed["test_pre"]["error"])
    assert json.loads(result.read_text()) == changed
    record = qc.read_predictions_record(result)
    assert record["reproduces_result"] is False
    assert record["result_figures"]["error"] == pytest.approx(changed["test_pre"]["error"])
    assert record["figures"]["error"] == pytest.approx(json.loads(committed)["test_pre"]["error"])


def test_a_finished_run_folder_is_analysed_without_training_again(finished, monkeypatch, tmp_path):
    tmp, cells, _ = finished
    import adacal.training

    monkeypatch.setattr(adacal.training, "train", lambda *a, **k: pytest.fail("a finished run folder was retrained"))
    cell = qc.Cell(name=cells[1].name, arm="mean", seed=1, config=cells[1].config, folder=cells[1].folder,
                   result=tmp_path / "elsewhere.json")
    entry = qc.run_cell(cell, dataset="digits", reuse=True, commit=False)
    assert entry["timing"]["reused_run_folder"] is True and cell.result.is_file()


def test_summary_is_mean_and_sample_std_over_seeds(finished):
    _, _, entries = finished
    (row,) = qc.summarise(entries, ["adafocal", "ce"], ["mean"])
    assert (row["loss"], row["arm"], row["seeds"]) == ("adafocal", "mean", [0, 1])
    values = np.array([e["test_pre"]["ece_em"] for e in entries])
    assert row["figures"]["ece_em"]["mean"] == pytest.approx(values.mean())
    assert row["figures"]["ece_em"]["std"] == pytest.approx(values.std(ddof=1))
    temps = np.array([e["ts_nll"]["temperature"] for e in entries])
    assert row["figures"]["t_nll"]["mean"] == pytest.approx(temps.mean())
    header, rows = qc.table_rows([row], with_ood=False)
    assert rows[0][:3] == ["AdaFocal", "mean", "0,1"]
    assert rows[0][header.index("ECE-EM")] == f"{100 * values.mean():.2f} ± {100 * values.std(ddof=1):.2f}"


def test_training_time_is_averaged_per_device_only(finished):
    """Seeds of one cell may run on the CPU and on a GPU (every other figure is the same protocol): their times are
    not averaged together. A result without a device recorded ran on the CPU (the only device there was then)."""
    _, _, entries = finished
    gpu = {**entries[1], "machine": {**entries[1]["machine"], "device": "cuda"},
           "timing": {**entries[1]["timing"], "train_wall_seconds": 12.0}}
    cpu = {**entries[0], "machine": {k: v for k, v in entries[0]["machine"].items() if k != "device"},
           "timing": {**entries[0]["timing"], "train_wall_seconds": 300.0}}
    (row,) = qc.summarise([cpu, gpu], ["adafocal"], ["mean"])
    assert row["devices"] == ["cpu", "cuda"]
    assert row["train_seconds_by_device"]["cpu"]["mean"] == 300.0
    assert row["train_seconds_by_device"]["cuda"]["mean"] == 12.0
    assert "train_seconds" not in row["figures"]  # no mean of the two in the JSON either
    header, rows = qc.table_rows([row], with_ood=False)
    assert rows[0][header.index("train s/run")] == "300 (cpu) · 12 (cuda)"
    (same,) = qc.summarise(entries, ["adafocal"], ["mean"])
    assert qc.table_rows([same], with_ood=False)[1][0][-1] == qs._cell(same["figures"]["train_seconds"], 1.0, 0)
    # Runs on cuda and cuda:0 of one card are one group; a row all on a GPU says so.
    on_card = [{**e, "machine": {**e["machine"], "device": d, "gpu": "H100"}}
               for e, d in zip(entries, ["cuda", "cuda:0"])]
    (card,) = qc.summarise(on_card, ["adafocal"], ["mean"])
    assert card["devices"] == ["H100", "H100"] and "train_seconds" in card["figures"]
    assert qc.table_rows([card], with_ood=False)[1][0][-1].endswith("(H100)")


def test_a_reused_run_folder_keeps_the_device_it_trained_on(finished, monkeypatch, tmp_path):
    """--device is not part of a result's key, so a finished CPU run folder is reused under --device cuda: its result
    must still say it trained on the CPU, and its time must count as a CPU time."""
    import torch

    _, cells, _ = finished
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "FAKE GPU")
    import adacal.training

    monkeypatch.setattr(adacal.training, "train", lambda *a, **k: pytest.fail("a finished run was trained again"))
    on_gpu = dataclasses.replace(cells[0], config=dataclasses.replace(cells[0].config, device="cuda"),
                                 result=tmp_path / "result.json")
    entry = qc.run_cell(on_gpu, dataset="digits", reuse=True, commit=False)
    assert entry["timing"]["reused_run_folder"] is True
    assert entry["machine"]["device"] == "cpu" and entry["machine"]["gpu"] is None
    assert qc.device_of(entry) == "cpu"


def test_the_device_of_a_run_folder_is_read_from_its_config(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    assert qt._run_device(run) == "cpu"  # no config.json: the CPU
    (run / "config.json").write_text(json.dumps({"config": {"device": "CUDA:1"}}))
    assert qt._run_device(run) == "cuda:1"
    assert qt._device_name("cpu") == "cpu" and qt._device_name(None) == "cpu"


def test_figures_are_drawn_from_the_result_files(finished, tmp_path):
    _, _, entries = finished
    written = qc.draw_figures(entries, ["adafocal"], ["mean"], tmp_path, slug="digits", title="digits")
    assert set(written) == {"reliability_equal_width_mean", "reliability_equal_mass_mean", "curves_mean",
                            "adafocal_gamma_mean"}
    for path in written.values():
        assert Path(path).is_file() and Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summarize_runs_reads_result_files(finished, capsys):
    tmp, _, entries = finished
    assert summarize_runs.main([str(tmp / "results")]) == 0
    out = capsys.readouterr().out
    mean = 100 * np.mean([e["test_pre"]["ece_em"] for e in entries])
    assert "2 run(s)" in out and "adafocal" in out and f"{mean:.2f} ±" in out


def test_summarize_runs_groups_runs_whatever_the_bin_count_is_called(tmp_path):
    rows = []
    for name, spelling in (("old", "num_bins"), ("new", "n_bins")):
        run = tmp_path / name
        run.mkdir()
        config = {**RESOLVED, "loss": "adafocal", "loss_options": {spelling: 10, "lam": 1.0}}
        (run / "config.json").write_text(json.dumps({"config": config}))
        (run / "evaluate.json").write_text(json.dumps({"results": {"metrics": {"error": 0.1, "ece_em": 0.02}}}))
        rows.append(summarize_runs.read_run(run))
    assert rows[0]["loss"] == rows[1]["loss"] == "adafocal(lam=1.0,n_bins=10)"
    assert rows[0]["protocol"] == rows[1]["protocol"]


# ------------------------------------------------------------------------------------------------ git


def test_commit_file_commits_that_file_only(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True,
                              text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "other.txt").write_text("staged, not mine\n")
    git("add", "other.txt")
    result = tmp_path / "r" / "ce-mean-seed0.json"
    result.parent.mkdir()
    result.write_text("{}\n")
    assert qc.commit_file(result, "result ce")
    assert git("log", "--format=%s").strip() == "result ce"
    assert git("show", "--name-only", "--format=").split() == ["r/ce-mean-seed0.json"]
    assert "A  other.txt" in git("status", "--short")
    assert not qc.commit_file(result, "nothing new")  # unchanged: no empty commit


# ------------------------------------------------------------------------------------------------ the scripts


def test_script_refuses_an_arm_this_adacal_cannot_train(monkeypatch, tmp_path):
    q20 = _load("quality_20newsgroups")
    monkeypatch.setattr(qc, "train_config_fields", lambda: {"grad_clip"})
    with pytest.raises(SystemExit, match="arm 'sum-clip' needs TrainConfig option.*loss_reduction"):
        q20.main(["--arms", "sum-clip", "--summary-only", "--runs-dir", str(tmp_path)])


def test_device_is_checked_before_any_work_and_recorded_in_each_result(finished, tmp_path, monkeypatch):
    import torch

    _, cells, _ = finished
    for cell in cells:
        assert json.loads(cell.result.read_text())["machine"]["device"] == "cpu"
        assert json.loads(cell.result.read_text())["machine"]["gpu"] is None
    q20 = _load("quality_20newsgroups")
    common = ["--arms", "mean", "--seeds", "0", "--losses", "ce", "--runs-dir", str(tmp_path), "--no-summary",
              "--data-dir", str(ROOT / "tests")]  # any folder: a fresh clone has no shared data beside it
    with pytest.raises(SystemExit, match="expected --device to be cpu, cuda or cuda:N, got 'tpu'"):
        q20.main(["--device", "tpu", *common])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--device cuda asks for CUDA, but this torch sees no CUDA device"):
            q20.main(["--device", "cuda", *common])
    with monkeypatch.context() as patched:  # a machine with one GPU
        patched.setattr(torch.cuda, "is_available", lambda: True)
        patched.setattr(torch.cuda, "device_count", lambda: 1)
        with pytest.raises(SystemExit, match="Expected --device cuda:1 to name one of the 1 CUDA device"):
            q20.main(["--device", "cuda:1", *common])
    assert not list(tmp_path.iterdir())


def test_benchmark_processes_compute_in_float32_on_cuda():
    """A GPU seed of a grid whose other seeds ran on the CPU must not compute its convolutions in TF32."""
    import torch

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        qc.set_threads(torch.get_num_threads())
        assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_summary_only_trains_nothing_and_lists_the_missing_runs(monkeypatch, tmp_path, capsys):
    import adacal.training

    q20 = _load("quality_20newsgroups")
    monkeypatch.setattr(adacal.training, "train", lambda *a, **k: pytest.fail("--summary-only trained"))
    results = tmp_path / "summary.json"
    assert q20.main(["--summary-only", "--arms", "mean", "--seeds", "0,1", "--losses", "ce,adafocal",
                     "--runs-dir", str(tmp_path / "runs"), "--results", str(results),
                     "--plots", str(tmp_path / "plots")]) == 0
    report = json.loads(results.read_text())
    assert report["results"]["summary"] == [] and len(report["results"]["missing"]) == 4
    assert "Not run yet (4)" in capsys.readouterr().out


def test_stored_20newsgroups_results_are_still_current(monkeypatch, tmp_path, capsys):
    """The committed result files keep their keys: a change to the scripts must not orphan finished runs.

    The summary covers every result file on disk (all arms), whatever grid the invocation names."""
    import adacal.training

    q20 = _load("quality_20newsgroups")
    monkeypatch.setattr(adacal.training, "train", lambda *a, **k: pytest.fail("--summary-only trained"))
    stored = ROOT / "benchmarks" / "results" / "quality_runs" / "20newsgroups"
    names = sorted(p.name for p in stored.glob("*-seed*.json"))
    if not names:
        pytest.skip("no committed 20 Newsgroups result files in this checkout")
    results = tmp_path / "summary.json"
    assert q20.main(["--summary-only", "--arms", "mean", "--seeds", "0,1,2", "--losses", "ce,focal-3,flsd-53,adafocal",
                     "--runs-dir", str(stored), "--results", str(results), "--plots", str(tmp_path / "plots")]) == 0
    report = json.loads(results.read_text())
    current = {Path(run["result_file"]).name for run in report["results"]["runs"]}
    assert current == set(names)


# ------------------------------------------------------------------------------------------------ AdaFocal variants


def test_burst_schedule_updates_often_for_two_epochs_after_each_milestone():
    from adacal.training import parse_update_every

    spec = qc.variant_schedule("adafocal-burst", epochs=30, milestones=(15, 25), batches_per_epoch=79, default="epoch")
    assert spec == "epoch:15,9:17,epoch:25,9:27,epoch"
    schedule = parse_update_every(spec)
    every = {epoch: schedule.batches_for_epoch(epoch) for epoch in range(1, 31)}
    assert [e for e, n in every.items() if n is not None] == [16, 17, 26, 27]
    assert set(every.values()) == {None, 9}
    # milestones too close to each other or to the end, and no milestones at all
    assert qc.variant_schedule("adafocal-burst", epochs=10, milestones=(5, 6, 10), batches_per_epoch=4,
                               default="epoch") == "epoch:5,1:7,epoch"
    assert qc.variant_schedule("adafocal-burst", epochs=6, milestones=(), batches_per_epoch=82,
                               default="16") == "epoch"


def test_reference_schedule_scales_the_papers_to_the_run():
    from adacal.training import parse_update_every
    from adacal.training.update_schedule import PAPER_UPDATE_SPEC

    assert qc.variant_schedule("adafocal-refsched", epochs=350, milestones=(150, 250), batches_per_epoch=352,
                               default="epoch") == PAPER_UPDATE_SPEC
    spec = qc.variant_schedule("adafocal-refsched", epochs=30, milestones=(15, 25), batches_per_epoch=79,
                               default="epoch")
    assert spec == "epoch:2,22:3,1"
    schedule = parse_update_every(spec)
    assert [schedule.batches_for_epoch(e) for e in (1, 2, 3, 4, 30)] == [None, None, 22, 1, 1]


@pytest.mark.parametrize("name", ["ce", "adafocal", "adafocal-lam3", "adafocal-g0"])
def test_other_entries_keep_the_protocols_schedule(name):
    assert qc.variant_schedule(name, epochs=30, milestones=(15, 25), batches_per_epoch=79, default="epoch") == "epoch"
    assert qc.variant_schedule(name, epochs=6, milestones=(), batches_per_epoch=82, default="16") == "16"


@pytest.mark.parametrize("name", sorted(qc.VARIANTS))
def test_every_variant_is_a_trainable_adafocal_configuration(name):
    from adacal.losses import build_loss
    from adacal.training import TrainConfig, resolve_config

    loss, options = qc.LOSS_SPECS[name]
    assert loss == "adafocal" and name in qc.DISPLAY and name in qc.loss_protocol()
    schedule = qc.variant_schedule(name, epochs=30, milestones=(15, 25), batches_per_epoch=79, default="epoch")
    resolved = resolve_config(TrainConfig(dataset="digits", loss=loss, loss_options=dict(options),
                                          update_every=schedule, epochs=30, milestones=(15, 25)))
    built = build_loss(loss, **resolved.loss_options)
    for option, value in options.items():
        assert getattr(built, option) == value


def test_summary_covers_every_result_file_not_only_the_invocations_grid(finished, tmp_path):
    tmp, cells, entries = finished

    def make_config(name, arm, seed):
        import dataclasses

        return dataclasses.replace(_cell(tmp, seed, loss=name).config, **qc.arm_options(arm))

    def folder_name(name, arm, seed):
        return f"{name}-s{seed}"

    runs = tmp / "results"
    # A file of another arm and one of an unknown name sit beside the finished ones.
    (runs / "adafocal-sum-clip-seed0.json").write_text("{}")
    (runs / "nonsense-mean-seed0.json").write_text("{}")
    try:
        only_seed0 = [c for c in cells if c.seed == 0]
        found = qc.cells_on_disk(runs, only_seed0, make_config=make_config, folder_name=folder_name, out=tmp / "runs")
        assert sorted((c.name, c.arm, c.seed) for c in found) == [
            ("adafocal", "mean", 0), ("adafocal", "mean", 1), ("adafocal", "sum-clip", 0)]
        done, missing = qc.collect(found)
        assert sorted(e["seed"] for e in done) == [0, 1]  # the sum-clip file holds no valid result
        assert [(c.arm, c.seed) for c in missing] == [("sum-clip", 0)]
    finally:
        (runs / "adafocal-sum-clip-seed0.json").unlink()
        (runs / "nonsense-mean-seed0.json").unlink()


def test_a_run_cut_short_resumes_from_its_checkpoint_and_gives_the_uninterrupted_result(finished, tmp_path):
    """A session that ends mid-run costs only the unfinished epoch: the next invocation resumes the run folder."""
    import adacal.training

    tmp, cells, entries = finished
    cell = _cell(tmp_path, 0)  # the same options as the finished seed-0 cell, in a fresh place

    def stop_after_first_epoch(event, info):
        if event == "epoch_end" and info["epoch"] == 1:
            raise KeyboardInterrupt

    cell.folder.mkdir(parents=True)
    with pytest.raises((KeyboardInterrupt, adacal.training.TrainingInterrupted)):
        adacal.training.train(dataclasses.replace(cell.config, out=str(cell.folder)), progress=stop_after_first_epoch)
    (partial,) = [p for p in cell.folder.iterdir() if p.is_dir()]
    assert not (partial / "evaluate.json").exists()

    resumed = qc.run_cell(cell, dataset="digits", reuse=True, commit=False)
    assert [p for p in cell.folder.iterdir() if p.is_dir()] == [partial]  # no second run folder
    assert resumed["timing"]["resumed_run_folder"] is True
    assert len(resumed["timing"]["epoch_seconds"]) == 2  # both epochs' times, from the run's history
    assert resumed["test_pre"] == entries[0]["test_pre"]  # exact resume: the uninterrupted run's figures
    assert resumed["key"] == entries[0]["key"]
