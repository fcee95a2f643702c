"""OOD detection on inputs found to break it: low-precision probabilities, near-probabilities, tiny temperatures,
score names that are not strings, validation logits of another width, reports that would replace data files, and a
test-subset model scored on its own dataset. Metrics are checked against scikit-learn and a by-hand FPR@95."""

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from adacal.cli import app
from adacal.errors import InputError
from adacal.ood import check_score_names, detect_ood, fit_temperature, ood_from_model, ood_scores

from cli_helpers import one_line_error, runner, snapshot


def _softmax(logits):
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def _entropy(logits):
    p = _softmax(np.sort(logits, axis=1))  # sorted: rows holding the same values in another order tie exactly
    return -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1)


def _fpr_at_95_by_hand(in_scores, out_scores):
    """The documented convention: flag score >= t; the highest threshold (a distinct score) whose TPR is >= 95 %."""
    for t in sorted(set(np.r_[in_scores, out_scores].tolist()), reverse=True):
        tpr = np.mean(out_scores >= t)
        if tpr >= 0.95:
            return float(np.mean(in_scores >= t))
    raise AssertionError("unreachable: the lowest threshold flags everything")


@pytest.fixture(scope="module")
def logits():
    rng = np.random.default_rng(7)
    in_logits = rng.normal(0, 2, (150, 5)) + 4.0 * np.eye(5)[rng.integers(0, 5, 150)]
    out_logits = rng.normal(0, 1, (90, 5))
    return in_logits, out_logits


def _aurocs(results):
    return {name: (entry["pre"]["auroc"], entry["post"] and entry["post"]["auroc"])
            for name, entry in results["scores"].items()}


# ------------------------------------------------------------------------------------- metrics against references


def _max_prob(logits):
    return 1.0 - _softmax(np.sort(logits, axis=1)).max(axis=1)


@pytest.mark.parametrize("name, reference", [("entropy", _entropy), ("max-prob", _max_prob)])
def test_metrics_match_sklearn_and_the_documented_fpr_convention_with_ties(logits, name, reference):
    in_logits, out_logits = logits
    # Round the logits so that many samples tie (rows repeat, permuted or shifted by a constant): ties are where the
    # conventions differ, and the rounding of a sum taken in another order must not break them.
    in_l, out_l = np.round(in_logits / 2) * 2, np.round(out_logits / 2) * 2
    result = detect_ood(in_l, out_l, scores=name)["scores"][name]["pre"]
    s_in, s_out = reference(in_l), reference(out_l)
    scores = ood_scores(in_l, name)  # the same ties as the reference, not only the same AUROC
    np.testing.assert_allclose(scores, s_in, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(scores[:, None] == scores[None, :], s_in[:, None] == s_in[None, :])
    y = np.r_[np.zeros(len(s_in)), np.ones(len(s_out))]
    s = np.r_[s_in, s_out]
    assert result["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert result["aupr_out"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert result["aupr_in"] == pytest.approx(average_precision_score(1 - y, -s), abs=1e-12)
    assert result["fpr_at_95_tpr"] == pytest.approx(_fpr_at_95_by_hand(s_in, s_out), abs=1e-12)


def test_identical_sets_and_tied_scores_give_auroc_one_half(logits):
    in_logits, _ = logits
    same = detect_ood(in_logits, in_logits, scores="entropy,max-prob,energy")
    assert all(pre == pytest.approx(0.5) for pre, _ in _aurocs(same).values())
    tied = detect_ood(np.zeros((7, 3)), np.ones((4, 3)))["scores"]["entropy"]["pre"]
    assert tied["auroc"] == 0.5 and tied["fpr_at_95_tpr"] == 1.0


# ------------------------------------------------------------------ probabilities in low precision, near-probs


@pytest.mark.parametrize("cast", [lambda p: p.astype(np.float16), lambda p: torch.tensor(p).bfloat16()],
                         ids=["float16", "bfloat16"])
def test_low_precision_probabilities_are_probabilities_not_logits(logits, cast):
    """float16 / bfloat16 probabilities sum to 1 only within their rounding: read as logits, their softmax is nearly
    uniform and the AUROC was that of another model (0.95 instead of 0.97 here)."""
    in_logits, out_logits = logits
    reference = _aurocs(detect_ood(in_logits, out_logits, scores="entropy,max-prob", temperature=2.0))
    got = _aurocs(detect_ood(cast(_softmax(in_logits)), cast(_softmax(out_logits)), scores="entropy,max-prob",
                             temperature=2.0))
    for name in reference:
        assert got[name] == pytest.approx(reference[name], abs=2e-3)
    scores = ood_scores(cast(_softmax(in_logits[:20])), "entropy")
    np.testing.assert_allclose(scores, _entropy(in_logits[:20]), atol=2e-2)
    scaled = ood_scores(cast(_softmax(in_logits[:20])), "entropy", temperature=2.0)
    np.testing.assert_allclose(scaled, _entropy(in_logits[:20] / 2.0), atol=2e-2)


@pytest.mark.parametrize("spoil", [lambda p: 100 * p, lambda p: np.round(p, 2)], ids=["percentages", "rounded"])
def test_near_probabilities_are_refused_not_read_as_logits(logits, spoil):
    in_logits, out_logits = logits
    with pytest.raises(InputError, match="probabilities|percentages"):
        detect_ood(spoil(_softmax(in_logits)), _softmax(out_logits))
    with pytest.raises(InputError, match="probabilities|percentages"):
        ood_scores(spoil(_softmax(in_logits)), "max-prob")


def test_fit_temperature_takes_a_binary_models_one_score_per_sample():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    decision = np.where(labels == 1, 1.0, -1.0) * rng.normal(3.0, 1.0, 200)
    columns = np.stack([np.zeros(200), decision], axis=1)
    assert fit_temperature(decision, labels) == fit_temperature(columns, labels)


# ------------------------------------------------------------------------------------------ options and names


def test_a_temperature_that_overflows_the_logits_is_an_error_naming_it(logits, tmp_path):
    in_logits, out_logits = logits
    with pytest.raises(InputError, match="--temperature"):
        detect_ood(in_logits, out_logits, temperature=1e-308)
    with pytest.raises(InputError, match="--temperature"):
        ood_scores(in_logits, "entropy", temperature=1e-308)
    np.savez(tmp_path / "in.npz", logits=in_logits)
    np.savez(tmp_path / "out.npz", logits=out_logits)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / "in.npz"), "--out-preds",
                                 str(tmp_path / "out.npz"), "--temperature", "1e-308", "--json",
                                 str(tmp_path / "r.json")])
    one_line_error(result, "--temperature")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("scores", [None, 5, [1], b"entropy"])
