#!/usr/bin/env bash
# The phantom referee of the conformal grade sets (issue 41) on one GPU (H100 or H200):
#
#     bash bench/calibrate_sets.sh OUT_DIR [extra calibrate-sets flags]
#
# Both tasks, each on K = 40 phantom datasets of the default phantom's 970 graded films (as
# bench/calibrate_inference.sh), 3 independent seeds per dataset, nominal and binomial (one
# fixed configuration each: lr 1e-3, eta 0.8), ResNet18 on 64 px crops, at most 30 epochs,
# one 4,096-film fresh test set per task. 40 x 3 x 2 x 2 = 480 trainings, two thirds of the
# inference referee's 720 (6.5 min on an H200). --datasets 40 is a ceiling: --max-minutes
# 12 (per task) starts no dataset that would end later, and sets.json says how many were
# done. Every number lands in OUT_DIR (sets.md, sets_summary.csv, sets_draws.csv,
# sets.json). It runs `jobs.cli.sets_referee_command` alone, so the machine needs no duckdb.
set -euo pipefail
out="${1:?usage: bench/calibrate_sets.sh OUT_DIR [flags]}"
shift
export PYTHONUNBUFFERED=1
python3 -m jobs.cli.sets_referee_command -o "$out" \
  --device cuda --task both --methods nominal,binomial \
  --datasets 40 --seeds 3 --n-images 970 --fresh-test 4096 \
  --epochs 30 --image-size 64 --batch-size 128 --coverage 0.9 \
  --max-minutes 12 "$@"
