#!/usr/bin/env bash
# One GPU slice: `bash benchmarks/gpu_slice.sh "$OUT" [gpu_slice.py run options]` from the repository root, with
# runs/gpu-slice carried (the CIFAR-10 pack, and the state of cells an earlier slice left unfinished). Finishes inside
# 9 minutes; everything it returns is in $OUT. What it does: benchmarks/gpu_slice.py's docstring.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: bash benchmarks/gpu_slice.sh OUT_DIR [options]}"
shift
export PYTHONUNBUFFERED=1
exec "${PYTHON:-python3}" benchmarks/gpu_slice.py run --out "$out" "$@"
