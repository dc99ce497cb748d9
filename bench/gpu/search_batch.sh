#!/usr/bin/env bash
# One call on one H200 (at most about 4 minutes): warpwise's search against greedy and random order on the naive
# suite at equal budget (issue 8). Results and logs go to $OUT: search_compare-DATE.json and .md, search.log,
# env.txt.
#
# Before the call, here (the wheels travel in `.whl`, see /work/.library/device/README.md):
#   .venv/bin/python -m pip wheel --no-deps -w .whl .    # warpwise from this working tree
#   .whl must also hold tree_sitter, tree_sitter_cuda, pydantic, pydantic_core, annotated_types,
#   typing_inspection and typing_extensions (cp312, manylinux x86-64); the machine has torch, numpy,
#   cuda-bindings and PyYAML already.
# The call (from the repository root, carrying `.whl`):
#   bash bench/gpu/search_batch.sh
# Knobs: SEARCH_TIMEOUT (hard limit, 230 s), WARPWISE_CACHE_DIR, SEARCH_ARGS (extra arguments for bench/search_compare.py, e.g.
# "--kernels softmax matmul --candidates 12").
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WARPWISE_CACHE_DIR=${WARPWISE_CACHE_DIR:-/tmp/warpwise-cache}
export WARPWISE_CORPUS="$PWD/lineages/corpus"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
  python3 -c "import torch, cuda.bindings, sys; print(sys.version.split()[0], torch.__version__, cuda.bindings.__version__)"
  python3 -P -c "import warpwise.search, warpwise.search.optimize; print('warpwise.search', warpwise.search.__file__)"
} 2>&1 | tee "$OUT/env.txt"
timeout "${SEARCH_TIMEOUT:-230}" python3 bench/search_compare.py --out "$OUT" ${SEARCH_ARGS:-} 2>&1 \
  | tee "$OUT/search.log" | tail -n 60
ls -la "$OUT"
