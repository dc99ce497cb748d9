#!/usr/bin/env bash
# Issue 18, session 9: the fix-safety builds of the torch extension files (LeetCUDA, learn-cuda, lectures) that the
# 2-core machine could not finish, on the GPU machine's CPUs (nvcc -cubin, no GPU use), with torch's own headers.
# Prepared on the CPU machine (see bench/results/fix_safety-2026-12-03-s9.md): .carry-s9-18/ holds corpus.tar.xz
# (the exports of the three repositories at their pinned commits, sources only, and the CUDA library headers),
# fscache.json (session 8's build outcomes by hash of text and command), commits.json, pyinc.tar.xz (CPython
# headers, used only when this machine's Python lacks its own).
#   bash bench/gpu/s9_18.sh RESULT_DIR      (BUDGET_S: the builds' wall-clock budget, default 430)
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s9_18.sh RESULT_DIR}
mkdir -p "$OUT"
LOG="$OUT/s9_18.log"
CARRY=.carry-s9-18
{
  date -u
  nproc
  free -g | head -2
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"
  which nvcc && nvcc --version | tail -2
} > "$LOG" 2>&1
mkdir -p /tmp/c18/m17
tar -xJf "$CARRY/corpus.tar.xz" -C /tmp >> "$LOG" 2>&1   # -> /tmp/c18/full, /tmp/c18/nvhdr
cp "$CARRY/commits.json" /tmp/c18/m17/commits.json
cp "$CARRY/fscache.json" /tmp/c18/fscache.json
EXTRA=(--extra-include /tmp/c18/nvhdr/nvidia/cu13/include --extra-include /tmp/c18/nvhdr/nvidia/nccl/include)
if ! python3 -c "import sysconfig, os, sys; sys.exit(not os.path.isfile(sysconfig.get_paths()['include'] + '/Python.h'))"; then
  mkdir -p /tmp/c18/pyinc && tar -xJf "$CARRY/pyinc.tar.xz" -C /tmp/c18/pyinc
  EXTRA+=(--extra-include /tmp/c18/pyinc/python3.11)
  echo "this Python has no Python.h: CPython 3.11's headers from the carry are used" >> "$LOG"
fi
ls /tmp/c18/full >> "$LOG"
t0=$(date +%s)
python3 bench/realworld_fix_safety.py /tmp/c18/m17 --only LeetCUDA --only learn-cuda --only lectures \
  --budget-s "${BUDGET_S:-430}" --timeout-s 300 --jobs "$(nproc)" --cache /tmp/c18/fscache.json "${EXTRA[@]}" \
  --extra-corpus /tmp/c18/full --extra-build --keep-from bench/results/fix_safety-2026-12-03-s8.json \
  --out "$OUT/fix_safety" >> "$LOG" 2>&1
echo "fix safety: exit $? after $(( $(date +%s) - t0 )) s" >> "$LOG"
cp /tmp/c18/fscache.json "$OUT/fscache.json"
tail -5 "$LOG"
