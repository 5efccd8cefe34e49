#!/usr/bin/env bash
# The phantom referee on one GPU (H100 or H200), sized to end within ~8 minutes:
#
#     bash bench/calibrate_inference.sh OUT_DIR [extra calibrate-inference flags]
#
# K phantom datasets (KL, the default phantom's 970 KL films each, so n_test/n_train is the
# reference study's 0.43), a factorial design of 3 splits x 2 inits each (--seeds 3x2: every
# split trained from the same 2 initialisations, 6 seeds per dataset, so the factorial,
# split-means and design-corrected intervals are scored beside the others), nominal vs
# binomial plus nominal's null twin (3 runs a seed, one fixed configuration per method:
# lr 1e-3, eta 0.8), ResNet18 on 64 px crops, at most 30 epochs, one 4,096-film fresh test
# set (a multiple of the 128-film evaluation graph, so no extra graph per seed). 40 x 6 x 3
# = 720 trainings, as many as the independent-seeds run of 2026-11-27 (6.5 min on an H200).
# --datasets 40 is a ceiling: --max-minutes 7 starts no dataset that would end after 7
# minutes, and the card records how many were done. `--seeds 6` after OUT_DIR gives the
# independent-seeds design instead (the factorial rows then read "not run").
# Every number lands in OUT_DIR (referee.md, referee.csv, referee_draws.csv,
# referee_bootstrap.csv, referee.json); record it here with
#
#     python -m jobs calibrate-inference --record OUT_DIR
#
# It runs `jobs.cli.referee_command` alone, so the machine needs no duckdb; it needs torch,
# torchvision, opencv, scipy, statsmodels, pandas, pyyaml, dlordinal and, for the Bayesian
# test's row, baycomp (a pure-Python wheel; without it that row reads not run).
set -euo pipefail
out="${1:?usage: bench/calibrate_inference.sh OUT_DIR [flags]}"
shift
export PYTHONUNBUFFERED=1
python3 -m jobs.cli.referee_command -o "$out" --no-record \
  --device cuda --task KL --methods nominal,binomial --null-method nominal \
  --datasets 40 --seeds 3x2 --n-images 970 --fresh-test 4096 \
  --epochs 30 --image-size 64 --batch-size 128 --bootstrap 1000 \
  --max-minutes 7 "$@"
