# cvmc: `make demo` and `make test` work on a fresh machine; both create .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint bench venv clean fuzz-long

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/digits/demo.py

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
	$(BIN)/lit -q tests/filecheck

lint: $(STAMP)
	$(BIN)/pyright

bench: $(STAMP)
	$(BIN)/pip install -q onnxruntime onnx
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
