#!/usr/bin/env bash
# One call on the GPU machine (issue 17): install the carried wheels (warpwise built from the commit in COMMIT),
# then A/A-verify the real kernels of realworld_aa_kernels.json and run `warpwise optimize --no-lineage` on the
# listed ones; results and logs under $OUT. The public files travel in the carry folder, never in the history.
#   run from the checkout's root:  CARRY=.carry-wt17 bash $CARRY/bench/gpu/realworld_aa.sh
# Budgets: AA_BUDGET (s, default 80: no A/A job starts after it), OPT_BUDGET (each optimize's GPU seconds, 8),
# OPT_CANDIDATES (4), TOTAL_TIMEOUT (s, 135: the whole python run), KERNELS (the listing beside this script).
set -uo pipefail
CARRY=${CARRY:-.carry-wt17}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$CARRY"/whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import sys, torch, cuda.bindings; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  command -v nvcc || echo "no nvcc"
  echo "warpwise commit $(cat "$CARRY/COMMIT")"
  date -u +%FT%TZ
} > "$OUT/env.txt" 2>&1
timeout "${TOTAL_TIMEOUT:-135}" python3 "$CARRY/bench/gpu/realworld_aa.py" --mirrors "$CARRY/mirrors" --out "$OUT" \
  --kernels "$CARRY/bench/gpu/${KERNELS:-realworld_aa_kernels.json}" --aa-budget-s "${AA_BUDGET:-80}" --optimize-budget-s "${OPT_BUDGET:-8}" --optimize-candidates "${OPT_CANDIDATES:-4}" \
  2>&1 | tee "$OUT/aa.log"
