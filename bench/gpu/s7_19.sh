#!/usr/bin/env bash
# Issue 19, session 7: time the naive kernels, their semantic rewrites and torch eager for the rows prepared here by
# `bench/row_coop/s7_19.py prep .carry-s7-19/prep` (carried). For bench/gpu/scripts_batch.sh:
#   bash bench/gpu/s7_19.sh RESULT_DIR
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s7_19.sh RESULT_DIR}
mkdir -p "$OUT"
python3 bench/row_coop/s7_19.py run --prep "${PREP:-.carry-s7-19/prep}" --out "$OUT" > "$OUT/s7_19.log" 2>&1
echo "s7_19: exit $?" >> "$OUT/s7_19.log"
tail -3 "$OUT/s7_19.log"
