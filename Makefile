# Set-up installs the pinned CPU build of torch first: a bare `torch` requirement would pull a
# multi-GB CUDA build.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0

.PHONY: setup test docs serve-docs demo bench clean

$(BIN)/nfst: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e '.[dev,docs]'
	touch $@

setup: $(BIN)/nfst

# The test command builds the documentation too: a broken link or reference fails it.
test: docs
	$(BIN)/python -m pytest

# Material for MkDocs prints a notice on every build that it reaches end of life on 2027-05-05
# (its successor is Zensical); noted here, silenced there.
docs: setup  ## the documentation site, into site/; strict: any warning is an error
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --quiet   # strict, into site/: mkdocs.yml

serve-docs: setup  ## the site at http://127.0.0.1:8000, rebuilt on every edit
	$(BIN)/mkdocs serve

demo: setup  ## the whole pipeline on the cipher task; prints where the report is
	$(BIN)/nfst run cipher --preset small

bench: setup
	$(BIN)/nfst bench backward
	$(BIN)/nfst bench compile

clean:
	rm -rf $(VENV) .nfst-cache .pytest_cache site
