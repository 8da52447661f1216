# fulmen — every target does its own set-up through `make install` (idempotent).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
# The kernel (core/ = fulmen-core) and the default plugin distributions; meta/ is the `fulmen`
# distribution users pip-install: no code, it depends on these and names the extras.
DISTS  := core accelerators strategies precision environments
META   := meta
# Extra plugin packages under plugins/ (each its own distribution). fulmen-horovod is installed
# too, but Horovod itself is built from source (minutes, patched for C++17) only by
# `make install-horovod`; without it strategy="horovod" says how to get it.
PLUGIN_DISTS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
STAMP  := $(VENV)/.installed
SRC    := $(foreach d,$(DISTS) $(PLUGIN_DISTS),$(d)/src)
# Torch C++ extensions (DeepSpeed's CPU shared-memory op) are built into this venv, not the shared
# ~/.cache: another checkout with another path would rebuild them there, and a build killed
# half-way leaves a lock that makes every later run wait forever.
export TORCH_EXTENSIONS_DIR := $(abspath $(VENV))/torch_extensions

.PHONY: install install-horovod ecosystem demo test test-all test-gpu lint bench docs clean

install: $(STAMP)

$(STAMP): constraints.txt requirements-dev.txt $(foreach d,$(DISTS) $(META) $(PLUGIN_DISTS),$(d)/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: with no torch present a looser requirement would pull CUDA wheels.
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q -c constraints.txt torch
	# `fulmen` used to name the kernel (now fulmen-core): pip would uninstall such an install only
	# after installing fulmen-core, taking the `fulmen` command fulmen-core just wrote with it.
	$(PIP) uninstall -q -y fulmen 2>/dev/null || true
	$(PIP) install -q -c constraints.txt -r requirements-dev.txt $(foreach d,$(DISTS) $(META) $(PLUGIN_DISTS),-e ./$(d))
	# Build DeepSpeed's CPU op now, once, rather than inside the first timed test run.
	$(PY) -c "from deepspeed.comm.torch import build_shm_op; build_shm_op()" >/dev/null
	# scvi-tools' own tests, from its PyPI sdist (nothing of theirs is committed): make test runs a few
	$(PY) tests/ecosystem/fetch_tests.py $(VENV)/ecosystem-tests scvi-tools
	touch $(STAMP)

# Horovod (strategy="horovod"): built from its sdist against the installed torch (4-15 minutes on
# 2 cores the first time; the wheel is cached outside the repository and reused). The script is
# fulmen-horovod's `fulmen-build-horovod` command, which pip users run the same way.
install-horovod: install
	$(PY) -m fulmen_horovod.build

# Trains an MLP on scikit-learn's bundled digits (CPU, no download), then tests the best checkpoint.
demo: install
	PYTHONPATH=docs/examples $(PY) -m fulmen fit --config docs/examples/digits.yaml

# `make test` runs the representative suite (CI); `make test-all` adds the exhaustive matrices
# and long multi-process runs marked `slow`, among them the six libraries' slices in the
# ecosystem venvs `make ecosystem` builds outside the repository (FULMEN_ECO_DIR, ~4 GB).
test: install
	$(PY) -m ruff check .
	$(PY) -m mypy $(SRC)
	$(PY) -m pytest -q -m "not slow"

test-all: install ecosystem
	$(PY) -m ruff check .
	$(PY) -m mypy $(SRC)
	$(PY) -m pytest -q

ecosystem: install
	PYTHON=$(PYTHON) bash tests/ecosystem/build_env.sh

# The CUDA tier (tests marked `gpu`: tests/gpu and a few beside their CPU tests); each test is
# skipped without a CUDA device. On a machine without the network (the lent GPU), install the
# project another way and name its Python: `make test-gpu PY=python3` (tools/device-check.sh).
# GPU_TESTS: the files that hold them (collecting the whole suite there would import test-only
# packages the GPU image lacks).
GPU_TESTS ?= tests/gpu tests/accelerators tests/strategies/test_dp_ddp2.py
test-gpu: $(if $(filter $(VENV)/bin/python,$(PY)),install)
	$(PY) -m pytest -q -m gpu -p no:cacheprovider $(GPU_TESTS) $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy $(SRC)

bench: install
	@for f in $(filter-out %_worker.py,$(wildcard tests/benchmarks/*.py)); do echo "== $$f"; $(PY) $$f || exit 1; done

# The site from docs/ (mkdocs, material theme) into site/; --strict fails on a broken link or anchor.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
