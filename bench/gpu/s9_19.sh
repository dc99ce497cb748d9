#!/usr/bin/env bash
# Issue 19, session 9: time the naive row operators below 0.95x eager, their chained row-register-cache candidates
# and torch eager, prepared here by `bench/row_coop/s9_19.py prep .carry-s9-19/prep` (carried). For
# bench/gpu/scripts_batch.sh:
#   bash bench/gpu/s9_19.sh RESULT_DIR
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s9_19.sh RESULT_DIR}
mkdir -p "$OUT"
python3 bench/row_coop/s9_19.py run --prep "${PREP:-.carry-s9-19/prep}" --out "$OUT" > "$OUT/s9_19.log" 2>&1
echo "s9_19: exit $?" >> "$OUT/s9_19.log"
tail -3 "$OUT/s9_19.log"
