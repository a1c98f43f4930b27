# ctxtap — `make demo` runs the built-in demo, `make test` runs the test suite.
# Both create the virtualenv (.venv) on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ctxtap-installed

.PHONY: demo test test-realcli lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxtap demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-realcli: $(STAMP)
	$(BIN)/python -m pytest -q -rs -m realcli tests/realcli

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache test-artifacts
