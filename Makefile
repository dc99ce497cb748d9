# warpwise: the two front-door commands are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint format bench clean help readme dist wheel-smoke

help:
	@echo "make run    - set up a virtual environment and run 'warpwise check examples/'"
	@echo "make test   - install test dependencies, lint (ruff + mypy) and run the test suite"
	@echo "make bench  - run the CPU benchmarks in bench/ and write results under bench/results/"
	@echo "make dist   - build the sdist and the wheel into dist/ and run twine check on them"
	@echo "make wheel-smoke - build the wheel, install it with pip, pipx and uv, and run check/cards/server from each"

$(STAMP): pyproject.toml
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,compile]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# `warpwise check` exits 1 when it reports findings; that is the expected outcome on the examples.
run: $(STAMP)
	$(BIN)/warpwise check examples/ || [ $$? -eq 1 ]

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/analyze_latency.py

# Regenerate the card table in README.md from the card library, and docs/configuration.md from the settings
# schema, the extension's manifest and the CLI parser (tests fail when either is stale).
readme: $(STAMP)
	$(BIN)/python -m warpwise.skills.readme README.md
	$(BIN)/python -m warpwise.reference docs/configuration.md

# The sdist and the wheel (the wheel is built from the sdist, so both carry every data file); version from
# warpwise/__init__.py.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	$(BIN)/python scripts/check_wheel.py dist/warpwise-*.whl

# The wheel installed as users install it (clean venv, pipx, uv tool), exercised from outside the clone.
wheel-smoke: $(STAMP)
	scripts/wheel_smoke.sh $(BIN)/python

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

# --- VS Code extension and end-to-end tests (vscode-extension/, tests/e2e/, scripts/e2e/) ---------------------------
EXT := vscode-extension
EXT_STAMP := $(EXT)/node_modules/.installed-$(shell cat $(EXT)/package-lock.json 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: vsix vsix-platforms e2e e2e-nvim

# Install scripts are not run: esbuild works without its postinstall, and vsce needs none of its optional natives.
$(EXT_STAMP): $(EXT)/package-lock.json
	cd $(EXT) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@rm -f $(EXT)/node_modules/.installed-*
	@touch $@

# The extension package: settings drift check against server/settings.schema.json, type-check, unit tests,
# production bundle, then $(EXT)/warpwise.vsix (`vsce package`, with the Marketplace metadata checked).
# The VSIX carries the server's Python libraries (`bundled/libs`, scripts/bundle_libs.py: warpwise and its
# dependencies for CPython 3.11-3.13 on this platform; `warpwise.importStrategy: useBundled`), the warpwise wheel
# (`bundled/`, which the default `warpwise.installCommand` installs where the bundle does not serve), and the LICENSE.
vsix: $(EXT_STAMP) $(STAMP)
	rm -rf $(EXT)/bundled
	$(BIN)/python -m build --wheel --outdir $(EXT)/bundled . >/dev/null
	$(BIN)/python scripts/bundle_libs.py $(EXT)/bundled/warpwise-*.whl $(EXT)/bundled/libs
	cp LICENSE $(EXT)/LICENSE
	cd $(EXT) && npm test --silent && npm run --silent package

# One VSIX per VS Code target, each with the server's libraries for that platform (`vsce package --target`), and
# a universal one without them for every other platform; each checked down to its native libraries' headers
# (scripts/package_vsix.sh, scripts/check_vsix.py). linux-arm64 and alpine-x64 are left out: the package index
# reachable here had no pydantic-core 2.50 wheel for them on 2026-12-01 (scripts/bundle_libs.py names what is
# missing when asked); add them where the index has it.
VSIX_TARGETS ?= linux-x64 darwin-x64 darwin-arm64 win32-x64 win32-arm64
vsix-platforms: $(EXT_STAMP) $(STAMP)
	scripts/package_vsix.sh $(BIN)/python dist/vsix $(VSIX_TARGETS)

# The extension in a real VS Code (code-server + headless Chromium); installs into .e2e/ on first use.
e2e: $(STAMP) vsix
	scripts/e2e/install.sh vscode
	scripts/e2e/vscode.sh

# The same scenario through Neovim's built-in LSP client.
e2e-nvim: $(STAMP)
	scripts/e2e/install.sh nvim
	scripts/e2e/nvim.sh
