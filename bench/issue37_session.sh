#!/usr/bin/env bash
# Issue 37's GPU measurements in one device call on a 4-GPU node (nvidia-h200-x4):
#
#   GPU 0:     bench/gpu_check.sh (every part);
#   GPU 1:     bench/methods_throughput.py (item 2: each method's training images/s at 224 px,
#              batch 128), alone on its card;
#   GPUs 2-3:  one seed of engine/studies/ordinal-survey.yaml through the local worker (lanes, the
#              slots per GPU it picks), every GPU sampled by bench/gpu_sampler.py; then
#              bench/protocol_clock.py: first result, the seed's wall, idle GPU seconds.
#
#   bash bench/issue37_session.sh [LIMIT_S]     # LIMIT_S (default 540) bounds the survey
#
# Writes under $OUT: gpu_check.txt, methods_throughput.{txt,json}, survey.log, clock.md,
# samples.csv. Packages the device lacks come as wheels in .whl/ (the device tool's README).
set -u
LIMIT_S=${1:-540}
OUT=${OUT:-/tmp/i37}
WORK=${WORK:-/tmp/i37work}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT" "$WORK"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$SITE" .whl/*.whl || { echo "wheels did not install"; exit 1; }
export PYTHONPATH="$PWD:$SITE" PYTHONUNBUFFERED=1 YOLO_OFFLINE=1
setsid python3 bench/gpu_sampler.py "$OUT/samples.csv" > "$WORK/sampler.log" 2>&1 &
sampler=$!
launched=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=2,3 SOFTGRADE_HOME="$WORK/survey" timeout "$LIMIT_S" \
  python3 -m jobs run engine/studies/ordinal-survey.yaml --seeds 1 > "$OUT/survey.log" 2>&1 &
survey=$!
(
  CUDA_VISIBLE_DEVICES=0 GPU_CHECK_NO_INSTALL=1 OUT="$WORK/check" bash bench/gpu_check.sh \
    > "$OUT/gpu_check.txt" 2>&1
  cp "$WORK/check/report.md" "$OUT/gpu_check_report.md" 2>/dev/null
) &
check=$!
CUDA_VISIBLE_DEVICES=1 python3 bench/methods_throughput.py --out "$OUT/methods_throughput.json" \
  > "$OUT/methods_throughput.txt" 2>&1 &
throughput=$!
wait "$survey"; echo "survey exit $?"
wait "$check" "$throughput"
kill "$sampler" 2>/dev/null
python3 bench/protocol_clock.py --store "$WORK/survey/softgrade.duckdb" --samples "$OUT/samples.csv" \
  --gpus 2,3 --launched "$launched" --json "$OUT/clock.json" > "$OUT/clock.md" 2>&1
python3 - "$WORK/survey/softgrade.duckdb" > "$OUT/survey_runs.md" 2>&1 <<'PY'
import sys
from store.db import connect
with connect(sys.argv[1], read_only=True) as con:
    print(con.execute(
        "SELECT task, method, count(*) AS runs, round(median(duration_s), 1) AS median_s, "
        "round(median(epochs_run)) AS median_epochs, count(diverged_epoch) AS diverged "
        "FROM runs GROUP BY ALL ORDER BY task, method").df().to_string(index=False))
    print(con.execute("SELECT count(*) AS failed FROM failed_runs").df().to_string(index=False))
PY
tail -n 12 "$OUT/gpu_check.txt"; cat "$OUT/clock.md" "$OUT/survey_runs.md"; tail -n 20 "$OUT/methods_throughput.txt"
grep -E "done|failed|planned" "$OUT/survey.log" | tail -n 3
