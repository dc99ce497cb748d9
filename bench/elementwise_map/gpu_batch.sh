#!/usr/bin/env bash
# One call on the GPU machine for the scalar-elementwise-map transformation (issue 19, item 4 of the issue: elementwise
# maps): install the carried wheels, check and time each candidate against its problem's torch reference and torch
# eager (bench/gpu/corpus_check.py), verify candidates against their naive kernels through the gate
# (bench/row_coop/gate_check.py), and run the card's GPU test.
#   run from the repository root with CARRY naming the carried folder (whl/, prep/, src/):
#   CARRY=.carry-wt19s bash "$CARRY/src/bench/elementwise_map/gpu_batch.sh"
set -uo pipefail
OUT=${OUT:-/tmp/out}
CARRY=${CARRY:-.carry-wt19s}
SITE=${SITE:-/tmp/site-elementwise-$$}
mkdir -p "$OUT"
deps=$(ls .whl/*.whl | grep -v '/warpwise-')
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" $deps "$CARRY"/whl/*.whl \
  || exit 1
export PYTHONPATH="$SITE" PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache-elementwise
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__)"
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
timeout "${CORPUS_TIMEOUT:-100}" python3 "$CARRY/src/bench/gpu/corpus_check.py" --suite "$CARRY/prep" --no-experts ${CORPUS_ARGS:-} \
  --out "$OUT/corpus" --budget-s "${CORPUS_BUDGET:-85}" --deadline-s 20 2>&1 | tail -80 > "$OUT/corpus.log"
echo "corpus_check: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
t0=$(date +%s)
timeout "${NAIVE_TIMEOUT:-60}" python3 "$CARRY/src/bench/gpu/corpus_check.py" --suite "$CARRY/naive" --no-experts \
  --out "$OUT/naive" --budget-s "${NAIVE_BUDGET:-50}" --deadline-s 20 2>&1 | tail -40 > "$OUT/naive.log"
echo "naive: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
t0=$(date +%s)
timeout "${GATE_TIMEOUT:-70}" python3 "$CARRY/src/bench/row_coop/gate_check.py" "$CARRY/prep" "$OUT/gate.jsonl" \
  --mappings "${GATE_MAPPINGS:-v1,v2}" --budget-s "${GATE_BUDGET:-60}" > "$OUT/gate.log" 2>&1
echo "gate: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
