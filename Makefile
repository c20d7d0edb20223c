# Set-up and the two everyday commands. Everything runs from the repository root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo install clean peers

$(STAMP): requirements-dev.txt core/pyproject.toml plugins/*/pyproject.toml conformance/pyproject.toml service/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

# The peers `python -m benchmarks --vs-peers` compares with, in their own venv (never in .venv).
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed

$(PEERS_STAMP): benchmarks/requirements-peers.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -r benchmarks/requirements-peers.txt
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)

# The pi oracle (node 22 + pi from npm, cached in ~/.cache) is installed and proven once up front when shared/
# lies beside the checkout, so parallel test workers never install it concurrently; its tests skip without it.
ORACLE_SETUP := ../shared/oracle/setup.sh

test: $(STAMP)
	@if [ -f $(ORACLE_SETUP) ]; then bash scripts/oracle-ready.sh $(abspath ../shared) || echo "pi oracle could not be installed: its tests will skip"; fi
	$(BIN)/python -m pytest -n auto -q
	$(BIN)/python -m pytest -q -m slow

demo: $(STAMP)
	$(BIN)/sessiontree demo

clean:
	rm -rf $(VENV) $(PEERS_VENV)