def test_score_names_that_are_not_strings_are_input_errors(scores):
    with pytest.raises(InputError):
        check_score_names(scores)


def test_missing_names_default_in_the_results(logits):
    in_logits, out_logits = logits
    results = detect_ood(in_logits, out_logits, in_name=None, out_name=None)
    assert (results["in"]["name"], results["out"]["name"]) == ("in", "out")


def test_validation_logits_of_another_width_are_refused_for_fit_temperature(logits, tmp_path):
    in_logits, out_logits = logits
    labels = np.arange(40) % 3
    np.savez(tmp_path / "in.npz", test_logits=in_logits, val_logits=np.eye(3)[labels] * 4.0, val_labels=labels)
    np.savez(tmp_path / "out.npz", logits=out_logits)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / "in.npz"), "--out-preds",
                                 str(tmp_path / "out.npz"), "--fit-temperature", "--json", str(tmp_path / "r.json")])
    one_line_error(result, "validation logits", "got 3")
    assert snapshot(tmp_path) == before


def test_a_report_never_replaces_the_labels_beside_npy_scores(logits, tmp_path):
    in_logits, out_logits = logits
    np.save(tmp_path / "in.npy", in_logits)
    np.save(tmp_path / "labels.npy", np.arange(len(in_logits)) % 5)
    np.save(tmp_path / "out.npy", out_logits)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / "in.npy"), "--out-preds",
                                 str(tmp_path / "out.npy"), "--json", str(tmp_path / "labels.npy")])
    one_line_error(result, "Refusing")
    assert snapshot(tmp_path) == before


