# ctxtap — `make demo` runs the built-in demo, `make test` runs the test suite.
# Both create the virtualenv (.venv) on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ctxtap-installed

.PHONY: demo test test-fast test-realcli test-mitm12 coverage wheel lint bench clean screenshot-live bytecode

$(STAMP): pyproject.toml
	@echo "installing ctxtap into $(VENV) (first run only, about 2 minutes)…"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,team]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxtap demo

# Three workers (pytest-xdist): most tests wait on the processes they start. A file's tests stay on one
# worker (--dist loadfile), so a module's fixtures are built once; files are handed out in the order
# tests/conftest.py gives them (the longest first), not reordered by xdist (--no-loadscope-reorder).
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

# The repository's bytecode, compiled before the tests: where PYTHONDONTWRITEBYTECODE is set (CI's
# environment sets it) Python never caches it, so each of the suite's ~600 Python processes compiled
# every ctxtap module it imported again (a quarter second of CPU for `ctxtap publish`). Python still
# checks each file's size and time against its source; compileall redoes only the files that changed.
# compileall does not follow the links in ctxtap/, so the linked folders are named.
BYTECODE_DIRS := ctxtap wire capture ingest proxy_addons redaction analysis reports tests

bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 2 $(BYTECODE_DIRS) >/dev/null

test: bytecode
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The edit loop: everything but the integration tests (processes, browsers, real CLIs, the big
# session captures; marker set by tests/conftest.py). `make test` runs them all.
test-fast: bytecode
	$(BIN)/python -m pytest -q -x -m "not integration and not realcli" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Line coverage of `make test`'s run (coverage.py through pytest-cov, worker processes included).
coverage: bytecode
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --cov=. --cov-report=term:skip-covered

# The wheel as a user installs it: built, installed offline into a fresh virtualenv, the demo run
# from outside the repository (CI's wheel tier).
wheel:
	.ci/wheel

test-realcli: bytecode
	$(BIN)/python -m pytest -q -rs -m realcli tests/realcli

# The tests that touch mitmproxy (marker set by tests/conftest.py) again with mitmproxy 12, which
# needs Python >= 3.12, in a second virtualenv.
# PYTHON12=/path/to/python3.x picks the interpreter; otherwise the newest >= 3.12 on PATH or
# in pyenv. Skipped, with a message, when the machine has none.
VENV12 ?= .venv-mitm12
STAMP12 := $(VENV12)/.ctxtap-installed

$(STAMP12): pyproject.toml
	test -x $(VENV12)/bin/python || $(PYTHON12) -m venv $(VENV12)
	$(VENV12)/bin/python -m pip install --quiet --upgrade pip
	$(VENV12)/bin/python -m pip install --quiet -e ".[test]" "mitmproxy>=12,<13"
	$(VENV12)/bin/python -c "import mitmproxy.version as v; assert v.VERSION.startswith('12.'), v.VERSION"
	touch $(STAMP12)

test-mitm12:
	@py="$${PYTHON12:-$$(.ci/find-python 3.12)}"; \
	if [ -z "$$py" ]; then \
	  echo "test-mitm12: skipped: no Python >= 3.12 on PATH or in pyenv (mitmproxy 12 needs one); set PYTHON12=..."; \
	  exit 0; \
	fi; \
	echo "test-mitm12: $$($$py --version) with mitmproxy 12 in $(VENV12)"; \
	$(MAKE) --no-print-directory $(STAMP12) PYTHON12="$$py" && \
	$(VENV12)/bin/python -m compileall -q -j 2 $(BYTECODE_DIRS) >/dev/null && \
	$(VENV12)/bin/python -m pytest -q -p no:cacheprovider -m "mitmproxy and not realcli" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The README's picture of the live view (docs/live-view.png): a scripted agent recorded with
# `ctxtap record --live`, its session page in headless Chromium. Not part of `make test`.
screenshot-live: $(STAMP)
	$(BIN)/python tests/live_screenshot.py docs/live-view.png

clean:
	rm -rf $(VENV) $(VENV12) .pytest_cache .ruff_cache test-artifacts
