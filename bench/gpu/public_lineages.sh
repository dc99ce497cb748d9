#!/usr/bin/env bash
# Measure the public expert lineages of ONE repository on one H200 (issue 21): one call per repository.
#
# First run 2026-12-01 (all repositories in one call, the team's device time being scarce): the results are
# bench/results/public_lineages-<owner>+<name>-2026-12-01.{json,md}.
#
#   on the workstation (needs warpwise and the mirrors; the carry folder holds public code: never commit it):
#     .venv/bin/python bench/gpu/public_lineages.py prepare --mirrors /work/.mirror --out .carry-issue21
#   then, one device call per repository, carrying .carry-issue21 (the device tool's `carry`):
#     REPO=wangzyon/NVIDIA_SGEMM_PRACTICE bash bench/gpu/public_lineages.sh
#   or several repositories in one call (one child process measures versions until one faults):
#     REPO="wangzyon/NVIDIA_SGEMM_PRACTICE BBuf/how-to-optim-algorithm-in-cuda" bash bench/gpu/public_lineages.sh
#   then commit the two files it writes under $OUT as bench/results/public_lineages-<owner>+<name>-DATE.{json,md}.
#
# The repositories and their versions to measure (from `prepare`, 2026-12-01; 54 of the 77 compiled with NVRTC for
# sm_90 on the workstation, the rest are reported as compile failures): BBuf/how-to-optim-algorithm-in-cuda 12,
# Maharshi-Pandya/cudacodes 13, gau-nernst/learn-cuda 2, gpu-mode/lectures 9, wangzyon/NVIDIA_SGEMM_PRACTICE 7,
# xlite-dev/LeetCUDA 34. Each version runs in its own child process (PER_ENTRY_S, default 90 s); the batch stops
# starting new ones after BUDGET_S (default 480 s) so the call ends inside the device tool's 600 s.
# Files under $OUT: env.txt, public_lineages-<owner>+<name>.json and .md, batch.log.
set -uo pipefail
OUT=${OUT:-/tmp/out}
CARRY=${CARRY:-.carry-issue21}
: "${REPO:?set REPO=owner/name (or several, space-separated)}"
REPO_ARGS=()
for r in $REPO; do REPO_ARGS+=(--repo "$r"); done
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import sys, torch, cuda.bindings; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  git rev-parse HEAD 2>/dev/null || true
  date -u +%FT%TZ
} > "$OUT/env.txt" 2>&1
python3 "${SCRIPT:-bench/gpu/public_lineages.py}" run --carry "$CARRY" "${REPO_ARGS[@]}" --out "$OUT" \
  --per-entry-s "${PER_ENTRY_S:-90}" --budget-s "${BUDGET_S:-480}" > "$OUT/batch.log" 2>&1
echo "public_lineages exit $?" >> "$OUT/batch.log"
tail -3 "$OUT/batch.log"
