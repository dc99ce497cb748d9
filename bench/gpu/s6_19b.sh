#!/usr/bin/env bash
# Issue 19, phase 1: bench/search_compare.py --lineage off --strategies mcts over the 60 non-contraction naive kernels
# of bench/suite and bench/suite_ood, plus the naive SGEMM (bench/suite/matmul) with 40 GPU-seconds. Ends within
# 420 s on one H200 (global timeout 415 s). Usage: bash bench/gpu/s6_19b.sh RESULT_DIR [--dry-run]
# Writes RESULT_DIR/s6_19b.json (the three parts merged, per kernel versions and GPU-s) and RESULT_DIR/s6_19b.log;
# the parts stay under RESULT_DIR/parts/. Report: python3 bench/gpu/s6_19b_report.py RESULT_DIR/s6_19b.json
set -uo pipefail
R=${1:?RESULT_DIR}
DRY=${2:-}
mkdir -p "$R/parts"
export PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=${WARPWISE_CACHE_DIR:-/tmp/warpwise-cache-19b}
export WARPWISE_CORPUS="$PWD/lineages/corpus"
PY=${PYTHON:-python3}
LOG="$R/s6_19b.log"
: >"$LOG"
run_part() {  # name hard-limit-s args...
  local name=$1 lim=$2; shift 2
  mkdir -p "$R/parts/$name"
  echo "== $name (limit ${lim}s): $*" | tee -a "$LOG"
  timeout -k 5 "$lim" "$PY" bench/search_compare.py --lineage off --strategies mcts --out "$R/parts/$name" $DRY "$@" \
    >>"$LOG" 2>&1
  echo "== $name rc=$?" | tee -a "$LOG"
}
main() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 || true; git rev-parse HEAD 2>&1 || true; } >>"$LOG"
  # Naive SGEMM: 40 GPU-s, up to 24 candidates (target: >= 12 versions evaluated).
  run_part sgemm 85 --kernels matmul --budget-s 40 --candidates 24 --wall-s 1 --deadline-s 75
  # bench/suite without matmul: 15 kernels, 3 GPU-s each.
  run_part suite 110 --kernels softmax layernorm transpose gemv bias_gelu blur3x3 sum rmsnorm gelu_f16 \
    gemv_colmajor topk conv3x3 scan_rows cross_entropy histogram --budget-s 3 --candidates 8 --wall-s 85 --deadline-s 100
  # bench/suite_ood without hgemm and sgemm: 45 kernels, 3 GPU-s each.
  local ood
  ood=$(cd bench/suite_ood && ls -d */ | tr -d / | grep -v -x -e hgemm -e sgemm | tr '\n' ' ')
  run_part ood 205 --suite bench/suite_ood --kernels $ood --budget-s 3 --candidates 8 --wall-s 180 --deadline-s 195
}
export -f run_part main
export R DRY PY LOG
timeout -k 5 415 bash -c main
"$PY" bench/gpu/s6_19b_report.py --merge "$R" >>"$LOG" 2>&1 || echo "merge failed" >>"$LOG"
ls -la "$R" >>"$LOG"
