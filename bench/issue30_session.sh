#!/usr/bin/env bash
# Issue 30's whole-protocol measurements on one 4-GPU machine, in chained device calls.
#
#   bash bench/issue30_session.sh start     # call 1: four jobs at once, one GPU each
#   bash bench/issue30_session.sh collect   # any call: what is done so far, into $OUT
#   bash bench/issue30_session.sh finish    # call 2: wait for GPU 0, then the reports
#   bash bench/issue30_session.sh scale [LIMIT_S] [SEEDS]   # call 3: the 4-GPU run (local worker)
#   bash bench/issue30_session.sh ray [LIMIT_S] [SEEDS]     # call 4: the same on Ray, one node
#   bash bench/issue30_session.sh both [LIMIT_S]            # full then ASHA, seeds 0-2, 4 GPUs
#   bash bench/issue30_session.sh waitfor NAME [LIMIT_S]    # until NAME's job ends (or LIMIT_S)
#   bash bench/issue30_session.sh one                       # start's GPU-0 job alone (1 GPU)
#
# The machine is handed back ~30 s after a call returns, with everything on it: a job longer
# than one call (the 3-seed one-GPU run takes ~17-20 min) needs the next call sent at once,
# e.g. call 1 `one; sleep 540; collect light`, call 2 `waitfor full 560; finish 0`. The
# 2026-11-28 session lost its one-GPU run at 118 of 270 runs that way.
#
# start (each job from a copy of the checkout in $WORK/repo, so later calls may change it):
#   GPU 0: engine/studies/paper.yaml seeds 0,1,2, the full search (bench/pruned_search.py --only
#          full): the 3-seed whole-protocol clock, the one-GPU baseline and the full arm of
#          the pruned-vs-full agreement;
#   GPU 1: the same seeds with the ASHA-pruned search (--only pruned);
#   GPU 3: bench/compile_cache.py (first and second study in new processes on one home),
#          then seed 0 with lanes compiling each task at its first run
#          (SOFTGRADE_WARM_TASKS=off): the idle GPU before this change, on the same card.
#   GPU 2: bench/compile_cache.py --no-cache (the before of the compile cache, same run).
# bench/gpu_sampler.py records every GPU's use each second throughout.
#
# ray: the device has no Ray, so the call carries .raypkg/ray-*.tar.xz (a slim cp312 Ray from
# bench/ray_slim_package.sh); the step unpacks it into $SITE and stops, saying why, if Ray or
# the Ray executor does not import or Ray does not see every GPU (it never falls back to the
# local worker or to CPU actors). Then the paper protocol on a fresh SOFTGRADE_HOME with
# `--executor ray`: a private one-node Ray instance that the worker starts and stops (README,
# "Running on a Ray cluster"), with as many slots per GPU as the local worker picks on this
# card (SLOTS_PER_GPU overrides). The K slots of a GPU are lanes (CUDA streams) of one actor,
# as they are of one process in the local worker; RAY_PROCESSES_PER_GPU=K gives the layout
# before 2026-11-28 04:00 (an actor process per slot, 1/K GPU each). LIMIT_S (default 520)
# bounds the study itself; unpacking, the Ray check and the report add ~40 s to the call.
set -u
WORK=${WORK:-/tmp/i30}
OUT=${OUT:-$WORK/out}
PY=${PY:-python3}
SITE=${SITE:-/tmp/site}  # the packages of this call, first on PYTHONPATH
mkdir -p "$WORK" "$OUT"

now() { date +%s.%N; }

start() {
  fresh_copy_and_sampler || exit 1
  now > "$WORK/launch-full"
  CUDA_VISIBLE_DEVICES=0 setsid $PY bench/pruned_search.py engine/studies/paper.yaml --seeds 0,1,2 \
    --pruner asha --only full --out "$WORK/full" > "$WORK/full.log" 2>&1 &
  echo $! > "$WORK/full.pid"
  now > "$WORK/launch-pruned"
  CUDA_VISIBLE_DEVICES=1 setsid $PY bench/pruned_search.py engine/studies/paper.yaml --seeds 0,1,2 \
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
      $PY -m jobs run engine/studies/paper.yaml --seeds 1 > "$WORK/nowarm.log" 2>&1
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
  (cd "$WORK/repo" && PYTHONPATH="$SITE:$WORK/repo" $PY bench/protocol_clock.py \
    --store "$2" --samples "$WORK/gpu.csv" --gpus "$3" --launched "$(cat "$WORK/$4")" \
    --json "$WORK/$1.clock.json" > "$WORK/$1.clock.md" 2>&1)
}

