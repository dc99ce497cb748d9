#!/usr/bin/env bash
# One call on the GPU machine: install the carried wheels, run the GPU tests (those of the verification gate by
# default; TEST_PATHS="tests" runs every GPU test of the project) and the throughput benchmark, and leave logs and
# result files under $OUT.
#   run from the repository root, with `.whl` carried:  bash bench/gpu/run_all.sh [pytest args...]
set -uo pipefail
REPO=$(pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=/tmp/warpwise-cache
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import torch, cuda.bindings, sys; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  command -v ncu compute-sanitizer nvcc
  nproc
} 2>&1 | tee "$OUT/env.txt"
TESTS=${RUN_TESTS:-1}
BENCH=${RUN_BENCH:-1}
if [ "$TESTS" = 1 ]; then
  paths=$(for p in ${TEST_PATHS:-tests/verify}; do echo "$REPO/$p"; done)
  (cd /tmp && timeout "${TEST_TIMEOUT:-420}" python3 -m pytest -p no:cacheprovider --import-mode=append \
    --rootdir "$REPO" -c "$REPO/pyproject.toml" -m gpu $paths -v --junitxml="$OUT/gpu_tests.xml" --durations=20 "$@") 2>&1 \
    | tee "$OUT/gpu_tests.log"
fi
if [ "$BENCH" = 1 ]; then
  timeout "${BENCH_TIMEOUT:-400}" python3 bench/verify_throughput.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/bench.log"
fi

if [ "${RUN_CLI:-1}" = 1 ]; then
  {
    for args in "saxpy saxpy_fma.cu --profile --sanitize" "center center_float.cu --profile" \
                "scale_rows scale_rows_coalesced.cu"; do
      set -- $args
      kernel=$1 cand=$2
      shift 2
      (cd /tmp && python3 -P -m warpwise verify "$REPO/examples/vector_ops.cu" --kernel "$kernel" \
        --candidate "$REPO/tests/fixtures/verify/examples/$cand" "$@")
      echo "exit code $?"
    done
  } 2>&1 | tee "$OUT/cli.log"
fi
grep -E "passed|failed" "$OUT/gpu_tests.log" | tail -2 || true
