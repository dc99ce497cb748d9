#!/usr/bin/env bash
# One call on the GPU machine for the row-register-cache and grid-stride-atomic-total transformations (issue 19):
# the row-cooperative batch (bench/row_coop/gpu_batch.sh: corpus_check of every candidate against the torch
# reference and eager, the gate on a subset, the cards' GPU tests) over bench/row_cache/prep.py's candidates, then
# the naive kernels of both suites against eager in the same session (the headline's baseline rows).
#   run from the repository root with CARRY naming the carried folder (whl/, prep/, src/):
#   CARRY=.carry-wt19s bash "$CARRY/src/bench/row_cache/gpu_batch.sh"
set -uo pipefail
OUT=${OUT:-/tmp/out}
CARRY=${CARRY:-.carry-wt19s}
export OUT CARRY
export GATE_MAPPINGS=${GATE_MAPPINGS:-tree_cache32,cache16,gs128}
export TEST_FILES=${TEST_FILES:-tests/skills/test_row_register_cache.py tests/skills/test_grid_stride_atomic_total.py}
export CORPUS_BUDGET=${CORPUS_BUDGET:-65} CORPUS_TIMEOUT=${CORPUS_TIMEOUT:-85}
export GATE_BUDGET=${GATE_BUDGET:-30} GATE_TIMEOUT=${GATE_TIMEOUT:-45} TEST_TIMEOUT=${TEST_TIMEOUT:-40}
bash "$CARRY/src/bench/row_coop/gpu_batch.sh"
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache
for suite in suite suite_ood; do
  t0=$(date +%s)
  timeout "${NAIVE_TIMEOUT:-40}" python3 "$CARRY/src/bench/gpu/corpus_check.py" --suite "bench/$suite" --no-experts \
    --out "$OUT/naive_$suite" --budget-s "${NAIVE_BUDGET:-30}" --deadline-s 20 2>&1 | tail -20 >> "$OUT/corpus.log"
  echo "naive $suite: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
done
rm -f "$OUT"/*/corpus_check.md  # at most 8 files come back: the JSON holds everything
