#!/usr/bin/env bash
# Build one VSIX per VS Code target, each carrying the server's libraries for that platform, plus a universal
# VSIX without them (the fallback for every other platform: the interpreter's packages or the bundled wheel),
# and check each against its target (scripts/check_vsix.py).
#   scripts/package_vsix.sh PYTHON OUTDIR TARGET...        (run from the repository root; `make vsix-platforms`)
# A target whose wheels the package index lacks is reported and skipped, and the script then exits 1 after
# building the rest: nothing is published half-built without saying so.
set -euo pipefail
PY=$1 OUTDIR=$2
shift 2
EXT=vscode-extension
rm -rf "$OUTDIR" && mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
"$PY" -m build --wheel --outdir "$WHEELS" . >/dev/null
WHEEL=$(ls "$WHEELS"/warpwise-*.whl)
cp LICENSE "$EXT/LICENSE"
(cd "$EXT" && npm run --silent settings:check && npm run --silent typecheck && node tools/build.mjs --production)
failed=()
for target in universal "$@"; do
  rm -rf "$EXT/bundled" && mkdir -p "$EXT/bundled"
  cp "$WHEEL" "$EXT/bundled/"
  if [ "$target" = universal ]; then
    (cd "$EXT" && npx vsce package --no-dependencies --out "$OUTDIR/warpwise-universal.vsix" >/dev/null)
    "$PY" scripts/check_vsix.py "$OUTDIR/warpwise-universal.vsix"
    continue
  fi
  if ! "$PY" scripts/bundle_libs.py "$WHEEL" "$EXT/bundled/libs" --target "$target"; then
    echo "package_vsix: $target not built: its bundle could not be made (see above)" >&2
    failed+=("$target")
    continue
  fi
  (cd "$EXT" && npx vsce package --no-dependencies --target "$target" --out "$OUTDIR/warpwise-$target.vsix" >/dev/null)
  "$PY" scripts/check_vsix.py "$OUTDIR/warpwise-$target.vsix" --target "$target"
done
rm -rf "$EXT/bundled"
ls -l "$OUTDIR"
if [ ${#failed[@]} -gt 0 ]; then
  echo "package_vsix: not built: ${failed[*]}" >&2
  exit 1
fi
