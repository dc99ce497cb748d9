#!/usr/bin/env bash
# One call on the GPU machine for the transformations of issue 19 part B (tiled transposes, private histograms):
# install the carried wheels, verify each candidate against its naive kernel through the gate, check and time each candidate against
# its problem's torch reference and torch eager (bench/gpu/corpus_check.py), and run the card's GPU tests.
#   run from the repository root with CARRY naming the carried folder (whl/, prep/, src/):
#   CARRY=.carry-wt16 bash "$CARRY/src/bench/transforms_b/gpu_batch.sh"
set -uo pipefail
OUT=${OUT:-/tmp/out}
CARRY=${CARRY:-.carry-wt16}
# A folder of its own: a warm machine may still hold another run's /tmp/site, which pip --target would keep.
SITE=${SITE:-/tmp/site-transpose-$$}
mkdir -p "$OUT"
deps=$(ls .whl/*.whl | grep -v '/warpwise-')
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" $deps "$CARRY"/whl/*.whl \
  || exit 1
export PYTHONPATH="$SITE" PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache-transforms-b
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__)"
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
timeout "${CORPUS_TIMEOUT:-75}" python3 "$CARRY/src/bench/gpu/corpus_check.py" --suite "$CARRY/prep" --no-experts ${CORPUS_ARGS:-} \
  --out "$OUT/corpus" --budget-s "${CORPUS_BUDGET:-60}" --deadline-s 20 2>&1 | tail -60 > "$OUT/corpus.log"
echo "corpus_check: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
t0=$(date +%s)
timeout "${GATE_TIMEOUT:-50}" python3 "$CARRY/src/bench/row_coop/gate_check.py" "$CARRY/prep" "$OUT/gate.jsonl" \
  --mappings "${GATE_MAPPINGS:-t32_kept,t64_b32x8,priv_kept,priv_coarse_cap1024}" --budget-s "${GATE_BUDGET:-40}" > "$OUT/gate.log" 2>&1
echo "gate: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
[ "${RUN_TESTS:-1}" = 1 ] || exit 0
t0=$(date +%s)
SRC=$(cd "$CARRY/src" && pwd)
(cd /tmp && timeout "${TEST_TIMEOUT:-25}" python3 -m pytest -p no:cacheprovider --import-mode=append --rootdir "$SRC" \
  -c "$SRC/pyproject.toml" -m gpu $(for f in ${TEST_FILES:-tests/skills/test_tiled_transpose.py tests/skills/test_private_histogram.py}; do echo "$SRC/$f"; done) -v) > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
tail -3 "$OUT/gpu_tests.log"
