#!/usr/bin/env bash
# The wheel as a user gets it: build the sdist and the wheel (the wheel from the sdist), `twine check` both,
# check the wheel against the source tree, then install it the three ways the README documents (pip into a clean
# virtual environment, `pipx install`, `uv tool install`) and run, from a folder outside the clone, the commands
# that read every kind of shipped data: check (cards, schema), cards list, ranking explain (the default model),
# check --format sarif, and the language server's smoke test (scripts/lsp_smoke.py).
#
#   scripts/wheel_smoke.sh [PYTHON]          (PYTHON: the interpreter with `build` and `twine`; default .venv)
#   WHEEL_SMOKE_INSTALLERS="pip pipx uv pre-commit bundled"   (what to test; default: all five)
#
# bundled: the VS Code extension's bundled libraries (scripts/bundle_libs.py), run as the extension runs them under
# `warpwise.importStrategy: useBundled`: PYTHONPATH=libs:libs/abi3:libs/cpXY in a Python with no warpwise.
#
# pre-commit: the hooks of .pre-commit-hooks.yaml, run by `pre-commit try-repo` (which installs warpwise from this
# repository's HEAD, as a user's pre-commit does) in a scratch git repository: `warpwise-check` fails on a file with
# findings, `warpwise-fix` applies its safe fix.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
# Absolute, since pipx and uv run it from other folders (not resolved through the venv's symlink).
case "$PY" in /*) ;; *) PY="$(pwd)/$PY" ;; esac
INSTALLERS="${WHEEL_SMOKE_INSTALLERS:-pip pipx uv pre-commit bundled}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/warpwise-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"

echo "== build sdist and wheel into $WORK/dist"
"$PY" -m build --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
WHEEL="$(ls "$WORK"/dist/warpwise-*.whl)"
"$PY" -m twine check --strict "$WORK"/dist/*
"$PY" scripts/check_wheel.py "$WHEEL"
VERSION="$("$PY" -c 'import ast,sys; t=ast.parse(open("warpwise/__init__.py").read()); print(next(ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and n.targets[0].id == "__version__"))')"

# A copy of the examples outside the clone, so nothing can be imported or read from the source tree.
mkdir -p "$WORK/project"
cp -r examples "$WORK/project/examples"
cp scripts/lsp_smoke.py "$WORK/lsp_smoke.py"

exercise() {
    # $1: the installed `warpwise` executable; $2: a label.
    local ww="$1" label="$2" rc
    echo "== $label: $ww"
    (
        cd "$WORK/project"
        test "$("$ww" --version)" = "warpwise $VERSION" || { echo "$label: --version is not $VERSION"; exit 1; }
        rc=0; "$ww" check examples/ >"$WORK/check.txt" || rc=$?
        test "$rc" -eq 1 || { cat "$WORK/check.txt"; echo "$label: check exited $rc, expected 1 (findings)"; exit 1; }
        grep -q "\[scalar-global-access\]" "$WORK/check.txt" || { echo "$label: no card finding in check"; exit 1; }
        tail -1 "$WORK/check.txt"
        "$ww" cards list >"$WORK/cards.txt"
        test "$(grep -c . "$WORK/cards.txt")" -ge "$(ls "$ROOT"/skills/cards/*.md "$ROOT"/skills/*/card.md 2>/dev/null | wc -l)" \
            || { cat "$WORK/cards.txt"; echo "$label: cards list misses cards"; exit 1; }
        echo "cards list: $(grep -c . "$WORK/cards.txt") lines"
        "$ww" ranking explain examples/matmul.cu | grep -q "predicted" || { echo "$label: ranking explain predicted nothing"; exit 1; }
        echo "ranking explain: predictions from the shipped model"
        rc=0; "$ww" check --format sarif examples/ >"$WORK/out.sarif" || rc=$?
        test "$rc" -eq 1 || { echo "$label: check --format sarif exited $rc"; exit 1; }
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("sarif:", len(d["runs"][0]["results"]), "results")' "$WORK/out.sarif"
        python3 "$WORK/lsp_smoke.py" examples/vector_ops.cu -- "$ww" serve
    )
}

