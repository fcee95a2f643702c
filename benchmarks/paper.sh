#!/usr/bin/env bash
# The paper's full CIFAR-10 ResNet-50 protocol on a GPU: every loss × seed, then temperature scaling, OOD, a summary.
#
#   bash benchmarks/paper.sh --data /path/to/data --out runs/paper --seeds "0 1 2 3 4"
#   bash benchmarks/paper.sh --losses "ce adafocal" --seeds 0              # a subset
#   bash benchmarks/paper.sh --dry-run                                      # print the commands only
#   bash benchmarks/paper.sh --summary-only --out /tmp/quality_runs         # just the table of finished runs
#
# Per loss L (ce, focal-3, flsd-53, adafocal, brier, ls-0.05, mmce) and seed S:
#   adacal train --dataset cifar10 --model resnet50 --preset paper --loss L ... --device cuda --amp --channels-last
#       (the paper preset: 45k/5k/10k split, SGD 0.1 momentum 0.9, wd 5e-4, batch 128, 350 epochs, lr ×0.1 at 150
#        and 250, crop + flip, the model at the end of training)
#   adacal calibrate RUN --method temperature          (T on the grid 0.1..10 minimising validation ECE-EM)
#   adacal ood --in cifar10 --out svhn --model RUN     (only when <data>/svhn.npz exists, or with --download)
#   adacal ood --in cifar10 --out cifar10-c --severity 5 --model RUN   (Gaussian noise, generated from the test set)
# and finally benchmarks/summarize_runs.py prints mean ± std over seeds (and writes <out>/summary.json).
# Each (loss, seed) trains into its own folder <out>/<loss>-s<seed>/<run>; re-running the script skips finished steps
# and resumes an interrupted training from its last checkpoint (`adacal train --resume`).
#
# Cost (estimate, not measured here): the paper reports 79 s/epoch for ResNet-50 on a Titan X, i.e. ~7.7 h per run;
# with --amp and --channels-last on an H100 expect roughly 10-20 s/epoch, 1-2 h per run: 7 losses × 5 seeds is
# 35-70 GPU-hours. Run it on a machine you hold that long; a 30-minute device session fits about one short smoke run
# (e.g. `--epochs 2 --extra "--train-subset 5000"`).
#
# Machine notes for this project's lent GPU machines:
# - they have torch 2.11 (adacal works with 2.11-2.x; nothing here needs more);
# - they cannot download: the data must travel with the working tree, at most 64 MiB in all per call. cifar10.npz is
#   170 MB, so it travels JPEG-packed (31 MiB, ~47 dB PSNR against the shared copy) and is unpacked there:
#     here:  echo /.data/ >> .git/info/exclude
#            python benchmarks/pack_cifar10.py pack ../shared/data/cifar10.npz .data/cifar10.jpeg.npz
#     there (run with carry [".data"]):  python benchmarks/pack_cifar10.py unpack .data/cifar10.jpeg.npz \
#            /tmp/data/cifar10.npz && bash benchmarks/paper.sh --data /tmp/data ...
#   SVHN is not in ../shared/data: without it the SVHN OOD step is skipped (with a message).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${ADACAL_DATA:-$ROOT/../shared/data}"
OUT="runs/paper"
SEEDS="0"
LOSSES="ce focal-3 flsd-53 adafocal brier ls-0.05 mmce"
DEVICE="cuda"
EPOCHS=""
MODEL="resnet50"
OOD_LIMIT=""
EXTRA=""
DOWNLOAD="--no-download"
DRY_RUN=0
SUMMARY_ONLY=0
ADACAL="${ADACAL:-adacal}"
PYTHON="${PYTHON:-python}"

usage() {
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    cat <<EOF
Options:
  --data DIR        datasets folder (default \$ADACAL_DATA or ../shared/data): cifar10.npz, optional svhn.npz
  --out DIR         root of the run folders (default runs/paper)
  --seeds "S ..."   seeds (default "0"; the paper averages 5)
  --losses "L ..."  from: ce focal-3 flsd-53 adafocal brier ls-0.05 mmce (default: all)
  --device DEV      cuda (default), cuda:N or cpu (then --amp is dropped)
  --epochs N        override the paper's 350 epochs (smoke tests)
  --model NAME      another of the paper's CIFAR models: resnet110, wrn-26-10, densenet121 (default resnet50)
  --ood-limit N     score a seeded N images of each set in the OOD tests (smoke tests; default all)
  --extra "ARGS"    more arguments for adacal train (e.g. "--train-subset 5000")
  --download        let adacal download missing datasets (SVHN) through torchvision
  --dry-run         print the commands without running them
  --summary-only    only print the summary of the finished runs under --out
EOF
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --data) DATA="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --seeds) SEEDS="$2"; shift 2 ;;
        --losses) LOSSES="$2"; shift 2 ;;
        --device) DEVICE="$2"; shift 2 ;;
        --epochs) EPOCHS="$2"; shift 2 ;;
        --model) MODEL="$2"; shift 2 ;;
        --ood-limit) OOD_LIMIT="$2"; shift 2 ;;
        --extra) EXTRA="$2"; shift 2 ;;
        --download) DOWNLOAD="--download"; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        --summary-only) SUMMARY_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "Error: unknown option $1 (see --help)." >&2; exit 2 ;;
    esac
