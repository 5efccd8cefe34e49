#!/usr/bin/env bash
# The phantom referee trained in parts, side by side on one GPU (issue 38): PARTS processes,
# each `calibrate-inference --first-dataset A --datasets B` over its share of the design's
# datasets (the same data seed, so the same datasets and fresh test set as one whole run), then
# joined by `calibrate-inference --combine`. A single referee process leaves an H200 mostly idle
# (the 64 px models are small; the time goes to the host between steps), so parts side by side
# raise the datasets per minute.
#
#     bash bench/referee_parts.sh OUT_DIR GPU PARTS FIRST DATASETS [calibrate-inference flags]
#
# trains datasets FIRST .. DATASETS-1 (FIRST 0: the whole design; more: what an earlier call
# left), e.g. bash bench/referee_parts.sh /tmp/kl 0 8 0 40 --task KL --seeds 4 --budget 2 \
#        --methods nominal,binomial,exponential --epochs 20 --max-minutes 8
# Each part writes OUT_DIR/part-<A>/ (its log beside it); a part stopped by --max-minutes keeps
# the datasets it finished. Join them (here or on any machine with the parts' folders):
#     python -m jobs.cli.referee_command -o OUT_DIR/joined --no-record --combine OUT_DIR/part-*
set -u
out="${1:?usage: bench/referee_parts.sh OUT_DIR GPU PARTS FIRST DATASETS [flags]}"
gpu="${2:?GPU index}"
parts="${3:?parts}"
from="${4:?first dataset}"
datasets="${5:?datasets}"
shift 5
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# Each part is one host thread driving the GPU: keep the CPU libraries and inductor's compile
# workers to one or two threads each, or PARTS processes oversubscribe the cores.
export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 TORCHINDUCTOR_COMPILE_THREADS=2
per=$(( (datasets - from + parts - 1) / parts ))
pids=()
for (( first = from; first < datasets; first += per )); do
  last=$(( first + per < datasets ? first + per : datasets ))
  CUDA_VISIBLE_DEVICES="$gpu" python3 -m jobs.cli.referee_command -o "$out/part-$first" \
    --no-record --device cuda --first-dataset "$first" --datasets "$last" \
    --n-images 970 --fresh-test 4096 --image-size 64 --batch-size 128 --bootstrap 1000 \
    --render-workers 1 "$@" >"$out/part-$first.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
