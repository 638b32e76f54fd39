# Set-up installs torch before nfst, from PyTorch's CPU wheel index by default: PyPI's torch for
# Linux x86-64 is the CUDA build (gigabytes of wheels), and nfst's bare `torch>=2.1` would pull
# it. TORCH_INDEX=URL installs from another index (a CUDA one: .../whl/cu1XY); TORCH_INDEX= (empty)
# from pip's default index only. Where TORCH_INDEX cannot be reached, or has no such wheel, the
# set-up says so in one line and installs torch from the default index instead.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# a first try that fails fast and quietly: no retries, a short timeout, no error output
TORCH_FROM_INDEX = $(BIN)/pip install -q --retries 0 --timeout 10 --index-url $(TORCH_INDEX) \
	$(TORCH) 2>/dev/null || { echo "setup: no $(TORCH) from $(TORCH_INDEX) (unreachable, or no \
	wheel for this platform); installing it from pip's \
	default index, whose Linux x86-64 torch is the CUDA build"; $(BIN)/pip install -q $(TORCH); }

.PHONY: setup test lint docs serve-docs demo bench clean

$(BIN)/nfst: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(TORCH_FROM_INDEX),$(BIN)/pip install -q $(TORCH))
	$(BIN)/pip install -q -e '.[dev,docs]'
	touch $@

setup: $(BIN)/nfst

# The test command builds the documentation too: a broken link or reference fails it. The suite
# runs in TEST_WORKERS processes (pytest-xdist), a test file to each, so that a file's module
# fixtures and a documentation page's one run stay in one process.
TEST_WORKERS ?= 2
test: docs lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: setup  ## ruff: lint-clean and formatted (pyproject.toml's [tool.ruff])
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

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
