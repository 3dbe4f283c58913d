# Two commands do all set-up on a fresh machine (Debian, Python 3.11, node 20):
#   make run    venv + install + a real checkpoint / clear / resume demo on the embedded SQLite store
#   make test   venv + install + test tools + lint + type check + every test
# Both install the exact versions in constraints.txt; `make test-latest` tries the newest.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# The exact versions the tests ran with (pyproject.toml gives the ranges).
CONSTRAINTS := constraints.txt
# test-latest: the newest versions the ranges allow, in a venv of its own.
LATEST_VENV := .venv-latest

.PHONY: setup run link test test-latest lock lint format tools bench probe clean extension e2e

setup: $(STAMP)

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@echo "==> creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version))"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "==> installing infinite-context and its dependencies into $(VENV) (about a minute the first time)"
	$(PY) -m pip install --progress-bar on --disable-pip-version-check -c $(CONSTRAINTS) -e '.[dev]' | grep -E '^(Collecting|Successfully)' || true
	# An editable install leaves our modules uncompiled; hooks start on every tool call.
	$(PY) -m compileall -q shared server notebook >/dev/null
	$(PY) -c 'import infinite_context_brain.server.cli'  # the grep above hides pip's status: check the result
	touch $(STAMP)

run: setup
	$(PY) scripts/demo.py
	@echo
	@$(MAKE) --no-print-directory link

# The infinite-context command on PATH as people keep one: a link in ~/.local/bin (made if missing),
# then checked from a fresh login shell, as Claude Code started from another terminal would look.
link:
	@$(PY) scripts/link_command.py

# Real clients the tests drive (Claude Code CLI), pinned by tools/package-lock.json.
tools: tools/node_modules/.package-lock.json

tools/node_modules/.package-lock.json: tools/package.json tools/package-lock.json
	npm ci --prefix tools --no-audit --no-fund --loglevel=error

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The VS Code extension: npm ci, tsc --noEmit, eslint, node:test unit tests, esbuild bundle, .vsix.
extension: extension/node_modules/.package-lock.json
	npm run check --prefix extension
	npm run package --prefix extension

extension/node_modules/.package-lock.json: extension/package.json extension/package-lock.json
	npm ci --prefix extension --no-audit --no-fund --loglevel=error

test: setup tools lint extension
	$(PY) -m pytest

# The suite on the newest versions pyproject.toml allows (no constraints), in $(LATEST_VENV):
# what a fresh `pip install infinite-context-brain` gets. When it passes, `make lock` records them.
test-latest: tools
	$(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade --upgrade-strategy eager -e '.[dev]'
	$(LATEST_VENV)/bin/python -m pip list --format=freeze --exclude-editable | grep -i -E '^(mcp|pygls|pydantic|anyio)=='
	$(LATEST_VENV)/bin/python -m pytest

# constraints.txt from the versions installed in $(LATEST_VENV) (run test-latest first).
lock:
	{ sed -n '1,2p' $(CONSTRAINTS); $(LATEST_VENV)/bin/python -m pip freeze --exclude-editable; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)

# Real VS Code: code-server + headless Chromium install the .vsix in a two-folder workspace and
# drive it as a person would: status item per folder, menu, checkpoint editor, read-only Resume,
# History -> diff editor, live endless mode (the proxy started by the setting, a terminal routed
# through it, the saving in the status bar), an interpreter without the package (screenshots in
# e2e/screenshots/).
e2e: setup extension
	bash e2e/setup.sh
	IC_PYTHON=$(abspath $(PY)) node e2e/vscode-e2e.mjs

bench: setup
	$(PY) benchmarks/run.py

# Fault-and-fuzz probe of the real servers, hooks and stores (SQLite + a loopback redis-server).
probe: setup
	$(PY) benchmarks/probe.py

clean:
	rm -rf $(VENV) $(LATEST_VENV) tools/node_modules extension/node_modules extension/dist extension/out e2e/node_modules e2e/screenshots dist build .pytest_cache .mypy_cache .ruff_cache