for installer in $INSTALLERS; do
    case "$installer" in
    pip)
        "$PY" -m venv "$WORK/venv"
        "$WORK/venv/bin/python" -m pip install -q "$WHEEL"
        # The installed package, not the clone, must answer.
        (cd "$WORK" && "$WORK/venv/bin/python" -c 'import warpwise, sys; sys.exit(0 if "/venv/" in warpwise.__file__ else f"imported {warpwise.__file__}")')
        exercise "$WORK/venv/bin/warpwise" "pip install (clean venv)"
        ;;
    pipx)
        "$PY" -m venv "$WORK/tools"
        "$WORK/tools/bin/python" -m pip install -q pipx
        PIPX_HOME="$WORK/pipx" PIPX_BIN_DIR="$WORK/pipx-bin" PIPX_MAN_DIR="$WORK/pipx-man" \
            "$WORK/tools/bin/pipx" install --python "$PY" "$WHEEL" >"$WORK/pipx.log" 2>&1 || { cat "$WORK/pipx.log"; exit 1; }
        exercise "$WORK/pipx-bin/warpwise" "pipx install"
        ;;
    uv)
        test -x "$WORK/tools/bin/python" || "$PY" -m venv "$WORK/tools"
        "$WORK/tools/bin/python" -m pip install -q uv
        UV_TOOL_DIR="$WORK/uv-tools" UV_TOOL_BIN_DIR="$WORK/uv-bin" UV_CACHE_DIR="$WORK/uv-cache" \
            "$WORK/tools/bin/uv" tool install --quiet --python "$PY" "$WHEEL"
        exercise "$WORK/uv-bin/warpwise" "uv tool install"
        ;;
    bundled)
        "$PY" scripts/bundle_libs.py "$WHEEL" "$WORK/bundled/libs"
        test -f "$WORK/bundled/libs/bundle.json" || { echo "bundled: no bundle for this platform"; continue; }
        # A Python with nothing installed: a venv of the base interpreter, without pip.
        "$("$PY" -c 'import sys; print(sys._base_executable)')" -m venv --without-pip "$WORK/bare"
        if (cd "$WORK" && "$WORK/bare/bin/python" -c "import warpwise" 2>/dev/null); then
            echo "bundled: the bare Python already has warpwise"; exit 1
        fi
        tag="$("$WORK/bare/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
        libs="$WORK/bundled/libs"
        cat >"$WORK/bundled-warpwise" <<EOS
#!/bin/sh
PYTHONPATH="$libs:$libs/abi3:$libs/$tag" exec "$WORK/bare/bin/python" -P -m warpwise "\$@"
EOS
        chmod +x "$WORK/bundled-warpwise"
        exercise "$WORK/bundled-warpwise" "the extension's bundled libraries ($tag, a Python without warpwise)"
        ;;
    pre-commit)
        test -x "$WORK/tools/bin/python" || "$PY" -m venv "$WORK/tools"
        "$WORK/tools/bin/python" -m pip install -q pre-commit
        mkdir -p "$WORK/hooks-repo"
        # A kernel with a warning in the quiet default and a fix that is safe without a compiler (the hook's
        # environment has no NVRTC, so resource-guarded fixes are held back): today the vector-map rewrite of
        # scalar-elementwise-map. The check names no card: the hook must change the file and say which fix it applied.
        printf '__global__ void scale(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    x[i] = x[i] * 2.0f;\n  }\n}\n' >"$WORK/hooks-repo/scale.cu"
        (
            cd "$WORK/hooks-repo"
            git init -q . && git add scale.cu
            export PRE_COMMIT_HOME="$WORK/pre-commit-home"
            rc=0; "$WORK/tools/bin/pre-commit" try-repo "$ROOT" warpwise-check --all-files >"$WORK/hook.log" 2>&1 || rc=$?
            grep -q "scale.cu:[0-9]*:[0-9]*: warning" "$WORK/hook.log" && test "$rc" -eq 1 \
                || { cat "$WORK/hook.log"; echo "pre-commit: warpwise-check did not report the finding (exit $rc)"; exit 1; }
            echo "pre-commit warpwise-check: failed on the finding, as it should"
            rc=0; "$WORK/tools/bin/pre-commit" try-repo "$ROOT" warpwise-fix --all-files >"$WORK/hook.log" 2>&1 || rc=$?
            changed=0; git diff --quiet -- scale.cu || changed=1
            test "$changed" -eq 1 && grep -q "scale.cu: applied [0-9]* fix(es)" "$WORK/hook.log" \
                && grep -q "files were modified by this hook" "$WORK/hook.log" \
                || { cat "$WORK/hook.log"; echo "pre-commit: warpwise-fix did not apply the safe fix (exit $rc)"; exit 1; }
            echo "pre-commit warpwise-fix: applied the safe fix"
        )
        ;;
    *)
        echo "unknown installer $installer (pip, pipx, uv, pre-commit, bundled)" >&2
        exit 2
        ;;
    esac
done
echo "wheel smoke test passed: $(basename "$WHEEL") ($INSTALLERS)"
