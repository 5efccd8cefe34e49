#!/usr/bin/env bash
# The GPU check every change to engine/train*, engine/methods, engine/stem or jobs/worker
# passes on a lent GPU before it lands (issue 37; README, "Contributing"). One PASS/FAIL line
# per part, then a summary line:
#
#   1. the CUDA-only tests (`pytest -m gpu`): every method on captured graphs only, a target
#      method after other losses learning as in a fresh trainer, a lane training beside a
#      sibling that compiles, CORN's rank rule, the stem's kernels, graph tails;
#   2. a refused capture (a loss that needs the host mid-step) says why, in its own process;
#   3. a mixed study of every registered method through the real worker, 4 lanes in one slot
#      process per GPU (bench/gpu_check.yaml: both tasks, 2 configurations, 2 seeds, 3 epochs,
#      224 px, batch 128), compile cache cold: every run stored, none failed;
#   4. the same study again with one lane per process (--processes-per-gpu 4), compile cache
#      warm from part 3: every run stored, none failed;
#   5. per method, part 3's and part 4's validation AMAE side by side (printed, not judged);
#   6. no compiled model fell back to eager (dynamo's "recompile_limit" in no log).
#
# On the device machine (packages it lacks carried as wheels in .whl/, README of the device
# tool), from the repository root:
#
#   bash bench/gpu_check.sh            # writes its logs and reports under $OUT (or /tmp/gpu_check)
#
# Budget: <= 8 min on one H200 from a fresh machine. Exit status 0 only if every part passed.
set -u
OUT=${OUT:-/tmp/gpu_check}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
if [ -n "${GPU_CHECK_NO_INSTALL:-}" ]; then
  export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"  # installed by the caller
elif compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl || { echo "FAIL wheels: could not install .whl/"; exit 1; }
  export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1 YOLO_OFFLINE=1
HOME_DIR="$OUT/home"
rm -rf "$HOME_DIR" && mkdir -p "$HOME_DIR"
failed=0
started=$(date +%s)

part() {  # part NAME COMMAND...: run, log to $OUT/NAME.log, print PASS/FAIL with seconds
  local name=$1; shift
  local t0=$(date +%s)
  if "$@" >"$OUT/$name.log" 2>&1; then
    echo "PASS $name ($(( $(date +%s) - t0 )) s)"
  else
    echo "FAIL $name ($(( $(date +%s) - t0 )) s): see $OUT/$name.log; its end:"
    tail -n 25 "$OUT/$name.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

python3 -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name())' \
  || { echo "FAIL no CUDA GPU"; exit 1; }
part cuda-tests python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/engine/test_gpu_training.py tests/engine/test_stem.py tests/engine/test_train.py
part refused-capture python3 -m pytest -q -p no:cacheprovider -m gpu tests/engine/test_gpu_refusal.py
part mixed-study-lanes env SOFTGRADE_HOME="$HOME_DIR" \
  python3 -m jobs run bench/gpu_check.yaml --slots-per-gpu 4
part mixed-study-one-lane-per-process env SOFTGRADE_HOME="$HOME_DIR" \
  python3 -m jobs run bench/gpu_check.yaml --slots-per-gpu 4 --processes-per-gpu 4
part study-report env SOFTGRADE_HOME="$HOME_DIR" python3 bench/gpu_check_report.py "$OUT/report.md"
# Past dynamo's limit of compiled variants a frame runs eagerly, silently slower: a failure.
part no-eager-fallback bash -c "! grep -h 'recompile_limit' '$OUT'/*.log"
[ -f "$OUT/report.md" ] && cat "$OUT/report.md"
echo "gpu_check: $failed part(s) failed, $(( $(date +%s) - started )) s in all"
[ "$failed" -eq 0 ]
