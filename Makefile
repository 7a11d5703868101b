# Treechat: `make run` opens the app, `make test` passes the tests. Both bootstrap .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python compiles from source; keep the build portable, not tuned to this CPU.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
export LITELLM_LOCAL_MODEL_COST_MAP := True
# One test process per core (at least two): most tests wait on a subprocess or a socket.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 2 ] && n=2; echo $$n)

.PHONY: run test bench lint package clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel setuptools
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/treechat

test: $(STAMP)
	tests/system/packages.sh
	$(BIN)/ruff check desktop tests
	$(BIN)/mypy
	$(BIN)/lint-imports
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -p no:cacheprovider -m "not bench" \
		-n $(TEST_WORKERS) --dist loadfile --max-worker-restart=0 $(PYTEST_ARGS)

bench: $(STAMP)
	mkdir -p build/bench
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -p no:cacheprovider tests/benchmarks -m bench -s -q

lint: $(STAMP)
	$(BIN)/ruff check desktop tests
	$(BIN)/mypy
	$(BIN)/lint-imports

# The frozen app (PyInstaller onedir in build/dist/treechat) and the Linux installers in
# build/installers: a .deb and a portable .tar.gz.
package: $(STAMP)
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath build/dist \
		--workpath build/pyinstaller packaging/treechat.spec
	installers/linux/build-deb.sh deb tar

clean:
	rm -rf build dist
