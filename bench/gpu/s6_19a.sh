#!/usr/bin/env bash
# Issue 19, task s6-19a: re-measure the kernel the generalised row-cooperative-reduction now transforms (column
# means of a column-major matrix read through the index macro `IDX2C`, bench/suite_ood/column_sums/colmajor_mean.cu)
# through the gate against its naive kernel and against its problem's torch reference and torch eager, and run the
# card's GPU tests. Run from the repository root on the GPU machine, warpwise and its dependencies on PYTHONPATH:
#   bash bench/gpu/s6_19a.sh RESULT_DIR        (bounded by 200 s: 20 + 60 + 60 + 55)
#   bash bench/gpu/s6_19a.sh RESULT_DIR --dry-run   (the CPU part only: prepares and lists the candidates)
set -uo pipefail
OUT=${1:?usage: bash bench/gpu/s6_19a.sh RESULT_DIR [--dry-run]}
mkdir -p "$OUT"
LOG="$OUT/s6_19a.log"
PREP=$(mktemp -d)
{
  date -u
  git rev-parse HEAD 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import sys; print(sys.version.split()[0])"
} > "$LOG" 2>&1
t0=$(date +%s)
timeout 20 python3 bench/row_coop/prep.py "$PREP/all" >> "$LOG" 2>&1
# Keep only the column_sums candidates (the kernels this task's change newly reaches), manifest filtered alike.
python3 - "$PREP" >> "$LOG" 2>&1 <<'PY'
import json, shutil, sys
from pathlib import Path
prep = Path(sys.argv[1])
src, dst = prep / "all", prep / "sel"
m = json.loads((src / "manifest.json").read_text())
keep = [e for e in m["entries"] if e["original"].startswith("bench/suite_ood/column_sums/")]
for e in keep:
    for f in (src / e["candidate"]).parent.glob(Path(e["candidate"]).stem + "*"):
        (dst / f.parent.relative_to(src)).mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst / f.relative_to(src))
(dst / "manifest.json").write_text(json.dumps({**m, "entries": keep}, indent=1))
print("candidates:", [e["candidate"] for e in keep])
PY
echo "prep: $(( $(date +%s) - t0 )) s" >> "$LOG"
if [ "${2:-}" = "--dry-run" ]; then cat "$LOG"; exit 0; fi
t0=$(date +%s)
timeout 60 python3 bench/gpu/corpus_check.py --suite "$PREP/sel" --no-experts --out "$OUT/corpus" --budget-s 45 \
  --deadline-s 20 >> "$LOG" 2>&1
echo "corpus_check: $(( $(date +%s) - t0 )) s" >> "$LOG"
t0=$(date +%s)
timeout 60 python3 bench/row_coop/gate_check.py "$PREP/sel" "$OUT/gate.jsonl" --budget-s 45 >> "$LOG" 2>&1
echo "gate: $(( $(date +%s) - t0 )) s" >> "$LOG"
t0=$(date +%s)
# From /tmp with --import-mode=append, as bench/gpu/run_all.sh: in the repository root the source folder `warpwise/`
# would shadow the installed package (whose subpackages map to other folders).
REPO=$(pwd)
(cd /tmp && timeout 55 python3 -m pytest -p no:cacheprovider --import-mode=append --rootdir "$REPO" -c "$REPO/pyproject.toml" \
  -m gpu "$REPO/tests/skills/test_row_cooperative_reduction.py" -v -k colmajor) >> "$LOG" 2>&1
echo "gpu tests: $(( $(date +%s) - t0 )) s" >> "$LOG"
tail -5 "$LOG"
