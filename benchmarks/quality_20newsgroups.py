"""Calibration quality on real 20 Newsgroups at CPU scale: CE vs focal (γ = 3) vs FLSD-53 vs AdaFocal, text CNN, \
3 seeds.

    python benchmarks/quality_20newsgroups.py --jobs 2 --commit   # the grid below; resumes where it stopped
    python benchmarks/quality_20newsgroups.py --summary-only      # rebuild the summary and figures, train nothing
    python benchmarks/quality_20newsgroups.py --quick             # smoke test: 1 epoch on 1,000 documents, ~1-2 minutes

The paper trains a global-pooling CNN with GloVe embeddings, Adam lr 1e-3, 50 epochs, on 15,098 / 900 / 3,999
documents. Here: adacal's `textcnn` (embedding 100, Conv1d 3/4/5 × 100, max over time, dropout 0.5) with embeddings
trained from scratch (no GloVe file offline), on adacal's bydate split (train less a seeded 900 for validation / the
bydate test set of 7,532), Adam lr 1e-3, batch 128, the model at the end of training, 6 epochs instead of 50 (about
7-8 minutes a run on one core). Since 6 per-epoch γ-updates would leave AdaFocal almost no room to adapt, its γ is
updated every 16 batches (~5 per epoch, ~30 in all, the paper's appendix "AdaFocal-n" variant; `--update-every
epoch` restores the per-epoch default). Seeds 0, 1, 2; every loss gets the same seeds (same split, initial weights and
batch order). Arms: "mean" (adacal's default dynamics) and "sum-clip" (the reference code's: loss summed over the
batch, gradient norm clipped to 2), the latter where this adacal has those options (`--arms`).

Per run (benchmarks/results/quality_runs/20newsgroups/<loss>-<arm>-seed<k>.json, written as soon as the run ends):
test error, NLL, ECE-EM, ECE-EW, ECE-debias, ECE-sweep-EM before and after temperature scaling, with T fitted on the
run's validation logits twice — the paper's grid 0.1..10 minimising ECE-EM, and minimising NLL — plus the
reliability bins, the training curves and AdaFocal's γ-updates. A run whose result file holds the key of the current
options is skipped, so the grid resumes across sessions and machines. No OOD test for text (the paper has none).
The summary (mean ± std over seeds per loss and arm) goes to benchmarks/results/quality_20newsgroups.json and the
figures to benchmarks/results/plots/quality_20newsgroups_*.png, rebuilt from the result files.
"""

from __future__ import annotations

import argparse
import sys

import quality_common as qc  # noqa: I001  (sets sys.path to the checkout)

DATASET = "20newsgroups"
# Training documents after the validation split (11,314 in the bydate training set, less --val-size 900).
TRAIN_DOCUMENTS = 10414
RESULTS = qc.RESULTS_DIR / "quality_20newsgroups.json"
PAPER_NOTE = ("The paper's figures (Ghosh et al. 2022, paper/adafocal.tex): 20 Newsgroups, global-pooling CNN with "
              "GloVe, 50 epochs, 15,098 / 900 / 3,999 documents, 5 seeds — a different scale, for orientation; %. "
              "* post-T with T fitted on validation ECE-EW. FL-3 has no 20 Newsgroups entry.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--train-subset", type=int, default=None, help="seeded training subset (default: all 10,414)")
    parser.add_argument("--val-size", type=int, default=900)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--update-every", default="16",
                        help="AdaFocal's γ-update schedule (adacal --update-every); default every 16 batches: ~5 per "
                             "epoch, ~30 updates in 6 epochs, near the paper's 50 per-epoch updates in 50 epochs")
    qc.add_common_arguments(parser, results=RESULTS, dataset=DATASET)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 epoch on 1,000 documents, γ-update every 4 batches, everything under "
                             "<out>_quick")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        # 1,000 documents are 8 batches: update γ every 4 so the smoke test exercises the γ-update and its plot.
        args.epochs, args.train_subset, args.update_every = 1, 1000, "4"
        qc.redirect_quick_outputs(args, results=RESULTS, dataset=DATASET)

    from adacal.training import TrainConfig

    fields = qc.train_config_fields()

    def make_config(name: str, arm: str, seed: int) -> TrainConfig:
        loss, options = qc.LOSS_SPECS[name]
        return TrainConfig(
            dataset=DATASET, model="textcnn", loss=loss, loss_options=dict(options), epochs=args.epochs,
            batch_size=args.batch_size, lr=1e-3, milestones=(), optimizer="adam", weight_decay=0.0, seed=seed,
            device=args.device, select="last", train_subset=args.train_subset,
            update_every=qc.variant_schedule(
                name, epochs=args.epochs, milestones=(), default=args.update_every,
                batches_per_epoch=-(-(args.train_subset or TRAIN_DOCUMENTS) // args.batch_size)),
            val_size=args.val_size, data_dir=args.data_dir, **qc.arm_options(arm, fields))

    def folder_name(name: str, arm: str, seed: int) -> str:
        # The mean arm's folders carry no arm suffix, so run folders named without one are found and reused.
        return f"{DATASET}-textcnn-{name}" + ("" if arm == "mean" else f"-{arm}") + f"-s{seed}"

    protocol = {
        "dataset": DATASET, "model": "textcnn", "embeddings": "trained from scratch (dim 100; no GloVe offline)",
        "epochs": args.epochs, "batch_size": args.batch_size, "optimizer": "adam", "lr": 1e-3, "weight_decay": 0.0,
        "milestones": [], "train_subset": args.train_subset, "val_size": args.val_size, "test": "bydate test, 7,532",
        "select": "last", "update_every": args.update_every,
        "losses": qc.loss_protocol(),
        "temperature": "per run, on its validation logits: grid 0.1..10 step 0.1 minimising ECE-EM (15 equal-mass "
                       "bins), and the T minimising NLL",
        "ood": None, "quick": args.quick,
    }
    title = f"20 Newsgroups, text CNN, {args.epochs} epoch" + ("s" if args.epochs != 1 else "")
    return qc.run_benchmark(args, argv, dataset=DATASET, kind="benchmark-quality-20newsgroups", slug=DATASET,
                            title=title, make_config=make_config, folder_name=folder_name, protocol=protocol,
                            paper=qc.PAPER_20NG_CNN, paper_note=PAPER_NOTE)


if __name__ == "__main__":
    sys.exit(main())
