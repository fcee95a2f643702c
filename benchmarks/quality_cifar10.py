"""Calibration quality on real CIFAR-10 at CPU scale: CE vs focal (γ = 3) vs FLSD-53 vs AdaFocal, ResNet-20, 3 seeds.

    python benchmarks/quality_cifar10.py --jobs 2 --commit     # the grid below; resumes where it stopped
    python benchmarks/quality_cifar10.py --seeds 0 --arms mean  # one seed of one arm
    python benchmarks/quality_cifar10.py --summary-only         # rebuild the summary and figures, train nothing
    python benchmarks/quality_cifar10.py --quick                # smoke test: 2 epochs on tiny subsets, ~2 minutes
    python benchmarks/quality_cifar10.py --protocol gpu --jobs 5   # the GPU protocol (below), on a GPU

The protocol (what `adacal train --dataset cifar10 --model resnet20 --train-subset 10000 --epochs 30
--milestones 15,25 --channels-last` does): a CIFAR ResNet-20 trained on a seeded 10,000-image subset of the training
split for 30 epochs (SGD 0.1, momentum 0.9, weight decay 5e-4, batch 128, lr ×0.1 at epochs 15 and 25, crop + flip,
channels-last, the model at the end of training as in the paper), with 5,000 validation images (AdaFocal's γ-update
and the temperature fits use them) and the full 10,000-image test set; seeds 0, 1, 2, every loss with the same seeds
(same subset, split, initial weights and batch order). About 22 minutes a run on one core. The paper trains ResNet-50
for 350 epochs on 45,000 images; this keeps its regime (a network that fits its training data, so that cross-entropy
ends up over-confident) at CPU scale. Arms: "mean" (adacal's default dynamics) and "sum-clip" (the reference code's:
loss summed over the batch, gradient norm clipped to 2), the latter where this adacal has those options (`--arms`).

Per run (benchmarks/results/quality_runs/cifar10/<loss>-<arm>-seed<k>.json, written as soon as the run ends): test
error, NLL, ECE-EM, ECE-EW, ECE-debias, ECE-sweep-EM before and after temperature scaling, with T fitted on the run's
validation logits twice — the paper's grid 0.1..10 minimising ECE-EM, and minimising NLL — the OOD AUROC of the softmax
entropy, CIFAR-10 test vs CIFAR-10-C Gaussian noise severity 5, before and after T (grid), the reliability bins, the
training curves and AdaFocal's γ-updates. A run whose result file holds the key of the current options is skipped, so
the grid resumes across sessions and machines. The summary (mean ± std over seeds per loss and arm) goes to
benchmarks/results/quality_cifar10.json and the figures to benchmarks/results/plots/quality_cifar10_*.png, rebuilt
from the result files.

The GPU protocol (`--protocol gpu`; benchmarks/gpu_slice.py trains it a slice of GPU time at a time): the paper's data
regime — the whole 45,000-image training split (no subset), 5,000 validation and the 10,000 test images — for CE,
FL-3, FLSD-53, AdaFocal with the paper's defaults and AdaFocal γ0 = 0, λ = 3 (the README's recommendation), one arm
(mean, unless --arms), ResNet-20, 30 epochs with lr ×0.1 at 15 and 25 (the CPU protocol's fractions, 0.5 and 0.83),
float32 on CUDA (TF32 off; no AMP: a launch-bound ResNet-20 gains nothing from it, and every loss must share it).
Results go to benchmarks/results/quality_runs/cifar10-gpu/, the summary to quality_cifar10_gpu.json and the figures
to plots/quality_cifar10_gpu_*.png. --model, --epochs and --milestones override it (each changes the result key).

Why ResNet-20 and 30 epochs: one GPU slice is at most 10 minutes a command, and one seed of every loss must finish in
one. The only figure measured so far: on an H100, a 10,000-image, 30-epoch ResNet-20 run of the CPU protocol took
about 2 minutes with six runs sharing the GPU. A run's epoch there is 10,000 training images plus a 5,000-image
validation pass (a forward pass, ~1/3 of a training image's cost): 11,700 image-equivalents; 30 epochs are 350,000,
and with ~20 s of the 2 minutes spent starting, scoring and analysing, each run trained at ~3,500 image-equivalents
a second while five others shared the GPU (~21,000 a second in all). Here an epoch is 45,000 + 5,000/3 = 46,700, so
with five runs sharing the GPU at the same per-run rate an epoch takes ~13 s (11 s if the GPU's total rate is what
bounds it). 30 epochs: ~400 s, plus ~30 s a run of start-up and scoring: ~7.2 minutes for one seed of all five
losses with --jobs 5, inside a 9-minute command that skips the CUDA tests and the speed benchmark (a first slice that
runs them too leaves its cells to finish in the next: their checkpoints come back and resume). ResNet-110 costs ~5.5×
ResNet-20 an image (~6 epochs in a slice); 30 epochs of ResNet-20 is as long a schedule as a slice holds. gpu_slice.py
prints every epoch's measured time and the epochs per slice they imply, so the next slice can correct this estimate.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

import quality_common as qc  # noqa: I001  (sets sys.path to the checkout)

DATASET = "cifar10"
RESULTS = qc.RESULTS_DIR / "quality_cifar10.json"
GPU_RESULTS = qc.RESULTS_DIR / "quality_cifar10_gpu.json"
CIFAR10_TRAIN = 50000  # images in CIFAR-10's official training set (train + validation splits)
# protocol -> its defaults (the options left unset on the command line take these)
PROTOCOLS: dict[str, dict[str, Any]] = {
    "cpu": {"epochs": 30, "train_subset": 10000, "val_size": 5000, "model": "resnet20",
            "losses": "ce,focal-3,flsd-53,adafocal", "arms": None, "device": "cpu", "jobs": 1,
            "runs_dir": qc.RUNS_DIR / DATASET, "results": RESULTS, "slug": DATASET, "out": "/tmp/quality_runs"},
    "gpu": {"epochs": 30, "train_subset": None, "val_size": 5000, "model": "resnet20",
            "losses": "ce,focal-3,flsd-53,adafocal,adafocal-g0-lam3", "arms": "mean", "device": "cuda", "jobs": 5,
            "runs_dir": qc.RUNS_DIR / f"{DATASET}-gpu", "results": GPU_RESULTS, "slug": f"{DATASET}_gpu",
            "out": "/tmp/quality_runs_gpu"},
}

PAPER_NOTE = ("The paper's figures (Ghosh et al. 2022, paper/adafocal.tex): CIFAR-10 ResNet-50, 350 epochs on 45k "
              "images, 5 seeds, GPU — a different scale, for orientation only; % . * post-T with T fitted on "
              "validation ECE-EW; † CIFAR-10 → CIFAR-10-C Gaussian 5 with ResNet-110 (the paper has no ResNet-50 OOD "
              "entry), post-T with T on ECE-EW. FL-3 has no CIFAR-10 ResNet-50 calibration entry.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", choices=tuple(PROTOCOLS), default="cpu",
                        help="cpu (default): 10,000 training images; gpu: the whole 45,000-image split (see above)")
    parser.add_argument("--epochs", type=int, default=None, help="default 30")
    parser.add_argument("--milestones", default=None,
                        help="LR ×0.1 epochs, e.g. 15,25 (default: 15,25 for 30 epochs, the same fractions otherwise)")
    parser.add_argument("--train-subset", type=int, default=None,
                        help="seeded training subset (default 10000; the whole split with --protocol gpu)")
    parser.add_argument("--val-size", type=int, default=None, help="default 5000")
    parser.add_argument("--test-subset", type=int, default=None, help="seeded test subset (default: all 10,000)")
    parser.add_argument("--model", default=None, help="default resnet20")
    parser.add_argument("--no-ood", action="store_true", help="skip the CIFAR-10-C OOD scoring")
    qc.add_common_arguments(parser, results=RESULTS, dataset=DATASET)
    for name in ("losses", "arms", "device", "jobs", "runs_dir", "results", "out"):
        parser.set_defaults(**{name: None})  # each protocol has its own (PROTOCOLS)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 2 epochs, 512 train / 256 val / 2,000 test, everything under <out>_quick")
    return parser


def resolve_protocol(args: argparse.Namespace) -> argparse.Namespace:
    """Fill the options left unset with the chosen protocol's defaults (PROTOCOLS); returns `args`."""
    defaults = PROTOCOLS[args.protocol]
    for name, value in defaults.items():
        if name != "slug" and getattr(args, name, None) is None:
            setattr(args, name, str(value) if isinstance(value, Path) else value)
    if args.protocol == "cpu" and args.train_subset is None:
        args.train_subset = defaults["train_subset"]
    return args


