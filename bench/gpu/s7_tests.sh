#!/usr/bin/env bash
# Every GPU test of the project (pytest -m gpu over tests/), for bench/gpu/scripts_batch.sh (which installs the
# carried wheels and sets PYTHONPATH). Run from the repository root on the GPU machine:
#   bash bench/gpu/s7_tests.sh RESULT_DIR [pytest args...]
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s7_tests.sh RESULT_DIR [pytest args...]}
shift
mkdir -p "$OUT"
REPO=$(pwd)
# From /tmp with --import-mode=append: the repository's `warpwise/` would shadow the installed package.
(cd /tmp && timeout "${TEST_TIMEOUT:-480}" python3 -m pytest -p no:cacheprovider -p no:randomly --import-mode=append \
  --rootdir "$REPO" -c "$REPO/pyproject.toml" -m gpu "$REPO/tests" -v --junitxml="$OUT/gpu_tests.xml" \
  --durations=20 "$@") > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" >> "$OUT/gpu_tests.log"
tail -3 "$OUT/gpu_tests.log"
