#!/usr/bin/env bash
# The GPU check after this session's merges, in one device call on an nvidia-h200-x2 node:
#
#   GPU 0: bench/gpu_check.sh (every part: the training code changed in jobs/worker);
#   GPU 1: bench/compile_cache.py --corrupt (issue 39): a small study compiles into a cold
#          cache, every cache file is spoilt, and a second study must still finish its runs,
#          its log naming the unreadable entry; beside it the grade sets' referee
#          (bench/calibrate_sets.sh) for KL and for CPPD, rerun after the APS-type scores
#          came to count half the own grade (issue 41), 7.5 minutes each.
#
#   OUT=$OUT bash bench/issue39_session.sh
#
# Writes under $OUT (small files only, so all come back): gpu_check.txt,
# gpu_check_report.md, cache_check.txt, cache_check.json, cache_study2.log, sets.tgz.
set -u
OUT=${OUT:-/tmp/i39}
WORK=${WORK:-/tmp/i39work}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT" "$WORK"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$SITE" .whl/*.whl || { echo "wheels did not install"; exit 1; }
export PYTHONPATH="$PWD:$SITE" PYTHONUNBUFFERED=1 YOLO_OFFLINE=1
(
  CUDA_VISIBLE_DEVICES=0 GPU_CHECK_NO_INSTALL=1 OUT="$WORK/check" bash bench/gpu_check.sh \
    > "$OUT/gpu_check.txt" 2>&1
  echo "gpu_check exit $?" >> "$OUT/gpu_check.txt"
  cp "$WORK/check/report.md" "$OUT/gpu_check_report.md" 2>/dev/null
) &
check=$!
for task in KL CPPD; do
  CUDA_VISIBLE_DEVICES=1 OMP_NUM_THREADS=4 bash bench/calibrate_sets.sh "$WORK/sets-$task" \
    --task "$task" --max-minutes 7.5 --render-workers 4 > "$WORK/sets-$task.log" 2>&1 &
done
CUDA_VISIBLE_DEVICES=1 python3 bench/compile_cache.py --study bench/compile_cache_check.yaml \
  --home "$WORK/cc" --corrupt --timeout-s 240 --json "$OUT/cache_check.json" \
  > "$OUT/cache_check.txt" 2>&1
echo "compile-cache check exit $?" >> "$OUT/cache_check.txt"
grep -h -i "compile cache\|could not be read\|training it again\|failed" "$WORK/cc/run-2.log" \
  | cut -c1-300 | head -60 > "$OUT/cache_study2.log"
wait
tar -czf "$OUT/sets.tgz" -C "$WORK" sets-KL sets-CPPD sets-KL.log sets-CPPD.log 2>/dev/null
ls -la "$OUT"
