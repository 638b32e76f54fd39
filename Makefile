# Set-up installs the pinned CPU build of torch first: a bare `torch` requirement would pull a
# multi-GB CUDA build.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0

.PHONY: setup test demo bench clean

$(BIN)/nfst: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup: $(BIN)/nfst

test: setup
	$(BIN)/python -m pytest

demo: setup  ## the whole pipeline on the cipher task; prints where the report is
	$(BIN)/nfst run cipher --preset small

bench: setup
	$(BIN)/nfst bench backward
	$(BIN)/nfst bench compile

clean:
	rm -rf $(VENV) .nfst-cache .pytest_cache
