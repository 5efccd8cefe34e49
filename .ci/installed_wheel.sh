#!/usr/bin/env bash
# The package as a user installs it: build the wheel, install it (not editable) into a fresh
# venv, and from outside the checkout run the commands a new user runs first. Fails if a
# file the code reads at run time is missing from the wheel.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Build from the tracked files only (what a clone has), outside the checkout.
mkdir "$work/src"
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 tar -cf -) | tar -xf - -C "$work/src"
"$repo/.venv/bin/python" -m pip wheel -q --no-deps -w "$work/dist" "$work/src"
python3 -m venv "$work/venv"
# The wheel's declared dependencies (no extras), hard-linked from the CI venv rather than
# installed again: a second torch would double CI's disk use. pip check then confirms that
# every requirement among them is met, so nothing outside the declared set is needed.
"$repo/.venv/bin/python" "$repo/.ci/linked_venv.py" "$work"/dist/softgrade-*.whl "$work/venv"
"$work/venv/bin/pip" install -q --no-deps "$work"/dist/softgrade-*.whl
"$work/venv/bin/pip" check
cd "$work"  # nothing of the checkout on the path from here
export SOFTGRADE_HOME="$work/home"
sg="$work/venv/bin/softgrade"
"$sg" --help >/dev/null
printf 'violet-harbour-lantern-91\n' >"$work/password"
"$sg" users add ada --role admin --password-file "$work/password"
"$sg" import-study reference
study="$("$work/venv/bin/python" - <<'PY'
from store.bundle import REFERENCE_STUDY, read_card
print(read_card(REFERENCE_STUDY)["study"]["study_id"])
PY
)"
"$sg" stats "$study" -o "$work/stats.csv"
"$sg" report "$study" -o "$work/report.html"
test -s "$work/stats.csv" && test -s "$work/report.html"
"$work/venv/bin/python" -c "import importlib.util as u; assert u.find_spec('ultralytics') is None"
# The presets and the reference study ship inside engine/ and store/, not as top-level names.
"$work/venv/bin/python" -c "import importlib.util as u; assert not u.find_spec('studies') and not u.find_spec('examples')"
echo "installed wheel: help, users add, import-study, stats and report all ran outside the checkout"
