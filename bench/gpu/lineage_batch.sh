#!/usr/bin/env bash
# One call on one H200 (about 5 minutes; issue 7): build the lineages of the expert corpus (most valuable first,
# as many as the budget allows), run card admission on the naive suite, and the quality report. Every
# verification goes through the gate and its cache, so admission and quality reuse each other's results.
#
#   run from the repository root, with `.whl` carried:   bash bench/gpu/lineage_batch.sh
#   then, on the workstation, with the files it wrote:   .venv/bin/warpwise lineage ingest DIR
#
# Files under $OUT (8): env.txt, batch.log, lineages.json (every lineage, with its chart), admission.json and
# admission.md, quality.json and quality.md, cache.jsonl.gz (the gate's results, for `warpwise cache import`).
# Budgets (seconds; a job already running finishes after its budget is spent, so each step also has a timeout):
#   LINEAGE_BUDGET=130 (timeout 150), ADMIT_BUDGET=40 (55), QUALITY_BUDGET=65 (85).
# STEPS picks the steps (default "lineages admission quality"); a run split over two calls passes the first call's
# lineages.json as LINEAGES_FILE and its cache.jsonl.gz as CACHE_IMPORT, so no measurement is repeated.
# LINEAGE_OPS picks the lineages; PROFILE=1 (or an entry NAME=DIR/FILE.problem.py) also profiles their steps.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=${WARPWISE_CACHE_DIR:-/tmp/warpwise-cache}
STEPS=${STEPS:-"lineages admission quality"}
has() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
LOG="$OUT/batch.log"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import sys, torch, cuda.bindings; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  python3 -c "import matplotlib; print('matplotlib', matplotlib.__version__)"
  git rev-parse HEAD 2>/dev/null || true
  date -u +%FT%TZ
} > "$OUT/env.txt" 2>&1
if [ -n "${CACHE_IMPORT:-}" ]; then
  gzip -dc "$CACHE_IMPORT" | python3 -P -m warpwise cache import >> "$LOG" 2>&1
  echo "cache import exit $?" >> "$LOG"
fi

# Most valuable first: the lineages that exercise the most deoptimizers and cards. An entry NAME=DIR/FILE.problem.py
# walks DIR's expert on another problem file, as operator NAME (e.g. transpose_scalar=transpose/scalar.problem.py).
OPS=${LINEAGE_OPS:-"reduce_sum softmax_rows transpose sgemm histogram gemv layernorm bias_gelu rmsnorm_f16 blur3x3 scan"}
EXPERTS=()
VARIANTS=()
for op in $OPS; do
  case "$op" in
    *=*) VARIANTS+=("$op") ;;
    *) EXPERTS+=("lineages/corpus/$op/expert.cu") ;;
  esac
done

if has lineages && [ -z "${PROFILE:-}" ] && [ ${#VARIANTS[@]} -eq 0 ]; then
  echo "== lineages $(date -u +%T)" >> "$LOG"
  timeout "${LINEAGE_TIMEOUT:-150}" python3 -P -m warpwise lineage build "${EXPERTS[@]}" --backend local --no-write \
    --no-evidence --pack "$OUT/lineages.json" --budget-s "${LINEAGE_BUDGET:-130}" >> "$LOG" 2>&1
  echo "lineage build exit $?" >> "$LOG"
elif has lineages; then
  # Variants or PROFILE=1: each lineage is written (here, on the GPU machine), then every accepted step is
  # profiled with Nsight Compute (PROFILE_BUDGET=120, timeout 150) and the profiled lineages packed.
  echo "== lineages (written, then profiled) $(date -u +%T)" >> "$LOG"
  WRITTEN=()
  if [ ${#EXPERTS[@]} -gt 0 ]; then
    timeout "${LINEAGE_TIMEOUT:-150}" python3 -P -m warpwise lineage build "${EXPERTS[@]}" --backend local \
      --no-evidence --budget-s "${LINEAGE_BUDGET:-130}" >> "$LOG" 2>&1
    echo "lineage build exit $?" >> "$LOG"
    for e in "${EXPERTS[@]}"; do WRITTEN+=("lineages/results/$(basename "$(dirname "$e")")/lineage.json"); done
  fi
  for v in "${VARIANTS[@]}"; do
    name=${v%%=*}
    problem=lineages/corpus/${v#*=}
    timeout "${LINEAGE_TIMEOUT:-150}" python3 -P -m warpwise lineage build "$(dirname "$problem")/expert.cu" \
      --problem "$problem" --operator "$name" --backend local --no-evidence --budget-s "${LINEAGE_BUDGET:-130}" \
      >> "$LOG" 2>&1
    echo "lineage build $name exit $?" >> "$LOG"
    WRITTEN+=("lineages/results/$name/lineage.json")
  done
  echo "== profiles $(date -u +%T)" >> "$LOG"
  timeout "${PROFILE_TIMEOUT:-150}" python3 -P -m warpwise lineage profile "${WRITTEN[@]}" --pack "$OUT/lineages.json" \
    --budget-s "${PROFILE_BUDGET:-120}" >> "$LOG" 2>&1
  echo "lineage profile exit $?" >> "$LOG"
fi

if has admission; then
  echo "== admission $(date -u +%T)" >> "$LOG"
  LINEAGES=()
  LFILE=${LINEAGES_FILE:-$OUT/lineages.json}
  [ -f "$LFILE" ] && LINEAGES=(--lineages "$LFILE")
  timeout "${ADMIT_TIMEOUT:-55}" python3 -P -m warpwise cards admit --suite bench/suite --backend local "${LINEAGES[@]}" \
    --out "$OUT/admission.json" --no-write --budget-s "${ADMIT_BUDGET:-40}" >> "$LOG" 2>&1
  echo "cards admit exit $?" >> "$LOG"
fi

if has quality; then
  echo "== quality $(date -u +%T)" >> "$LOG"
  timeout "${QUALITY_TIMEOUT:-85}" python3 bench/quality.py --out "$OUT" --budget-s "${QUALITY_BUDGET:-65}" \
    --per-kernel-s "${QUALITY_PER_KERNEL:-10}" >> "$LOG" 2>&1
  echo "quality exit $?" >> "$LOG"
fi

python3 -P -m warpwise cache export 2>> "$LOG" | gzip > "$OUT/cache.jsonl.gz"
echo "== done $(date -u +%T)" >> "$LOG"
grep -E "^[a-z_0-9]+: [0-9]+ steps|exit [0-9]+|^== |^[a-z-]+ +(admitted|preview) " "$LOG" | tail -n 40
