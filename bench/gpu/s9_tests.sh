#!/usr/bin/env bash
# Session 9: the GPU tests of what this session changed (tensor-core epilogue, warp-divergent-branch's sequential
# rewrite, the row register cache's automatic size and chained rewrites), bounded by the caller.
#   bash bench/gpu/s9_tests.sh RESULT_DIR
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s9_tests.sh RESULT_DIR}
mkdir -p "$OUT"
REPO=$(pwd)
# From /tmp with --import-mode=append, as bench/gpu/run_all.sh: the repository's `warpwise/` would shadow the
# installed package.
(cd /tmp && timeout "${TEST_TIMEOUT:-200}" python3 -m pytest -p no:cacheprovider --import-mode=append --rootdir "$REPO" \
  -c "$REPO/pyproject.toml" -m gpu "$REPO/tests/skills/test_contraction_mma_gpu.py" \
  "$REPO/tests/skills/test_warp_divergent_branch.py" "$REPO/tests/skills/test_row_register_cache.py" \
  "$REPO/tests/skills/test_row_cooperative_reduction.py" -v -rs) > "$OUT/tests.log" 2>&1
echo "gpu tests: exit $?" >> "$OUT/tests.log"
tail -15 "$OUT/tests.log"