def test_the_cli_reads_every_format_alike(logits, tmp_path):
    """npz, pt, csv and jsonl of the same logits give the same report, equal to sklearn's AUROC."""
    in_logits, out_logits = logits
    for stem, values in (("in", in_logits), ("out", out_logits)):
        np.savez(tmp_path / f"{stem}.npz", logits=values)
        torch.save({"logits": torch.tensor(values)}, tmp_path / f"{stem}.pt")
        np.savetxt(tmp_path / f"{stem}.csv", values, delimiter=",", comments="",
                   header=",".join(f"c{k}" for k in range(values.shape[1])))
        (tmp_path / f"{stem}.jsonl").write_text("".join(json.dumps({"logits": row.tolist()}) + "\n" for row in values))
    expected = roc_auc_score(np.r_[np.zeros(len(in_logits)), np.ones(len(out_logits))],
                             np.r_[_entropy(in_logits), _entropy(out_logits)])
    for suffix in ("npz", "pt", "csv", "jsonl"):
        result = runner.invoke(app, ["ood", "--in-preds", str(tmp_path / f"in.{suffix}"), "--out-preds",
                                     str(tmp_path / f"out.{suffix}"), "--json", "-"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["results"]["scores"]["entropy"]["pre"]["auroc"] == pytest.approx(expected, abs=1e-9)


# ----------------------------------------------------------------------------------- from a tiny trained model


@pytest.fixture(scope="module")
def tiny_digits(tmp_path_factory, one_torch_thread):
    """An MLP trained one epoch on 100 digits and evaluated on a 30-image test subset, and Hendrycks-style folders."""
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        result = train(TrainConfig(dataset="digits", model="mlp", loss="ce", epochs=1, train_subset=100,
                                   test_subset=30, out=str(tmp_path_factory.mktemp("runs")), device="cpu"))
    return result.run_dir


def test_a_test_subset_model_scored_on_its_own_dataset_sees_the_same_images(tiny_digits, one_torch_thread):
    """README: a model trained with --test-subset m is compared with m OOD images; with its own dataset as the OOD
    set they are its very m test images (as for CIFAR-10-C), so the two sets' logits agree row for row."""
    with one_torch_thread():
        in_logits, out_logits, info = ood_from_model(tiny_digits, out_name="digits", device="cpu")
        limited = ood_from_model(tiny_digits, out_name="digits", device="cpu", limit=7, seed=3)
    assert in_logits.shape == out_logits.shape == (30, 10)
    np.testing.assert_allclose(in_logits, out_logits, atol=1e-5)
    assert "own 30 digits test-subset images" in info["out_subsample"]["reason"]
    np.testing.assert_allclose(limited[0], limited[1], atol=1e-5)


def test_a_report_never_replaces_a_file_of_the_data_folder(tiny_digits, tmp_path, one_torch_thread):
    data = tmp_path / "data"
    (data / "CIFAR-10-C").mkdir(parents=True)
    np.savez(data / "cifar10.npz", x=np.zeros(3))
    np.save(data / "CIFAR-10-C" / "labels.npy", np.zeros(5, dtype=np.int64))
    images = tmp_path / "images.npz"
    np.savez(images, x=np.zeros((4, 8, 8, 3), dtype=np.uint8))
    before = snapshot(tmp_path)
    with one_torch_thread():
        for target, out in ((data / "cifar10.npz", "digits"), (data / "CIFAR-10-C" / "labels.npy", "digits"),
                            (images, str(images))):
            result = runner.invoke(app, ["ood", "--model", str(tiny_digits), "--out", out, "--data-dir", str(data),
                                         "--device", "cpu", "--json", str(target)])
            one_line_error(result, "Refusing")
        assert snapshot(tmp_path) == before
        # A report of its own in the data folder is replaced on a rerun.
        for _ in range(2):
            result = runner.invoke(app, ["ood", "--model", str(tiny_digits), "--out", "digits", "--data-dir",
                                         str(data), "--device", "cpu", "--json", str(data / "ood.json")])
            assert result.exit_code == 0, result.output


def test_hendrycks_images_without_labels_npy_are_named(tiny_digits, tmp_path):
    folder = tmp_path / "CIFAR-10-C"
    folder.mkdir()
    np.save(folder / "fog.npy", np.zeros((5, 32, 32, 3), dtype=np.uint8))
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["ood", "--model", str(tiny_digits), "--out", "cifar10-c", "--corruption", "fog",
                                 "--data-dir", str(tmp_path), "--device", "cpu", "--no-download"])
    one_line_error(result, "labels.npy")
    assert snapshot(tmp_path) == before
