"""Language-model evaluations through adacal: a synthetic lm-evaluation-harness dump, read and reported.

    python benchmarks/bench_llm.py                       # 100,000 questions (about a minute on 2 busy cores)
    python benchmarks/bench_llm.py --n 20000 --repeats 3 --no-model

1. The dump. `write_harness_dump` writes `samples_<task>_<date>.jsonl` files exactly as lm-evaluation-harness
   v0.4.3+ writes them with `--log_samples` (evaluation_tracker.save_results_samples: `arguments` as
   {"gen_args_i": {"arg_0": context, "arg_1": continuation}}, every response leaf a string, `target` a string):
   four MMLU subjects and HellaSwag with 4 options and ARC-Challenge with 3 to 5 (ragged). The model is
   over-confident by construction: each option has a latent score z, the gold answer is drawn from softmax(z) (so
   softmax(z) is calibrated), and the file's log-likelihoods are 2 z (temperature 0.5) shifted by a per-question
   constant, so temperature scaling should find T ≈ 2.
2. Speed (`--n` questions of 4 options in one file): `adacal evaluate` as a library call (`run_evaluate`: reading,
   the kind rule, every default metric, the report) against the floor of reading the same file with `json` and
   computing ECE-EW in numpy; medians of `--repeats`, and the ratio. The two ECE-EW figures must agree (a check that
   both read the same numbers).
3. The folder read as one input: every task (ragged, so top-label confidences, the task per sample), reported per
   task (`--group-by task`); and temperature scaling on the fixed-K tasks: T fitted on half the questions, ECE-EW
   before and after on the other half.
4. Unless `--no-model`: the whole path from a real (tiny, randomly initialised, offline) causal language model: a
   GPT-2 built from a config scores every option of `--model-n` questions by its summed token log-likelihood, as the
   harness's loglikelihood requests do; the log-likelihoods are written as a harness dump and read back by
   `run_evaluate`, whose argmax accuracy must equal the model's own.

Results are written (atomically) to benchmarks/results/bench_llm.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from adacal import __version__  # noqa: E402
from adacal.reports import write_json  # noqa: E402

DATE = "2026-12-02T01-00-00.000000"
# (task, options per question: an int, or (low, high) for ragged questions)
TASKS = (("mmlu_abstract_algebra", 4), ("mmlu_anatomy", 4), ("mmlu_astronomy", 4), ("mmlu_virology", 4),
         ("hellaswag", 4), ("arc_challenge", (3, 5)))
WORDS = ("the", "cell", "orbit", "prime", "virus", "group", "ring", "field", "muscle", "star", "comet", "bone")
OVERCONFIDENCE = 2.0  # the file's log-likelihoods are this times the calibrated latent scores
N_BINS = 15


def _sanitize(value: Any) -> Any:
    """lm_eval.utils.sanitize_list: every leaf as a string, lists and tuples kept."""
    if isinstance(value, (list, tuple)):
        return [_sanitize(item) for item in value]
    return str(value)


def harness_line(doc_id: int, question: str, choices: list[str], loglikelihoods: np.ndarray, gold: int) -> str:
    """One line of a v0.4.3+ samples file for a multiple-choice doc."""
    greedy = int(np.argmax(loglikelihoods))
    lengths = np.array([len(choice) for choice in choices], dtype=float)
    arguments = {f"gen_args_{i}": {"arg_0": f"Question: {question}\nAnswer:", "arg_1": f" {choice}"}
                 for i, choice in enumerate(choices)}
    sample = {
        "doc_id": doc_id, "doc": {"question": question, "choices": choices, "answer": gold}, "target": str(gold),
        "arguments": arguments,
        "resps": _sanitize([[(float(ll), i == greedy)] for i, ll in enumerate(loglikelihoods)]),
        "filtered_resps": _sanitize([(float(ll), i == greedy) for i, ll in enumerate(loglikelihoods)]),
        "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": f"{doc_id:064x}", "prompt_hash": "0" * 64,
        "target_hash": "1" * 64, "acc": float(greedy == gold),
        "acc_norm": float(int(np.argmax(loglikelihoods / lengths)) == gold),
    }
    return json.dumps(sample, ensure_ascii=False) + "\n"


def write_task(path: Path, n: int, options: int | tuple[int, int], rng: np.random.Generator) -> dict[str, Any]:
    """`n` questions of one task, over-confident by construction; returns the latent truth for checks."""
    lines, latent, labels = [], [], []
    for doc_id in range(n):
        k = options if isinstance(options, int) else int(rng.integers(options[0], options[1] + 1))
        z = rng.normal(0.0, 1.2, k)
        p = np.exp(z - z.max())
        gold = int(rng.choice(k, p=p / p.sum()))
        loglikelihoods = OVERCONFIDENCE * z - rng.uniform(8.0, 30.0) - OVERCONFIDENCE * z.max()
        choices = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)))) + f" {i}" for i in range(k)]
        lines.append(harness_line(doc_id, f"q{doc_id}?", choices, loglikelihoods, gold))
        latent.append(z)
        labels.append(gold)
    path.write_text("".join(lines), encoding="utf-8")
    return {"path": path, "latent": latent, "labels": np.asarray(labels)}


def write_harness_dump(folder: Path, n_per_task: int, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Every task of TASKS as `folder/samples_<task>_<date>.jsonl`; {task: its latent truth}."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    return {task: write_task(folder / f"samples_{task}_{DATE}.jsonl", n_per_task, options, rng)
            for task, options in TASKS}


def numpy_floor(path: Path) -> tuple[float, float]:
    """(ECE-EW, accuracy) of a fixed-K samples file read with `json` and measured in numpy: the floor of the work."""
    rows, labels = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            sample = json.loads(line)
            rows.append([float(pair[0]) for pair in sample["filtered_resps"]])
            labels.append(int(sample["target"]))
    scores, target = np.asarray(rows), np.asarray(labels)
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs = scores / scores.sum(axis=1, keepdims=True)
    confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == target
    bins = np.minimum((confidence * N_BINS).astype(np.int64), N_BINS - 1)
    gap = np.abs(np.bincount(bins, weights=confidence, minlength=N_BINS)
                 - np.bincount(bins, weights=correct, minlength=N_BINS))
    return float(gap.sum() / len(target)), float(correct.mean())


def _median_time(call: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def speed_section(folder: Path, n: int, repeats: int) -> dict[str, Any]:
    from adacal.commands import run_evaluate

    path = write_task(folder / f"samples_mmlu_speed_{DATE}.jsonl", n, 4, np.random.default_rng(1))["path"]
    run_evaluate(path)  # the first call imports what the command needs (torch among it): not the reading's cost
    adacal_s, run = _median_time(lambda: run_evaluate(path), repeats)
    floor_s, (floor_ece, floor_accuracy) = _median_time(lambda: numpy_floor(path), repeats)
    metrics = run.report["results"]["metrics"]
    return {
        "n_questions": n, "file_mb": round(path.stat().st_size / 2**20, 1), "adacal_evaluate_s": adacal_s,
        "json_numpy_ece_s": floor_s, "ratio": adacal_s / floor_s, "adacal_ece_ew": metrics["ece_ew"],
        "numpy_ece_ew": floor_ece, "adacal_accuracy": 1.0 - metrics["error"], "numpy_accuracy": floor_accuracy,
        "metrics_reported": len(metrics),
    }


def folder_section(folder: Path, n_per_task: int) -> dict[str, Any]:
    from adacal.calibrators import build_calibrator
    from adacal.commands import run_evaluate
    from adacal.interpretation import load_predictions
    from adacal.metrics import ece_ew

    dump = folder / "dump"
    write_harness_dump(dump, n_per_task)
    start = time.perf_counter()
    run = run_evaluate(dump, group_by="task")
    folder_s = time.perf_counter() - start
    groups = run.report["results"]["groups"]
    per_task = {row["group"]: {"n": row["n_samples"], "accuracy": row["accuracy"],
                               "ece_ew": row["metrics"].get("ece_ew")} for row in groups["rows"]}
    # Temperature scaling on the fixed-K MMLU tasks: fitted on the first half, judged on the second.
    fixed = load_predictions(dump / f"samples_mmlu_anatomy_{DATE}.jsonl")
    half = len(fixed) // 2
    scaler = build_calibrator("temperature").fit(fixed.logits[:half], fixed.labels[:half], scores_kind="logits")
    after = scaler.transform(fixed.logits[half:])
    return {
        "tasks": len(TASKS), "questions": n_per_task * len(TASKS), "kind": run.report["results"]["input"]["kind"],
        "evaluate_s": folder_s, "per_task": per_task, "temperature": float(scaler.temperature_),
        "true_temperature": OVERCONFIDENCE,
        "ece_ew_before": ece_ew(fixed.logits[half:], fixed.labels[half:], scores_kind="logits"),
        "ece_ew_after": ece_ew(after, fixed.labels[half:], scores_kind="probs"),
    }


def model_section(folder: Path, n: int, seed: int = 0) -> dict[str, Any]:
    """A tiny offline GPT-2 scores every option by its summed token log-likelihood; adacal reads the dump."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from adacal.commands import run_evaluate

    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
                                       eos_token_id=0)).eval()
    rng = np.random.default_rng(seed)
    lines, own_correct = [], 0
    start = time.perf_counter()
    for doc_id in range(n):
        question = " ".join(rng.choice(WORDS, size=3))
        choices = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 3)))) for _ in range(4)]
        gold = int(rng.integers(4))
        context = list(f"Question: {question}\nAnswer:".encode())
        loglikelihoods = []
        for choice in choices:
            continuation = list(f" {choice}".encode())
            tokens = torch.tensor([context + continuation])
            with torch.inference_mode():
                log_probs = torch.log_softmax(model(tokens).logits[0, :-1].double(), dim=-1)
            targets = tokens[0, 1:]
            picked = log_probs[torch.arange(len(targets)), targets][len(context) - 1:]
            loglikelihoods.append(float(picked.sum()))
        loglikelihoods = np.asarray(loglikelihoods)
        own_correct += int(np.argmax(loglikelihoods) == gold)
        lines.append(harness_line(doc_id, question, choices, loglikelihoods, gold))
    scoring_s = time.perf_counter() - start
    path = folder / f"samples_tiny_gpt2_{DATE}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    metrics = run_evaluate(path).report["results"]["metrics"]
    return {"questions": n, "scoring_s": scoring_s, "model_accuracy": own_correct / n,
            "adacal_accuracy": 1.0 - metrics["error"], "ece_ew": metrics["ece_ew"], "nll": metrics["nll"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="questions of the speed file (default 100,000)")
    parser.add_argument("--per-task", type=int, default=2_000, help="questions per task of the dump (default 2,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-n", type=int, default=100, help="questions the tiny GPT-2 scores (default 100)")
    parser.add_argument("--no-model", action="store_true", help="skip the tiny language model section")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_llm.json")
    args = parser.parse_args(argv)
    for name in ("n", "per_task", "repeats", "model_n"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        speed = speed_section(folder, args.n, args.repeats)
        print(f"1. {speed['n_questions']:,} questions ({speed['file_mb']} MB): adacal evaluate "
              f"{speed['adacal_evaluate_s']:.2f} s ({speed['metrics_reported']} metrics and the report) vs json + "
              f"numpy ECE {speed['json_numpy_ece_s']:.2f} s: {speed['ratio']:.1f}x; ECE-EW "
              f"{speed['adacal_ece_ew']:.6f} vs {speed['numpy_ece_ew']:.6f}")
        dump = folder_section(folder, args.per_task)
        print(f"2. folder of {dump['tasks']} tasks, {dump['questions']:,} questions ({dump['kind']}): evaluate "
              f"--group-by task {dump['evaluate_s']:.2f} s; temperature {dump['temperature']:.2f} (truth "
              f"{dump['true_temperature']}), ECE-EW {dump['ece_ew_before']:.4f} -> {dump['ece_ew_after']:.4f}")
        for task, row in dump["per_task"].items():
            print(f"   {task:<24} n={row['n']:>6}  accuracy {row['accuracy']:.3f}  ECE-EW {row['ece_ew']:.4f}")
        model = None if args.no_model else model_section(folder, args.model_n)
        if model:
            print(f"3. tiny GPT-2, {model['questions']} questions scored in {model['scoring_s']:.1f} s: accuracy "
                  f"{model['model_accuracy']:.3f} (adacal reads {model['adacal_accuracy']:.3f}), ECE-EW "
                  f"{model['ece_ew']:.4f}")
    result = {"benchmark": "bench_llm", "adacal_version": __version__, "python": platform.python_version(),
              "machine": platform.machine(), "speed": speed, "folder": dump, "model": model}
    write_json(args.out, result)
    return result


if __name__ == "__main__":
    main()
