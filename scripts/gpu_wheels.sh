#!/usr/bin/env bash
# Download, into .whl/ (git-ignored through .git/info/exclude), the pure-Python and binary wheels the GPU machine
# lacks (Python 3.12, x86-64; it has torch, cupy, cuda-bindings, pytest, hypothesis, anyio, httpx, attrs, ...), at
# the versions this checkout's .venv holds, and a wheel of warpwise itself. Run from the repository root:
#   bash scripts/gpu_wheels.sh        then carry [".whl"] and run e.g. bench/gpu/run_all.sh there.
set -euo pipefail
VENV=${VENV:-.venv}
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
PKGS="pygls lsprotocol cattrs tree-sitter tree-sitter-cuda pydantic pydantic-core annotated-types typing-inspection
openai jiter sniffio distro httpx2 httpcore2 truststore idna jsonschema jsonschema-specifications referencing rpds-py
dask distributed partd locket tblib zict tornado pytest-asyncio pytest-lsp pyyaml"
for p in $PKGS; do
  v=$("$VENV/bin/pip" show "$p" 2>/dev/null | awk '/^Version/{print $2}' || true)  # a package this venv lacks: the newest
  spec=$p${v:+==$v}
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$spec" >/dev/null 2>&1 \
    || echo "could not download $spec" >&2
done
rm -f .whl/warpwise-*.whl
"$VENV/bin/pip" wheel -q --no-deps . -w .whl
rm -rf build
ls .whl | wc -l