def grid(argv: list[str] | None = None) -> dict[str, Any]:
    """The benchmark as this command line defines it, without running anything: `args`, `make_config`,
    `folder_name`, `protocol` (the summary's record of it), `title`, `slug` and `results` (the default summary path).
    benchmarks/gpu_slice.py lists the cells to train from it."""
    args = resolve_protocol(build_parser().parse_args(argv))
    results = PROTOCOLS[args.protocol]["results"]
    if args.quick:
        # --test-subset keeps a seeded sample of the (class-sorted) test set, so 2,000 images still hold every class.
        args.epochs, args.train_subset, args.val_size, args.test_subset = 2, 512, 256, 2000
        qc.redirect_quick_outputs(args, results=results, dataset=DATASET,
                                  runs_dir=PROTOCOLS[args.protocol]["runs_dir"])
    if args.epochs < 1:
        raise SystemExit(f"Error: expected --epochs to be a positive integer, got {args.epochs}.")
    milestones = (tuple(qc.parse_ints(args.milestones, "--milestones")) if args.milestones
                  else tuple(sorted({max(1, round(args.epochs * 15 / 30)), max(1, round(args.epochs * 25 / 30))})))
    milestones = tuple(m for m in milestones if m < args.epochs) or ()
    train_images = args.train_subset or CIFAR10_TRAIN - args.val_size

    from adacal.training import TrainConfig

    fields = qc.train_config_fields()

    def make_config(name: str, arm: str, seed: int) -> TrainConfig:
        loss, options = qc.LOSS_SPECS[name]
        return TrainConfig(
            dataset=DATASET, model=args.model, loss=loss, loss_options=dict(options), epochs=args.epochs,
            batch_size=128, lr=0.1, milestones=milestones, lr_decay=0.1, momentum=0.9, weight_decay=5e-4,
            optimizer="sgd", seed=seed, device=args.device, channels_last=True, select="last",
            update_every=qc.variant_schedule(name, epochs=args.epochs, milestones=milestones,
                                             batches_per_epoch=-(-train_images // 128), default="epoch"),
            train_subset=args.train_subset, val_size=args.val_size, test_subset=args.test_subset,
            data_dir=args.data_dir, **qc.arm_options(arm, fields))

    def folder_name(name: str, arm: str, seed: int) -> str:
        # The mean arm's folders carry no arm suffix, so run folders named without one are found and reused.
        return f"{DATASET}-{args.model}-{name}" + ("" if arm == "mean" else f"-{arm}") + f"-s{seed}"

    protocol = {
        "dataset": DATASET, "model": args.model, "epochs": args.epochs, "batch_size": 128, "optimizer": "sgd",
        "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "milestones": list(milestones), "lr_decay": 0.1,
        "train_subset": args.train_subset, "val_size": args.val_size, "test_subset": args.test_subset,
        "select": "last", "update_every": "epoch", "channels_last": True,
        "augmentation": "random crop (pad 4) + h-flip",
        "losses": qc.loss_protocol(),
        "temperature": "per run, on its validation logits: grid 0.1..10 step 0.1 minimising ECE-EM (15 equal-mass "
                       "bins), and the T minimising NLL",
        "ood": None if args.no_ood else "softmax entropy, CIFAR-10 test (in) vs CIFAR-10-C gaussian_noise severity 5 "
                                        "(out)",
        "quick": args.quick,
    }
    if args.protocol != "cpu":
        protocol["protocol"] = args.protocol
    images = f"{args.train_subset} train images" if args.train_subset else f"all {train_images} train images"
    title = f"CIFAR-10, {args.model}, {images}, {args.epochs} epochs"
    return {"args": args, "make_config": make_config, "folder_name": folder_name, "protocol": protocol,
            "title": title, "slug": PROTOCOLS[args.protocol]["slug"], "results": results}


def main(argv: list[str] | None = None) -> int:
    benchmark = grid(argv)
    args = benchmark["args"]
    return qc.run_benchmark(args, argv, dataset=DATASET, kind="benchmark-quality-cifar10", slug=benchmark["slug"],
                            title=benchmark["title"], make_config=benchmark["make_config"],
                            folder_name=benchmark["folder_name"], protocol=benchmark["protocol"],
                            paper=qc.PAPER_CIFAR10_RESNET50, paper_note=PAPER_NOTE,
                            later_papers=qc.LATER_PAPERS_CIFAR10,
                            score_ood=None if args.no_ood else functools.partial(score_ood, data_dir=args.data_dir,
                                                                                  device=args.device))


def score_ood(run_dir: Path, temperature: float, data_dir: str, device: str = "cpu") -> dict[str, Any]:
    """Entropy / max-prob AUROC, CIFAR-10 test vs CIFAR-10-C Gaussian 5, pre and post T.

    Also written as <run>/ood-cifar10-c.json (the report `adacal ood --json` writes), for summarize_runs.py."""
    from adacal.ood import detect_ood, ood_from_model, ood_report
    from adacal.reports import write_json as write

    in_logits, out_logits, info = ood_from_model(run_dir, in_name="cifar10", out_name="cifar10-c",
                                                 severity=5, data_dir=data_dir, device=device)
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


if __name__ == "__main__":
    sys.exit(main())