finish() {
  local limit=${1:-560} waited=0
  while alive full && [ "$waited" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
  clock full "$WORK/full/home/softgrade.duckdb" 0 launch-full
  [ -f "$WORK/pruned/home/softgrade.duckdb" ] && clock pruned "$WORK/pruned/home/softgrade.duckdb" 1 launch-pruned
  [ -f "$WORK/nowarm/softgrade.duckdb" ] && clock nowarm "$WORK/nowarm/softgrade.duckdb" 3 launch-nowarm
  if [ -d "$WORK/pruned" ] && ! alive full && ! alive pruned; then  # start, not one
    (cd "$WORK/repo" && PYTHONPATH="$SITE:$WORK/repo" $PY bench/pruned_search.py \
      engine/studies/paper.yaml --seeds 0,1,2 --pruner asha --only pruned --out "$WORK/pruned" \
      --full-out "$WORK/full" >> "$WORK/pruned.log" 2>&1)
  fi
  collect
}

scale() {
  cd "$WORK/repo" || exit 1
  export PYTHONPATH="$SITE:$WORK/repo"
  alive sampler || { setsid $PY bench/gpu_sampler.py "$WORK/gpu.csv.scale" > /dev/null 2>&1 &
    echo $! > "$WORK/sampler.pid" && echo "$WORK/gpu.csv.scale" > "$WORK/sampler.file"; }
  mkdir -p "$WORK/scale"
  now > "$WORK/launch-scale"
  SOFTGRADE_HOME="$WORK/scale" SOFTGRADE_DB="$WORK/scale/softgrade.duckdb" \
    timeout "${1:-560}" $PY -m jobs run engine/studies/paper.yaml --seeds "${2:-4}" > "$WORK/scale.log" 2>&1
  local samples="$WORK/gpu.csv"; [ -f "$WORK/gpu.csv.scale" ] && samples="$WORK/gpu.csv.scale"
  (PYTHONPATH="$SITE:$WORK/repo" $PY bench/protocol_clock.py --store "$WORK/scale/softgrade.duckdb" \
    --samples "$samples" --gpus 0,1,2,3 --launched "$(cat "$WORK/launch-scale")" \
    --json "$WORK/scale.clock.json" > "$WORK/scale.clock.md" 2>&1)
  collect
}

fresh_copy_and_sampler() {  # a copy of this checkout to run from, and the GPU sampler running
  rm -rf "$WORK/repo" && mkdir -p "$WORK/repo" && cp -r . "$WORK/repo/" && rm -rf "$WORK/repo/.whl"
  cd "$WORK/repo" || return 1
  export PYTHONPATH="$SITE:$WORK/repo"
  alive sampler || { setsid $PY bench/gpu_sampler.py "$WORK/gpu.csv" > "$WORK/sampler.log" 2>&1 &
    echo $! > "$WORK/sampler.pid" && echo "$WORK/gpu.csv" > "$WORK/sampler.file"; }
}

both() {  # both [LIMIT_S]: the full search, then the ASHA-pruned one, of seeds 0-2 on every
  # GPU with the local worker, in one store and one worker (one compile): the 4-GPU clock of
  # the whole protocol and the pruned-vs-full agreement of three seeds, in the background.
  fresh_copy_and_sampler || exit 1
  now > "$WORK/launch-both"
  setsid timeout "${1:-1100}" $PY bench/pruned_search.py engine/studies/paper.yaml --seeds 0,1,2 \
    --pruner asha --out "$WORK/both" > "$WORK/both.log" 2>&1 < /dev/null &
  echo $! > "$WORK/both.pid"
  sleep 5
  nvidia-smi --query-gpu=index,name,memory.total --format=csv > "$WORK/gpus.csv"
  echo "started at $(date -u)"
}

one() {  # the 3-seed whole-protocol clock on one GPU (GPU 0), nothing else on the machine
  fresh_copy_and_sampler || exit 1
  now > "$WORK/launch-full"
  CUDA_VISIBLE_DEVICES=0 setsid $PY bench/pruned_search.py engine/studies/paper.yaml --seeds 0,1,2 \
    --pruner asha --only full --out "$WORK/full" > "$WORK/full.log" 2>&1 < /dev/null &
  echo $! > "$WORK/full.pid"
  echo "started at $(date -u)"
}

waitfor() {  # waitfor NAME [LIMIT_S]
  local waited=0
  while alive "$1" && [ "$waited" -lt "${2:-540}" ]; do sleep 5; waited=$((waited + 5)); done
  echo "$1: $(alive "$1" && echo running || echo ended) after ${waited} s of waiting"
}

ray() {  # ray [LIMIT_S] [SEEDS]: the scale run on the Ray executor (one node, every GPU)
  local pkg; pkg=$(ls .raypkg/ray-*.tar.xz 2>/dev/null | tail -1)  # in this call's checkout
  [ -n "$pkg" ] || { echo "ray: no .raypkg/ray-*.tar.xz here; carry .raypkg" >&2; return 1; }
  if alive full || alive pruned || alive both; then
    echo "ray: the start step's jobs still train on GPUs 0/1; run finish first" >&2; return 1
  fi
  mkdir -p "$SITE" && rm -rf "$SITE"/ray "$SITE"/ray-*.dist-info
  # Python's tarfile, not tar: the device need not have xz.
  $PY -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
    "$pkg" "$SITE" || { echo "ray: could not unpack $pkg" >&2; return 1; }
  [ -d "$WORK/repo" ] || { mkdir -p "$WORK/repo" && cp -r . "$WORK/repo/" && rm -rf "$WORK/repo/.whl" "$WORK/repo/.raypkg"; }
  cd "$WORK/repo" || exit 1
  export PYTHONPATH="$SITE:$WORK/repo"
  if ! ray_ready > "$WORK/ray.check" 2>&1; then
    cat "$WORK/ray.check" >&2; echo "ray: Ray is not usable here (above); nothing ran" >&2
    ray_logs; collect; return 1
  fi
  local k=${SLOTS_PER_GPU:-$($PY -c 'from jobs.worker.factory import auto_slots_per_gpu as a; print(a())')}
  [ -n "$k" ] || { echo "ray: could not choose the slots per GPU" >&2; return 1; }
  echo "slots per GPU: $k (the local worker's choice on this card)" >> "$WORK/ray.check"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$WORK/ray.check"
  cat "$WORK/ray.check"
  alive sampler || { setsid $PY bench/gpu_sampler.py "$WORK/gpu.csv.ray" > /dev/null 2>&1 &
    echo $! > "$WORK/sampler.pid" && echo "$WORK/gpu.csv.ray" > "$WORK/sampler.file"; }
  rm -rf "$WORK/ray" && mkdir -p "$WORK/ray"
  now > "$WORK/launch-ray"
  SOFTGRADE_HOME="$WORK/ray" SOFTGRADE_DB="$WORK/ray/softgrade.duckdb" \
    timeout "${1:-520}" $PY -m jobs run engine/studies/paper.yaml --seeds "${2:-4}" --executor ray \
    --slots-per-gpu "$k" --processes-per-gpu "${RAY_PROCESSES_PER_GPU:-1}" > "$WORK/ray.log" 2>&1
  echo "jobs run exited $? at $(date -u)" >> "$WORK/ray.log"
  local samples; samples=$(cat "$WORK/sampler.file" 2>/dev/null || echo "$WORK/gpu.csv")
  $PY bench/protocol_clock.py --store "$WORK/ray/softgrade.duckdb" --samples "$samples" \
    --gpus 0,1,2,3 --launched "$(cat "$WORK/launch-ray")" \
    --json "$WORK/ray.clock.json" > "$WORK/ray.clock.md" 2>&1
  ray_record >> "$WORK/ray.check" 2>&1
  ray_logs
  collect
  tail -n 5 "$WORK/ray.log"; tail -n 2 "$WORK/ray.check"
}

ray_ready() {  # Ray and the Ray executor import, and a private instance sees every GPU
  $PY -c "import ray, jobs.worker.ray_executor; print('ray', ray.__version__, ray.__file__)" \
    || return 1
  # With no GPU in Ray's eyes the executor would train on CPU actors (device: auto): stop.
  $PY - "$(nvidia-smi -L | wc -l)" <<'PY'
import logging, sys
import ray
ray.init(address="local", include_dashboard=False, logging_level=logging.WARNING)
resources = ray.cluster_resources()
ray.shutdown()
print("a private Ray instance here has", resources)
if int(resources.get("GPU", 0)) != int(sys.argv[1]):
    sys.exit(f"Ray sees {resources.get('GPU', 0):g} GPU(s) but nvidia-smi lists {sys.argv[1]}")
PY
}

ray_record() {  # which executor, slots and devices the store says the ray step ran on
  $PY - "$WORK/ray/softgrade.duckdb" <<'PY'
import sys
from store.db import connect
QUERIES = {
    "workers (executor, slots, devices)": "SELECT executor, slots, devices FROM workers",
    "study card (executor, devices)": "SELECT executor, devices FROM study_environments",
    "finished runs per device": "SELECT device, count(*) FROM runs WHERE status = 'succeeded' "
    "GROUP BY device ORDER BY device",
}
with connect(sys.argv[1], read_only=True) as con:
    for what, sql in QUERIES.items():
        print(f"{what}:", con.execute(sql).fetchall())
PY
}

ray_logs() {  # the private Ray instance's own logs: its errors and the raylet's and GCS's tail
  local logs=/tmp/ray/session_latest/logs
  [ -d "$logs" ] || return 0
  rm -rf "$WORK/ray-logs" && mkdir -p "$WORK/ray-logs"
  for f in "$logs"/*.err "$logs"/raylet.out "$logs"/gcs_server.out "$logs"/monitor.log; do
    [ -s "$f" ] && grep -q -v -E '^:(job_id|actor_name|task_name):' "$f" \
      && tail -c 20000 "$f" > "$WORK/ray-logs/$(basename "$f")"
  done
  # Processes left on the GPUs after the run (the private instance dies with its worker).
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader > "$WORK/ray-logs/gpu-apps-after.csv"
}

"$@"
