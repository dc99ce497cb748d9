#!/usr/bin/env bash
# Issue 20, session 7: the tensor-core shapes past 48 KiB of shared memory (dynamic shared memory), timed by the
# gate on the H200 against cuBLAS, and the contraction GPU tests (every shape correct, odd sizes included).
# Run from the repository root on the GPU machine, warpwise and its dependencies on PYTHONPATH:
#   bash bench/gpu/s7_20.sh RESULT_DIR [STEPS] [DEADLINE_S]     (STEPS default perf,cublas; bounded by the caller)
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s7_20.sh RESULT_DIR [STEPS] [DEADLINE_S]}
STEPS=${2:-${STEPS:-perf,cublas}}
DEADLINE=${3:-${DEADLINE:-200}}
mkdir -p "$OUT"
LOG="$OUT/s7_20.log"
REPO=$(pwd)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"
} > "$LOG" 2>&1
ROOT=$(mktemp -d)
ln -s "$REPO" "$ROOT/src"
t0=$(date +%s)
python3 bench/contraction/mma2_h200.py --root "$ROOT" --out "$OUT" --deadline-s "$DEADLINE" --steps "$STEPS" \
  --budget-s "${BUDGET:-20}" >> "$LOG" 2>&1
echo "mma2 ($STEPS): exit $? after $(( $(date +%s) - t0 )) s" >> "$LOG"
if [ "${RUN_TESTS:-1}" = 1 ]; then
  t0=$(date +%s)
  # From /tmp with --import-mode=append, as bench/gpu/run_all.sh: the repository's `warpwise/` would shadow the
  # installed package.
  (cd /tmp && timeout 240 python3 -m pytest -p no:cacheprovider --import-mode=append --rootdir "$REPO" \
    -c "$REPO/pyproject.toml" -m gpu "$REPO/tests/skills/test_contraction_mma_gpu.py" -v) >> "$LOG" 2>&1
  echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s" >> "$LOG"
fi
tail -5 "$LOG"