done

loss_args() {
    case "$1" in
        ce) echo "--loss ce" ;;
        focal-3) echo "--loss focal --gamma 3" ;;
        flsd-53) echo "--loss flsd-53" ;;
        adafocal) echo "--loss adafocal" ;;
        brier) echo "--loss brier" ;;
        ls-0.05) echo "--loss label-smoothing --smoothing 0.05" ;;
        mmce) echo "--loss mmce" ;;
        *) echo "Error: unknown loss '$1' (choices: ce focal-3 flsd-53 adafocal brier ls-0.05 mmce)." >&2; return 2 ;;
    esac
}

run() {
    echo "+ $*"
    if [[ $DRY_RUN -eq 0 ]]; then "$@"; fi
}

# The newest run folder under $1 (one (loss, seed) folder), or nothing.
latest_run() {
    local dir
    dir=$(ls -1d "$1"/*/ 2>/dev/null | sort | tail -n 1 || true)
    echo "${dir%/}"
}

summary() {
    run "$PYTHON" "$HERE/summarize_runs.py" "$OUT" --json "$OUT/summary.json"
}

if [[ $SUMMARY_ONLY -eq 1 ]]; then
    summary
    exit 0
fi

for loss in $LOSSES; do loss_args "$loss" > /dev/null || exit 2; done
[[ -f "$DATA/cifar10.npz" || $DOWNLOAD == "--download" ]] || {
    echo "Error: $DATA/cifar10.npz not found (pass --data DIR, or --download where there is a network)." >&2; exit 2; }
DEVICE_ARGS=(--device "$DEVICE")
[[ "$DEVICE" == cpu ]] || DEVICE_ARGS+=(--amp)
EPOCH_ARGS=()
[[ -z "$EPOCHS" ]] || EPOCH_ARGS=(--epochs "$EPOCHS")
OOD_ARGS=()
[[ -z "$OOD_LIMIT" ]] || OOD_ARGS=(--limit "$OOD_LIMIT")
# shellcheck disable=SC2206  # EXTRA is meant to split into words
EXTRA_ARGS=($EXTRA)
mkdir -p "$OUT"

for seed in $SEEDS; do
    for loss in $LOSSES; do
        folder="$OUT/$loss-s$seed"
        echo "=== $loss, seed $seed ($folder)"
        # shellcheck disable=SC2046  # loss_args is meant to split into words
        train_cmd=("$ADACAL" train --dataset cifar10 --model "$MODEL" --preset paper $(loss_args "$loss")
                   --data-dir "$DATA" "${DEVICE_ARGS[@]}" --channels-last --out "$folder" --seed "$seed"
                   "${EPOCH_ARGS[@]}" "${EXTRA_ARGS[@]}")
        rundir="$(latest_run "$folder")"
        if [[ -n "$rundir" && -f "$rundir/evaluate.json" ]]; then
            echo "trained already: $rundir"
        elif [[ -n "$rundir" && -f "$rundir/checkpoints/last.pt" ]]; then
            run "$ADACAL" train --resume "$rundir" --data-dir "$DATA" --device "$DEVICE" "${EPOCH_ARGS[@]}"
        else
            run "${train_cmd[@]}"
            rundir="$(latest_run "$folder")"
        fi
        if [[ $DRY_RUN -eq 1 && -z "$rundir" ]]; then rundir="$folder/RUN"; fi
        [[ -f "$rundir/calibrate.json" ]] || run "$ADACAL" calibrate "$rundir" --method temperature --objective ece-em --quiet
        if [[ -f "$DATA/svhn.npz" || $DOWNLOAD == "--download" ]]; then
            [[ -f "$rundir/ood-svhn.json" ]] || run "$ADACAL" ood --in cifar10 --out svhn --model "$rundir" \
                --data-dir "$DATA" --device "$DEVICE" "$DOWNLOAD" "${OOD_ARGS[@]}" --json "$rundir/ood-svhn.json" --quiet
        else
            echo "no $DATA/svhn.npz: skipping the SVHN OOD test (--download to fetch it)"
        fi
        [[ -f "$rundir/ood-cifar10-c.json" ]] || run "$ADACAL" ood --in cifar10 --out cifar10-c --severity 5 \
            --model "$rundir" --data-dir "$DATA" --device "$DEVICE" "${OOD_ARGS[@]}" --json "$rundir/ood-cifar10-c.json" --quiet
    done
done

summary
