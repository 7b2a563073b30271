# Everything installs into .venv; nothing is installed globally.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SMOKE := ../shared/contract-check/smoke.py

.PHONY: install demo test lint typecheck pytest smoke bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m sidecar.walkthrough

lint: $(STAMP)
	$(BIN)/ruff check sidecar tests bench
	$(BIN)/ruff format --check sidecar tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

smoke: $(STAMP)
	@if [ -f $(SMOKE) ]; then $(BIN)/python $(SMOKE) --sidecar $(BIN)/acp-sidecar; \
	else echo "smoke: $(SMOKE) not found, skipped"; fi

test: lint typecheck pytest smoke

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
