#!/usr/bin/env bash
# All repositories of the public lineages in ONE device call (issue 21; the team's device time is scarce), from a
# carry folder holding manifest.json, sources/, problems/ and bench/gpu/{public_lineages,corpus_check}.py:
#   cd .carry-wt21 && OUT=$OUT BUDGET_S=210 bash bench/gpu/public_lineages_all.sh
# and optionally cccl.tgz (see below).
# Writes $OUT/env.txt, $OUT/batch.log and $OUT/results.tgz (one public_lineages-<owner>+<name>.{json,md} per
# repository; the device tool returns at most 8 files).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/public_lineages
export PYTHONUNBUFFERED=1
# CCCL's headers (the workstation toolkit's include/cccl, carried as cccl.tgz): the extracted sources include
# <cuda/std/...> where the extractor found them on the workstation, and the GPU machine's CUDA wheels lack them.
if [ -f cccl.tgz ]; then
  mkdir -p /tmp/cccl && tar xzf cccl.tgz -C /tmp/cccl && export WARPWISE_EXTRA_INCLUDE_DIRS=/tmp/cccl/cccl
fi
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import sys, torch, cuda.bindings; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  date -u +%FT%TZ
} > "$OUT/env.txt" 2>&1
T0=$(date +%s)
python3 bench/gpu/public_lineages.py run --carry . \
  --repo wangzyon/NVIDIA_SGEMM_PRACTICE --repo BBuf/how-to-optim-algorithm-in-cuda --repo Maharshi-Pandya/cudacodes \
  --repo gpu-mode/lectures --repo xlite-dev/LeetCUDA --repo gau-nernst/learn-cuda \
  --out /tmp/public_lineages --per-entry-s "${PER_ENTRY_S:-40}" --budget-s "${BUDGET_S:-210}" > "$OUT/batch.log" 2>&1
echo "public_lineages exit $? wall $(( $(date +%s) - T0 )) s" >> "$OUT/batch.log"
(cd /tmp/public_lineages && tar czf "$OUT/results.tgz" ./*)
tail -8 "$OUT/batch.log"
