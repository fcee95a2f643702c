"""`adacal.commands.ood.run_ood` called from Python: the checks of `adacal ood`, the report returned and written."""

import json

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.commands.ood import OodRun, run_ood
from adacal.sources import ReadOptions


def _entropy(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=1)


def _auroc(negatives, positives):
    """Mann-Whitney: the probability that a positive scores above a negative (ties count one half)."""
    greater = (positives[:, None] > negatives[None, :]).mean()
    ties = (positives[:, None] == negatives[None, :]).mean()
    return greater + 0.5 * ties


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(5)
    folder = tmp_path_factory.mktemp("ood")
    in_logits = rng.normal(0.0, 1.0, size=(120, 4))
    in_logits[np.arange(120), rng.integers(0, 4, size=120)] += 4.0  # confident: low entropy
    out_logits = rng.normal(0.0, 1.0, size=(80, 4))  # diffuse: high entropy
    np.savez(folder / "in.npz", logits=in_logits)
    np.savez(folder / "out.npz", logits=out_logits)
    return folder / "in.npz", folder / "out.npz", in_logits, out_logits


def test_saved_outputs_give_the_reference_auroc_before_and_after_temperature(files, tmp_path):
    in_path, out_path, in_logits, out_logits = files
    out = tmp_path / "ood.json"
    run = run_ood(in_preds=in_path, out_preds=out_path, temperature=2.0, json_path=out)
    assert isinstance(run, OodRun) and run.written == out
    assert json.loads(out.read_text())["results"] == json.loads(json.dumps(run.results))
    entry = run.results["scores"]["entropy"]
    assert entry["pre"]["auroc"] == pytest.approx(_auroc(_entropy(in_logits), _entropy(out_logits)))
    assert entry["post"]["auroc"] == pytest.approx(_auroc(_entropy(in_logits / 2), _entropy(out_logits / 2)))
    assert run.config["in"] == "in" and run.config["temperature_source"] == "option"
    assert run.notes == ["The sets differ in size (120 in-distribution, 80 OOD): AUROC and FPR@95 do not depend on "
                         "the ratio, AUPR-in and AUPR-out do."]


def test_without_json_nothing_is_written(files, tmp_path):
    in_path, out_path, _, _ = files
    before = sorted(p.name for p in in_path.parent.iterdir())
    run = run_ood(in_preds=in_path, out_preds=out_path, scores="entropy,energy")
    assert run.written is None and list(run.results["scores"]) == ["entropy", "energy"]
    assert run.results["temperature"] is None
    assert sorted(p.name for p in in_path.parent.iterdir()) == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "runs/x"}, "Expected either --model or --in-preds/--out-preds, not both."),
        ({"out_preds": None}, "Expected both --in-preds and --out-preds"),
        ({"limit": 10}, "Expected --limit only with --model"),
        ({"temperature": 2.0, "fit_temperature": True}, "Expected either --temperature or --fit-temperature"),
        ({"severity": 7}, "Expected --severity to be an integer from 1 to 5, got 7."),
        ({"scores": "entropy,mahalanobis"}, "Unknown OOD score 'mahalanobis'"),
    ],
)
def test_bad_options_raise_before_anything_is_written(files, tmp_path, kwargs, message):
    in_path, out_path, _, _ = files
    out = tmp_path / "ood.json"
    arguments = {"in_preds": in_path, "out_preds": out_path, "json_path": out, **kwargs}
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        run_ood(**arguments)
    assert not out.exists()


def test_read_options_only_with_saved_outputs(tmp_path):
    with pytest.raises(InputError, match="--logits-key, --labels-key, --renormalize, --scores-kind, .* only with "
                                         "--in-preds"):
        run_ood(model=tmp_path, out_name="svhn", options=ReadOptions(logits_key="scores"))
    with pytest.raises(InputError, match=r"Expected --model RUN \(a run folder or checkpoint of the classifier\) or "
                                         r"--in-preds and --out-preds\.$"):
        run_ood()


def test_without_a_model_the_newest_run_of_the_dataset_is_suggested(tmp_path, monkeypatch):
    """`adacal ood --in cifar10 --out svhn` right after `adacal train --dataset cifar10`: the error names the run
    ./runs holds for that dataset (the newest), and uses none of them by itself."""
    import os

    from adacal.reports import make_report, write_json

    monkeypatch.chdir(tmp_path)
    for name, dataset, age in (("old-cifar", "cifar10", 200), ("new-cifar", "cifar10", 100), ("digits", "digits", 0)):
        (tmp_path / "runs" / name).mkdir(parents=True)
        write_json(tmp_path / "runs" / name / "config.json", make_report("train-config", config={"dataset": dataset},
                                                                                      results={}))
        os.utime(tmp_path / "runs" / name, (1e9 - age, 1e9 - age))
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "config.json").write_text("{not json")
    with pytest.raises(InputError) as info:
        run_ood(in_name="cifar10", out_name="svhn")
    runs = os.path.join("runs", "new-cifar")
    assert str(info.value) == (
        "Expected --model RUN (a run folder or checkpoint of the classifier to score svhn with) or --in-preds and "
        f"--out-preds. The newest run trained on cifar10 here is {runs} (1 more under runs/): add --model {runs}.")
    with pytest.raises(InputError, match=r"The newest run here is runs.digits \(2 more under runs/\): add --model"):
        run_ood(out_name="svhn")
    with pytest.raises(InputError, match=r"--out-preds\.$"):
        run_ood(in_name="svhn", out_name="cifar10")  # no run trained on svhn
