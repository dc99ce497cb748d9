#!/usr/bin/env bash
# One call on a GPU machine: check and time the expert corpus and the naive suite (issue 7), then measure every
# card rewrite that applies to the examples and the naive suite (card evidence). Logs and results go to $OUT.
#   run from the repository root, with `.whl` carried:  bash bench/gpu/session_batch.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv 2>&1 | tee "$OUT/env.txt"
timeout "${CORPUS_TIMEOUT:-230}" python3 bench/gpu/corpus_check.py --out "$OUT" --budget-s "${CORPUS_BUDGET:-190}" \
  2>&1 | tail -n 60 > "$OUT/corpus.log"
tail -n 25 "$OUT/corpus.log"
timeout "${EVIDENCE_TIMEOUT:-150}" python3 bench/card_evidence.py --out "$OUT" --budget-s "${EVIDENCE_BUDGET:-110}" \
  2>&1 | tail -n 200 > "$OUT/evidence.log"
tail -n 15 "$OUT/evidence.log"
