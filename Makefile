# Set-up and the two everyday commands. Everything runs from the repository root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo install clean

$(STAMP): requirements-dev.txt core/pyproject.toml plugins/*/pyproject.toml conformance/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n auto -q

demo: $(STAMP)
	$(BIN)/python examples/quickstart.py

clean:
	rm -rf $(VENV)
