#!/usr/bin/env bash
# A slimmed Ray install tree for a device machine that has no Ray, small enough to travel in a
# device call's carry (64 MiB in all; the full cp312 wheel is ~79 MB, 201 MB unpacked).
#
#   bash bench/ray_slim_package.sh SOURCE OUT.tar.xz [STAGE]
#
# SOURCE: a Ray wheel (.whl) or a site-packages folder holding ray/ and ray-*.dist-info/.
# OUT:    the archive; unpack it into a folder on PYTHONPATH (tar -xJf OUT -C /tmp/site).
# STAGE:  where the slim tree is built and left (default: a temporary folder, removed), e.g.
#         to put it first on PYTHONPATH and run tests/jobs/worker/test_ray_executor.py against it.
#
# What stays is what a local `ray.init(include_dashboard=False)` starts (GCS server, raylet,
# the dashboard agent in its minimal mode, the runtime-env agent with its bundled aiohttp,
# the autoscaler's monitor) plus everything `import ray` and SoftGrade's Ray executor import
# (ray.actor, ray.exceptions, ray.util.scheduling_strategies). What goes is below, with why.
# The native programs lose their symbol tables (strip): they run the same, only a crash's
# stack trace shows addresses instead of names. Ray 2.60.0's cp312 wheel (79 MB) gives a
# 16.3 MB archive (96.8 MB unpacked). Checked by building the same tree from a Python 3.11
# install and running tests/jobs/worker/test_ray_executor.py with it first on PYTHONPATH.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 SOURCE(.whl or site-packages) OUT.tar.xz [STAGE]" >&2; exit 2; }
SOURCE=$1
OUT=$2
STAGE=${3:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -n "$STAGE" ] || STAGE=$TMP/stage
rm -rf "$STAGE" && mkdir -p "$STAGE"

if [ -f "$SOURCE" ]; then
  # As pip installs it: zipfile alone drops the Unix modes, and raylet/gcs_server must stay
  # executable (Ray runs them as programs).
  python3 - "$SOURCE" "$STAGE" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for info in wheel.infolist():
        path = wheel.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode and not info.is_dir():
            os.chmod(path, mode)
PY
else
  cp -r "$SOURCE/ray" "$STAGE/"
  cp -r "$SOURCE"/ray-*.dist-info "$STAGE/"
fi
[ -f "$STAGE/ray/_raylet.so" ] || { echo "no ray/_raylet.so under $SOURCE" >&2; exit 1; }

# Paths under ray/ that a local cluster of actors never loads.
REMOVE=(
  jars                      # Java workers (cross-language actors)
  dashboard/client          # the dashboard's web front end (the dashboard stays off)
  rllib serve tune train data air llm workflow   # libraries on top of Ray Core
  util/dask util/spark util/joblib util/xgboost util/lightgbm util/horovod util/sgd
  # cloud node providers (a local cluster has none); kuberay stays: the autoscaler v2's
  # config imports it whatever the provider
  autoscaler/aws autoscaler/gcp autoscaler/azure autoscaler/vsphere autoscaler/aliyun
  autoscaler/spark autoscaler/_private/aws autoscaler/_private/gcp
  autoscaler/_private/_azure autoscaler/_private/vsphere autoscaler/_private/aliyun
  autoscaler/_private/spark autoscaler/launch_and_verify_cluster.py
  dashboard/modules/train dashboard/modules/data   # agent/head modules of removed libraries
  includes _raylet.pxd setup-dev.py                # Cython headers, developer setup
  _private/test_utils.py
)
for path in "${REMOVE[@]}"; do rm -rf "${STAGE:?}/ray/$path"; done
find "$STAGE" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$STAGE" -name '*.pyc' -delete
find "$STAGE/ray" -type d -name tests -prune -exec rm -rf {} +

# Symbol tables of the native code (~36 MB of the ~120 MB the three programs weigh): shared
# libraries keep the dynamic symbols they are loaded by (--strip-unneeded).
if command -v strip > /dev/null; then
  find "$STAGE/ray" -name '*.so' -type f -exec strip --strip-unneeded {} +
  strip --strip-all "$STAGE/ray/core/src/ray/gcs/gcs_server" "$STAGE/ray/core/src/ray/raylet/raylet"
else
  echo "warning: no strip here; the native code keeps its symbol tables (a larger archive)" >&2
fi

# RECORD names only what is left, without the hashes of the stripped files.
python3 - "$STAGE" <<'PY'
import pathlib, sys
stage = pathlib.Path(sys.argv[1])
for record in stage.glob("ray-*.dist-info/RECORD"):
    kept = []
    for line in record.read_text().splitlines():
        path = line.split(",")[0]
        if (stage / path).exists():
            kept.append(f"{path},," if path.endswith((".so", "gcs_server", "raylet")) else line)
    record.write_text("\n".join(kept) + "\n")
PY

mkdir -p "$(dirname "$OUT")"
tar -C "$STAGE" -cf - ray "$(basename "$(ls -d "$STAGE"/ray-*.dist-info)")" \
  | xz -9e -T0 > "$OUT.part"
mv "$OUT.part" "$OUT"
echo "$OUT: $(du -b "$OUT" | cut -f1) bytes ($(du -sb "$STAGE" | cut -f1) bytes unpacked)"
