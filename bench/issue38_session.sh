#!/usr/bin/env bash
# One device call of issue 38's session on an nvidia-h200-x2 node: the referee of the study's
# search, both tasks (KL on GPU 0, CPPD on GPU 1), each as PARTS parts side by side
# (bench/referee_parts.sh), and on GPU 0 beside them issue 39's compile-cache check
# (bench/compile_cache.py --corrupt). Everything lands in $OUT/session.tgz, re-packed each
# minute so a call stopped at its limit still returns what was done.
#
#     bash bench/issue38_session.sh FIRST DATASETS PARTS MINUTES [--no-cache-check]
set -u
first="${1:?FIRST}"; datasets="${2:?DATASETS}"; parts="${3:?PARTS}"; minutes="${4:?MINUTES}"
OUT=${OUT:-/tmp/issue38}
work=/tmp/issue38-work
mkdir -p "$work" "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="$PWD:/tmp/site"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv > "$work/gpus.txt" 2>&1
python3 -c "import torch,dlordinal;print(torch.__version__, dlordinal.__version__)" >> "$work/gpus.txt" 2>&1
pack() { tar -czf "$OUT/.session.tgz" -C "$work" . 2>/dev/null && mv "$OUT/.session.tgz" "$OUT/session.tgz"; }
( while sleep 60; do pack; done ) &
packer=$!
flags=(--seeds 4 --budget 2 --methods nominal,binomial,exponential --epochs 20
       --max-minutes "$minutes")
# The parts cover datasets FIRST .. DATASETS-1 (a second call trains what the first left).
run_task() {  # task gpu
  bash bench/referee_parts.sh "$work/$1" "$2" "$parts" "$first" "$datasets" --task "$1" \
    "${flags[@]}"
}
mkdir -p "$work/KL" "$work/CPPD"
start=$(date +%s)
run_task KL 0 & kl=$!
run_task CPPD 1 & cppd=$!
if [ "${5:-}" != "--no-cache-check" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout $(( minutes * 60 )) python3 bench/compile_cache.py \
    --study bench/compile_cache_check.yaml --home "$work/cc" --corrupt --timeout-s 200 \
    --json "$work/cc.json" > "$work/cc.log" 2>&1
  echo "compile-cache check exit $?" >> "$work/cc.log"
fi
wait $kl $cppd
echo "wall $(( $(date +%s) - start )) s" > "$work/wall.txt"
kill $packer 2>/dev/null
pack
ls -la "$OUT"
