#!/usr/bin/env bash
# Run the Neovim end-to-end scenario (tests/e2e_nvim/scenario.lua) against the real server, on a copy of the
# example in a temporary workspace, then check the saved file against the CLI's fix of the same card.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${WARPWISE_E2E_PYTHON:-$ROOT/.venv/bin/python}"
FILE=vector_ops.cu
CARD=double-literal-promotion
WORK="$(mktemp -d "${TMPDIR:-/tmp}/warpwise-e2e-nvim-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/workspace" "$WORK/expected" "$ROOT/.e2e/results" "$ROOT/docs/screenshots"
cp "$ROOT/examples/$FILE" "$WORK/workspace/$FILE"
cp "$ROOT/examples/$FILE" "$WORK/expected/$FILE"

status=0
( cd "$WORK/workspace" && \
  WARPWISE_PYTHON="$PY" WARPWISE_FILE="$WORK/workspace/$FILE" \
  WARPWISE_REPORT="$ROOT/.e2e/results/nvim.json" WARPWISE_LOG="$ROOT/docs/screenshots/nvim-session.md" \
  PYTHONDONTWRITEBYTECODE=1 HOME="$WORK" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
  XDG_STATE_HOME="$WORK/state" XDG_CACHE_HOME="$WORK/cache" \
  timeout 300 nvim --headless --clean -n -u NONE -c "luafile $ROOT/tests/e2e_nvim/scenario.lua" ) || status=$?

# The file Neovim saved must equal what `warpwise check --fix` makes of the same card.
"$PY" -m warpwise check --select "$CARD" --fix --unsafe-fixes "$WORK/expected/$FILE" >/dev/null 2>&1 || true
if [ "$status" -eq 0 ] && cmp -s "$WORK/workspace/$FILE" "$ROOT/examples/$FILE"; then
  echo "[e2e-nvim] WAIT the saved file equals \`warpwise check --fix\` of the same card: no fix was applied"
elif [ "$status" -eq 0 ]; then
  if cmp -s "$WORK/workspace/$FILE" "$WORK/expected/$FILE"; then
    echo "[e2e-nvim] PASS the saved file equals \`warpwise check --fix\` of the same card"
  else
    echo "[e2e-nvim] FAIL the saved file differs from \`warpwise check --fix\`:"
    diff -u "$WORK/expected/$FILE" "$WORK/workspace/$FILE" || true
    status=1
  fi
fi
echo "[e2e-nvim] $([ "$status" -eq 0 ] && echo passed || echo "FAILED ($status)"); report: .e2e/results/nvim.json"
exit "$status"
