# cvmc: `make demo` and `make test` work on a fresh machine; both create .venv first. `make demo` installs the
# core alone (numpy, xdsl, llvmlite, protobuf); every target that tests or measures adds the dev and ray extras.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEV     := $(VENV)/.installed-dev

.PHONY: demo test test-hosts lint bench venv clean fuzz-long mutate aot-consensus sanitize

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(STAMP)

$(DEV): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,ray]'
	touch $(DEV)

venv: $(DEV)

demo: $(STAMP)
	$(BIN)/python examples/digits/demo.py

# pytest runs over one worker per core (at most 4, pytest-xdist); a file's tests stay in one worker, so a module's
# fixtures (the AOT store, compiled corpora) are built once. 12 min in one process on 2 cores, 5.5 min in two.
# pyright (strict on dialects/ and the CUDA printers, basic elsewhere: pyproject.toml) is cheap beside them: about
# 45 s of CPU, 30 s on 2 idle cores.
test: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/pyright
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile
	$(BIN)/lit -q tests/filecheck
	$(MAKE) --no-print-directory sanitize

# The tests whose outcome depends on the CPU (marked `hosts`, tests/hosts.py) once per simulated host: generic,
# AVX2 only, AVX-512 VNNI without AMX, AMX. A native run of a tier this CPU lacks skips; see DEVELOPING.md.
HOSTS ?= generic avx2 avx512-vnni amx
test-hosts: $(DEV)
	@for host in $(HOSTS); do \
	  echo "== simulated host: $$host"; \
	  $(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile -m hosts --host=$$host || exit 1; \
	done

# The C-API library and its C client under ASan+UBSan, then TSan (issue 30): cases, bad arguments, stale and forged
# handles, a free while threads run, tampered and planted entries, concurrent inferences. About 10 s.
sanitize: $(DEV)
	$(BIN)/python tests/runtime/capi/sanitize.py

# pyright resolves `cvmc.passes` through the committed link cvmc/passes -> ../passes (see DEVELOPING.md);
# tools/check_imports.py checks that every import points down the layers (tools > runtime > codegen > passes).
lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/python tools/check_imports.py
	$(BIN)/pyright

bench: $(DEV)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info

# The long differential run of issue 3: random valid graphs, reference against cpu.
# The random-chain fuzzer, then coverage-guided fuzzing (atheris) of every reader (model files, Task IR, cvm-opt's
# MLIR, cvm-run's .npy; the quantizer's ONNX importer and calibration reader) for FUZZ_SECONDS each (each
# reader's line reports its executions, coverage and crashes),
# programs of C-API calls on an ASan+UBSan libcvm, then the property tests on 300 fresh graphs each (hypothesis's
# `long` profile).
FUZZ_SECONDS ?= 300
fuzz-long: $(DEV)
	$(BIN)/python -m cvmc.tools.fuzz_cvm --count 2000
	$(BIN)/python tests/fuzz/readers.py --seconds $(FUZZ_SECONDS)
	$(BIN)/python tests/fuzz/capi.py --seconds $(FUZZ_SECONDS)
	$(BIN)/python tests/fuzz/quantize.py --seconds $(FUZZ_SECONDS)
	HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest -q -p no:xdist tests/runtime/test_properties.py

# The consensus corpus through the C API of `cvm-aot` (issue 14; about a minute, not part of `make test`).
aot-consensus: $(DEV)
	$(BIN)/python tests/consensus/aot_replay.py $(if $(AOT_TARGET),--target $(AOT_TARGET))

# Mutation testing of issue 16 (not part of `make test`): cosmic-ray over the rules, the references, the int16
# path choice and NMS, on 2 worker copies; fails on a survivor not listed in tests/mutation/equivalent.md.
mutate: $(DEV)
	$(BIN)/python tests/mutation/run.py
