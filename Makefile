# Two entry points for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/byoc-opt examples/seed_subgraph.mlir -p 'byoc{targets=ccompiler}'
	$(BIN)/byoc-opt examples/seed_subgraph.mlir -p 'byoc{targets=ccompiler},lower-to-c' -t c
	$(BIN)/byoc-run examples/small_cnn.mlir --targets ccompiler,examplejson

test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -n auto

test-slow: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -m slow -n auto

lint: $(STAMP)
	$(BIN)/ruff check byoc tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
