"""Calibration quality on real CIFAR-10 at CPU scale: CE vs focal (γ = 3) vs FLSD-53 vs AdaFocal, same seed/model/data.

    python benchmarks/quality_cifar10.py                 # the measured protocol below: about 50 minutes on 2 CPU cores
    python benchmarks/quality_cifar10.py --quick         # smoke test: 2 epochs on tiny subsets, about 1-2 minutes
    python benchmarks/quality_cifar10.py --seeds 0,1 --losses ce,adafocal --out /tmp/quality_runs

The paper trains ResNet-50 for 350 epochs on 45,000 images (GPU). Here, to keep its regime — a network that fits its
training data, so that cross-entropy ends up over-confident on test data — we train a CIFAR ResNet-20 on a seeded
5,000-image subset of the training split for 40 epochs (SGD 0.1, momentum 0.9, weight decay 5e-4, batch 128, lr ×0.1
at epochs 20 and 30, crop + flip, the model at the end of training as in the paper), with a 2,000-image validation
split (AdaFocal's γ-update and the temperature fit use it; the paper's is 5,000) and the full 10,000-image test set.
Every loss gets the same seed, hence the same subset, split, initial weights and batch order.

Per run: test error, ECE-EM, ECE-EW, ECE-debias, ECE-sweep-EM before and after temperature scaling (T on the grid
0.1..10 minimising validation ECE-EM, fitted on the run's own validation logits, as the paper does), and OOD AUROC of
the softmax entropy, CIFAR-10 test vs CIFAR-10-C Gaussian noise severity 5 (generated from the test set), before and
after T. Also the reliability diagrams (CE | FL-3 | FLSD-53 | AdaFocal) and AdaFocal's γ dynamics as PNGs in
benchmarks/results/plots/, and everything in benchmarks/results/quality_cifar10.json (written atomically).

Runs go to --out (default /tmp/quality_runs, outside the repository); a finished run with identical options is reused
(so re-running only redoes the analysis), unless --fresh.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import quality_common as qc  # noqa: I001  (sets sys.path to the checkout)
import torch

RESULTS = qc.RESULTS_DIR / "quality_cifar10.json"

PAPER_NOTE = ("The paper's figures (Ghosh et al. 2022, paper/adafocal.tex): CIFAR-10 ResNet-50, 350 epochs on 45k images, "
              "5 seeds, GPU — a different scale, for orientation only; % . * post-T with T fitted on validation ECE-EW; "
              "† CIFAR-10 → CIFAR-10-C Gaussian 5 with ResNet-110 (the paper has no ResNet-50 OOD entry), "
              "post-T with T on ECE-EW. FL-3 has no CIFAR-10 ResNet-50 calibration entry.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--milestones", default=None, help="LR ×0.1 epochs, e.g. 20,30 (default: 50 %% and 75 %%)")
    parser.add_argument("--train-subset", type=int, default=5000)
    parser.add_argument("--val-size", type=int, default=2000)
    parser.add_argument("--test-subset", type=int, default=10000)
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--no-ood", action="store_true", help="skip the CIFAR-10-C OOD scoring")
    qc.add_common_arguments(parser, results=RESULTS)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 2 epochs, 512 train / 256 val, everything under <out>_quick")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        # --test-subset keeps a seeded sample of the (class-sorted) test set, so 2,000 images still hold every class.
        args.epochs, args.train_subset, args.val_size, args.test_subset = 2, 512, 256, 2000
        qc.redirect_quick_outputs(args, results=RESULTS)
    torch.set_num_threads(args.threads)
    losses = qc.parse_losses(args.losses)
    seeds = qc.parse_ints(args.seeds, "--seeds")
    milestones = (tuple(qc.parse_ints(args.milestones, "--milestones")) if args.milestones
                  else tuple(sorted({max(1, round(args.epochs * 0.5)), max(1, round(args.epochs * 0.75))})))
    milestones = tuple(m for m in milestones if m < args.epochs) or ()

    from adacal.training import TrainConfig

    protocol = {
        "dataset": "cifar10", "model": args.model, "epochs": args.epochs, "batch_size": 128, "optimizer": "sgd",
        "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "milestones": list(milestones), "lr_decay": 0.1,
        "train_subset": args.train_subset, "val_size": args.val_size, "test_subset": args.test_subset,
        "select": "last", "update_every": "epoch", "channels_last": True, "augmentation": "random crop (pad 4) + h-flip",
        "seeds": seeds, "losses": {name: {"loss": qc.LOSS_SPECS[name][0], "options": qc.LOSS_SPECS[name][1]}
                                    for name in losses},
        "temperature": "grid 0.1..10 step 0.1 minimising validation ECE-EM (15 equal-mass bins), per run",
        "ood": None if args.no_ood else "softmax entropy, CIFAR-10 test (in) vs CIFAR-10-C gaussian_noise severity 5 (out)",
        "quick": args.quick,
    }
    print(f"adacal quality benchmark — CIFAR-10, {args.model}, {args.train_subset} train / {args.val_size} val / "
          f"{args.test_subset} test, {args.epochs} epochs (milestones {list(milestones)}), seeds {seeds}, "
          f"losses {losses}", flush=True)
    machine = qc.machine_info()
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    for seed in seeds:
        for name in losses:
            loss, options = qc.LOSS_SPECS[name]
            config = TrainConfig(
                dataset="cifar10", model=args.model, loss=loss, loss_options=dict(options), epochs=args.epochs,
                batch_size=128, lr=0.1, milestones=milestones, lr_decay=0.1, momentum=0.9, weight_decay=5e-4,
                optimizer="sgd", seed=seed, device="cpu", channels_last=True, select="last", update_every="epoch",
                train_subset=args.train_subset, val_size=args.val_size, test_subset=args.test_subset,
                data_dir=args.data_dir,
            )
            folder = Path(args.out) / f"cifar10-{args.model}-{name}-s{seed}"
            runs.append(qc.train_and_analyse(
                config, name=name, seed=seed, folder=folder, reuse=not args.fresh,
                score_ood=None if args.no_ood else lambda run, t: score_ood(run, t, args.data_dir)))

    tables = qc.report_tables(runs, losses, paper=qc.PAPER_CIFAR10_RESNET50, paper_note=PAPER_NOTE,
                              with_ood=not args.no_ood)

    setting = f"{args.model}, {args.train_subset} train images, {args.epochs} epochs"
    plots = draw_plots(runs, losses, Path(args.plots), setting=setting)
    qc.write_results(args.results, "benchmark-quality-cifar10", config={
        "protocol": protocol, "argv": sys.argv[1:] if argv is None else list(argv), "out": args.out,
        "data_dir": args.data_dir}, runs=runs, tables=tables, plots=plots, machine=machine, started=started)
    return 0


def score_ood(run_dir: Path, temperature: float, data_dir: str) -> dict[str, Any]:
    """Entropy / max-prob AUROC, CIFAR-10 test vs CIFAR-10-C Gaussian 5, pre and post T.

    Also written as <run>/ood-cifar10-c.json (the report `adacal ood --json` writes), for summarize_runs.py."""
    from adacal.ood import detect_ood, ood_from_model, ood_report
    from adacal.reports import write_json as write

    in_logits, out_logits, info = ood_from_model(run_dir, in_name="cifar10", out_name="cifar10-c",
                                                 severity=5, data_dir=data_dir, device="cpu")
    results = detect_ood(in_logits, out_logits, scores=("entropy", "max-prob"), temperature=temperature,
                         temperature_source="fitted", in_name="cifar10", out_name="cifar10-c")
    write(Path(run_dir) / "ood-cifar10-c.json", ood_report(results, config={
        "in": "cifar10", "out": "cifar10-c", "corruption": info.get("corruption") or "gaussian_noise",
        "severity": 5, "scores": ["entropy", "max-prob"], "model": str(run_dir), "temperature_source": "fitted",
        "written_by": "benchmarks/quality_cifar10.py"}))
    compact = {}
    for score, block in results["scores"].items():
        compact[score] = {phase: None if block[phase] is None else
                          {k: v for k, v in block[phase].items() if k != "roc"} for phase in ("pre", "post")}
    compact["n_in"], compact["n_out"] = results["in"]["n"], results["out"]["n"]
    # CIFAR-10-C is the test set with noise, image for image: how well the model still classifies it says how
    # different the noisy images look to it (an entropy AUROC near 50 % means "not at all").
    from adacal.predictions import load_split_predictions

    test = load_split_predictions(Path(run_dir) / "predictions.npz")["test"]
    if len(test.labels) == len(out_logits):
        compact["accuracy_on_ood_set"] = float((out_logits.argmax(axis=1) == test.labels).mean())
        compact["accuracy_on_test_set"] = float((in_logits.argmax(axis=1) == test.labels).mean())
    return compact


def draw_plots(runs: list[dict[str, Any]], losses: list[str], folder: Path, *, setting: str) -> dict[str, str]:
    """Side-by-side reliability diagrams (first seed) and AdaFocal's γ dynamics, PNG at dpi 100."""
    from adacal.plots import gamma_dynamics, reliability_diagram, reliability_inputs, save_figure

    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    seed = runs[0]["seed"] if runs else 0
    chosen = [next(r for r in runs if r["loss"] == name and r["seed"] == seed) for name in losses
              if any(r["loss"] == name and r["seed"] == seed for r in runs)]
    if chosen:
        labels = [qc.DISPLAY[r["loss"]] for r in chosen]
        for binning in ("equal-width", "equal-mass"):
            panels = reliability_inputs([r["run_dir"] for r in chosen], labels=labels, binning=binning)
            fig = reliability_diagram(panels, title=f"CIFAR-10 test, {setting}, seed {seed}: before temperature "
                                                    f"scaling ({binning} bins)")
            path = folder / f"quality_cifar10_reliability_{binning.replace('-', '_')}.png"
            save_figure(fig, path, dpi=100)
            written[f"reliability_{binning}"] = str(path.relative_to(qc.ROOT) if path.is_relative_to(qc.ROOT) else path)
    for r in runs:
        if r["loss"] == "adafocal" and r["seed"] == seed and "adafocal_final_bins" in r:
            fig = gamma_dynamics(qc.read_history(Path(r["run_dir"])), qc.GAMMA_PLOT_BINS,
                                 title=f"AdaFocal on CIFAR-10 ({setting}, seed {seed}): E_val and γ per bin")
            path = folder / "quality_cifar10_adafocal_gamma.png"
            save_figure(fig, path, dpi=100)
            written["adafocal_gamma"] = str(path.relative_to(qc.ROOT) if path.is_relative_to(qc.ROOT) else path)
    import matplotlib.pyplot as plt

    plt.close("all")
    return written


if __name__ == "__main__":
    sys.exit(main())
