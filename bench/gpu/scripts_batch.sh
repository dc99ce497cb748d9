#!/usr/bin/env bash
# One call on the GPU machine for several benchmark scripts: install the carried wheels (warpwise's own wheel and
# its dependencies in `.whl`), run each named script with its own time bound, and pack each script's result folder
# into one archive under $OUT (the device returns at most 8 files, so one archive per script).
#   run from the repository root, with `.whl` carried:
#     bash bench/gpu/scripts_batch.sh bench/gpu/s6_20.sh:240 bench/gpu/s6_19a.sh:200
#   (WHL=DIR installs the wheels of another carried folder, e.g. one without the LLM and Dask wheels)
#   each SCRIPT is called as `bash SCRIPT RESULT_DIR`; RESULT_DIR is $OUT/<script name>/ before packing.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${WHL:-.whl}"/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv 2>&1 | tee "$OUT/env.txt"
for spec in "$@"; do
  script=${spec%%:*}
  bound=${spec##*:}
  name=$(basename "$script" .sh)
  dir="$OUT/$name"
  mkdir -p "$dir"
  start=$(date +%s)
  timeout --kill-after=10 "$bound" bash "$script" "$dir" > "$dir/batch.log" 2>&1
  rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - start )) s (bound $bound s)" | tee -a "$OUT/env.txt"
  tail -n 8 "$dir/batch.log"
  tar -czf "$OUT/$name.tar.gz" -C "$OUT" "$name" && rm -rf "$dir"
done
