#!/bin/bash
# The bundled reference study (store/examples/reference-study.zip) as it was run on a lent GPU
# machine, in calls of at most 10 minutes while the machine stays warm:
#
#   bash bench/reference_study.sh start [SECONDS]    # worker in the background, then wait
#   bash bench/reference_study.sh progress [SECONDS] # wait, then say which seeds are complete
#   bash bench/reference_study.sh wait [SECONDS]     # until the study ends (at most SECONDS)
#   bash bench/reference_study.sh finish OUT_DIR     # cancel, keep complete seeds, export
#
# The study is engine/studies/paper.yaml (20 seeds, both tasks, five methods, budget 15, 224 px), or
# STUDY_FILE=... for a spec with some of its seeds (e.g. `seeds: [13, 14, ...]`, to add seeds
# in a later session);
# runs go seed by seed over every slot of every GPU, so a study stopped early keeps its
# complete seeds. The export is bench/export_reference.py's bundle with its study card; two
# such parts are merged into one bundle by bench/merge_reference.py.
set -u
HOME_DIR=${SOFTGRADE_HOME:-/tmp/sg}
export SOFTGRADE_HOME=$HOME_DIR PYTHONUNBUFFERED=1
mkdir -p "$HOME_DIR"
STUDY_FILE=${STUDY_FILE:-engine/studies/paper.yaml}
COMMAND="python -m jobs run $STUDY_FILE (4 slots per GPU as lanes; GPUs ${CUDA_VISIBLE_DEVICES:-all})"

progress() {
    python3 - <<'EOF'
import json
from engine.analysis.compare import finished_seeds
from store.db import default_store_path
from store.runs import list_studies, run_group_counts
path = default_store_path()
studies = list_studies(path=path)
if studies.empty:
    print("no study yet")
else:
    row = studies.iloc[0]
    done = finished_seeds(run_group_counts([row.study_id], path=path), json.loads(row.spec))
    print(f"{row.study_id} {row.status}: {row.runs_stored} runs stored, "
          f"{len(done)} complete seeds {done}")
EOF
    tail -n 2 "$HOME_DIR/run.log"
    tail -n 1 "$HOME_DIR/gpu.log"
}

case "${1:-}" in
start)
    nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
    setsid nohup nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader \
        -l 30 >"$HOME_DIR/gpu.log" 2>&1 </dev/null &
    date -u +%FT%TZ >"$HOME_DIR/started"
    setsid nohup python3 -m jobs run "$STUDY_FILE" >"$HOME_DIR/run.log" 2>&1 </dev/null &
    sleep "${2:-0}"
    progress
    ;;
progress)
    sleep "${2:-0}"
    progress
    ;;
wait)
    # The worker's own command line, not this script's: a caller's `pgrep -f "jobs run ..."`
    # also matches the shell that runs it and never ends.
    for _ in $(seq $(( ${2:-540} / 10 ))); do
        pgrep -f "^python3 -m jobs run $STUDY_FILE" >/dev/null || break
        sleep 10
    done
    progress
    ;;
finish)
    out=${2:?finish needs an output folder}
    job=$(grep -o "running [a-z0-9-]*" "$HOME_DIR/run.log" | head -1 | cut -d' ' -f2)
    python3 -m jobs cancel "$job"
    for _ in $(seq 60); do pgrep -f "jobs run $STUDY_FILE" >/dev/null || break; sleep 1; done
    progress
    python3 bench/export_reference.py --out "$out/reference-study.zip" \
        --command "$COMMAND; started $(cat "$HOME_DIR/started")"
    tail -n 300 "$HOME_DIR/run.log" >"$out/run-tail.log"
    cp "$HOME_DIR/gpu.log" "$out/gpu.log"
    ;;
*)
    echo "usage: $0 start|progress|wait|finish ..." >&2
    exit 2
    ;;
esac
