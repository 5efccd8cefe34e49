#!/usr/bin/env bash
# Issue 30's whole-protocol measurements on one 4-GPU machine, in chained device calls.
#
#   bash bench/issue30_session.sh start     # call 1: four jobs at once, one GPU each
#   bash bench/issue30_session.sh collect   # any call: what is done so far, into $OUT
#   bash bench/issue30_session.sh finish    # call 2: wait for GPU 0, then the reports
#   bash bench/issue30_session.sh scale     # call 3: the 4-GPU run (local worker)
#
# start (each job from a copy of the checkout in $WORK/repo, so later calls may change it):
#   GPU 0: studies/paper.yaml seeds 0,1,2, the full search (bench/pruned_search.py --only
#          full): the 3-seed whole-protocol clock, the one-GPU baseline and the full arm of
#          the pruned-vs-full agreement;
#   GPU 1: the same seeds with the ASHA-pruned search (--only pruned);
#   GPU 3: bench/compile_cache.py (first and second study in new processes on one home),
#          then seed 0 with lanes compiling each task at its first run
#          (SOFTGRADE_WARM_TASKS=off): the idle GPU before this change, on the same card.
#   GPU 2: bench/compile_cache.py --no-cache (the before of the compile cache, same run).
# bench/gpu_sampler.py records every GPU's use each second throughout.
set -u
WORK=${WORK:-/tmp/i30}
OUT=${OUT:-$WORK/out}
PY=${PY:-python3}
mkdir -p "$WORK" "$OUT"

now() { date +%s.%N; }

start() {
  rm -rf "$WORK/repo" && mkdir -p "$WORK/repo" && cp -r . "$WORK/repo/" && rm -rf "$WORK/repo/.whl"
  cd "$WORK/repo" || exit 1
  export PYTHONPATH="/tmp/site:$WORK/repo"
  setsid $PY bench/gpu_sampler.py "$WORK/gpu.csv" > "$WORK/sampler.log" 2>&1 &
  echo $! > "$WORK/sampler.pid"
  now > "$WORK/launch-full"
  CUDA_VISIBLE_DEVICES=0 setsid $PY bench/pruned_search.py studies/paper.yaml --seeds 0,1,2 \
    --pruner asha --only full --out "$WORK/full" > "$WORK/full.log" 2>&1 &
  echo $! > "$WORK/full.pid"
  now > "$WORK/launch-pruned"
  CUDA_VISIBLE_DEVICES=1 setsid $PY bench/pruned_search.py studies/paper.yaml --seeds 0,1,2 \
    --pruner asha --only pruned --out "$WORK/pruned" > "$WORK/pruned.log" 2>&1 &
  echo $! > "$WORK/pruned.pid"
  CUDA_VISIBLE_DEVICES=2 setsid $PY bench/compile_cache.py --no-cache --home "$WORK/cc-nocache" \
    --json "$WORK/compile_cache_nocache.json" > "$WORK/compile_cache_nocache.log" 2>&1 < /dev/null &
  (
    export CUDA_VISIBLE_DEVICES=3
    $PY bench/compile_cache.py --home "$WORK/cc" --json "$WORK/compile_cache.json" \
      > "$WORK/compile_cache.log" 2>&1
    mkdir -p "$WORK/nowarm"
    now > "$WORK/launch-nowarm"
    SOFTGRADE_WARM_TASKS=off SOFTGRADE_HOME="$WORK/nowarm" \
      SOFTGRADE_DB="$WORK/nowarm/softgrade.duckdb" \
      $PY -m jobs run studies/paper.yaml --seeds 1 > "$WORK/nowarm.log" 2>&1
    now > "$WORK/nowarm-done"
  ) < /dev/null > /dev/null 2>&1 &
  disown -a
  sleep 5
  nvidia-smi --query-gpu=index,name,memory.total --format=csv > "$OUT/gpus.csv"
  echo "started at $(date -u)"
}

alive() { [ -f "$WORK/$1.pid" ] && kill -0 "$(cat "$WORK/$1.pid")" 2>/dev/null; }

collect() {
  mkdir -p "$OUT"
  # At most 8 files of 16 MiB come back from a call: everything (stores, job logs, bench
  # logs, GPU samples) in one archive cut in 15 MiB parts, without the phantom, compile
  # caches and checkpoints; `collect light` leaves the stores out.
  local light=(); [ "${1:-}" = light ] && light=(--exclude='*.duckdb' --exclude='*.duckdb.wal')
  rm -f "$OUT"/i30-all.tgz.part-*
  tar -C "$WORK" --exclude=./repo --exclude=cache --exclude=compile-cache --exclude=checkpoints \
    --exclude='*.pt' --exclude=./out "${light[@]}" -czf - . 2>/dev/null \
    | split -b 15m -a 1 - "$OUT/i30-all.tgz.part-"
  ls -la "$OUT"
  echo "full: $(alive full && echo running || echo stopped); pruned: $(alive pruned && echo running || echo stopped)"
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
}

clock() {  # clock NAME STORE GPUS LAUNCH_FILE
  (cd "$WORK/repo" && PYTHONPATH="/tmp/site:$WORK/repo" $PY bench/protocol_clock.py \
    --store "$2" --samples "$WORK/gpu.csv" --gpus "$3" --launched "$(cat "$WORK/$4")" \
    --json "$WORK/$1.clock.json" > "$WORK/$1.clock.md" 2>&1)
}

finish() {
  local limit=${1:-560} waited=0
  while alive full && [ "$waited" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
  clock full "$WORK/full/home/softgrade.duckdb" 0 launch-full
  clock pruned "$WORK/pruned/home/softgrade.duckdb" 1 launch-pruned
  [ -f "$WORK/nowarm/softgrade.duckdb" ] && clock nowarm "$WORK/nowarm/softgrade.duckdb" 3 launch-nowarm
  if ! alive full && ! alive pruned; then
    (cd "$WORK/repo" && PYTHONPATH="/tmp/site:$WORK/repo" $PY bench/pruned_search.py \
      studies/paper.yaml --seeds 0,1,2 --pruner asha --only pruned --out "$WORK/pruned" \
      --full-out "$WORK/full" >> "$WORK/pruned.log" 2>&1)
  fi
  collect
}

scale() {
  cd "$WORK/repo" || exit 1
  export PYTHONPATH="/tmp/site:$WORK/repo"
  alive sampler || { setsid $PY bench/gpu_sampler.py "$WORK/gpu.csv.scale" > /dev/null 2>&1 & echo $! > "$WORK/sampler.pid"; }
  mkdir -p "$WORK/scale"
  now > "$WORK/launch-scale"
  SOFTGRADE_HOME="$WORK/scale" SOFTGRADE_DB="$WORK/scale/softgrade.duckdb" \
    timeout "${1:-560}" $PY -m jobs run studies/paper.yaml --seeds 4 > "$WORK/scale.log" 2>&1
  local samples="$WORK/gpu.csv"; [ -f "$WORK/gpu.csv.scale" ] && samples="$WORK/gpu.csv.scale"
  (PYTHONPATH="/tmp/site:$WORK/repo" $PY bench/protocol_clock.py --store "$WORK/scale/softgrade.duckdb" \
    --samples "$samples" --gpus 0,1,2,3 --launched "$(cat "$WORK/launch-scale")" \
    --json "$WORK/scale.clock.json" > "$WORK/scale.clock.md" 2>&1)
  collect
}

"$@"
