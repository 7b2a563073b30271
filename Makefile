# Everything installs into .venv; nothing is installed globally.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SMOKE := ../shared/contract-check/smoke.py

.PHONY: install setup demo test quick lint-python lint typecheck pytest smoke dist vsix bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# What the tests need beyond PyPI: Debian packages (apt-get, as root), real Helix, ... into one
# cache outside the repository ($$ACP_SIDECAR_TOOLS_CACHE, else ~/.cache/acp-sidecar-tools).
# Fails loudly with the command to run when it cannot install something (not root, offline).
setup: $(STAMP)
	$(BIN)/python -m tools.provision

# In a terminal: Neovim with the plugin and the demo agent. Otherwise: the narrated walkthrough.
demo: $(STAMP)
	@if [ -t 0 ] && [ -t 1 ]; then $(BIN)/nvim --clean -u editor-configs/nvim/demo.lua README.md; \
	else $(BIN)/python -m sidecar.walkthrough; fi

lint: setup
	$(BIN)/ruff check sidecar tests bench tools
	$(BIN)/ruff format --check sidecar tests bench tools
	@command -v luacheck >/dev/null || { echo "luacheck not found: run make setup (Debian package lua-check)" >&2; exit 1; }
	luacheck -q --config editor-configs/nvim/.luacheckrc editor-configs/nvim tests/nvim

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict -p tools

# Workers for the full suite (pytest-xdist); PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 3
# Tests marked `alone` time the sidecar's answers (100 ms bounds): they run after the others,
# one at a time, so that no other test's load is what they measure.
pytest: setup
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) -m "not alone"
	$(BIN)/pytest -q -m alone

smoke: $(STAMP)
	@if [ -f $(SMOKE) ]; then $(BIN)/python $(SMOKE) --sidecar $(BIN)/acp-sidecar; \
	else echo "smoke: $(SMOKE) not found, skipped"; fi

# The sdist and the wheel as they would go to PyPI, checked as PyPI would (twine check --strict).
# The wheel carries editor-configs/, and the VS Code extension only when `make vsix` built it first.
VSIX := editor-configs/vscode/acp-sidecar.vsix
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	@if [ -f $(VSIX) ]; then echo "dist: the wheel carries $(VSIX)"; \
	else echo "dist: no $(VSIX), so the wheel carries no VS Code extension (make vsix dist adds it)"; fi

# The VS Code extension (needs npm), for `make vsix dist`.
vsix:
	cd editor-configs/vscode && npm ci && npm run package

test: setup lint typecheck pytest smoke dist

# Lint and types of the Python code alone: no `make setup` needed, so CI runs it first and
# fails in a minute rather than after the long suite.
lint-python: $(STAMP)
	$(BIN)/ruff check sidecar tests bench tools
	$(BIN)/ruff format --check sidecar tests bench tools
	$(BIN)/mypy
	$(BIN)/mypy --strict -p tools

# Under a minute: lint, types, and the in-process tier: every test under tests/unit, marked
# `inprocess` by tests/conftest.py, which also fails any of them that starts a process.
# `make test` runs everything.
quick: lint-python
	$(BIN)/pytest -q -m "inprocess and not slow and not load" tests/unit

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist build acp_sidecar.egg-info
