# Quick start: `make train` (main job) and `make test` (test suite). Each sets up .venv on first use with what it
# needs: train the package, torch and the compiled kernel (`make setup`, about 1.4 GB); test adds the extras its tests
# use (about 2.6 GB in all). Each install step says what it installs and about how big; pip itself is kept quiet.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# setuptools' "Editable installation" notice (folders named like a package in the working directory may shadow it:
# here they are the package) is filtered out; anything else pip or setuptools warns about is shown.
PIP := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip --disable-pip-version-check --quiet install
# The numba kernel and the agents' search on it, compiled once (with their progress and time left) and cached on disk;
# later processes load them in about a second. `make setup` and `make train` compile them first, so that no later
# command does; `make test` before its workers start.
KERNEL := $(PY) -c "from agents.search import compiled; compiled.jit()"
, := ,

.PHONY: setup train test test-slow bench lint docs demo clean

$(PY):
	@echo "setup: a virtual environment in $(VENV) with the latest pip (about 25 MB)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	@echo "setup: torch 2.13.0 (about 870 MB as the CPU build; a CUDA build is larger)"
	@$(PIP) torch==2.13.0
	@echo "setup: scopa (editable) with numpy, numba, gymnasium, pettingzoo, stable-baselines3, tensorboard (about 500 MB)"
	@$(PIP) -e .
	@touch $(STAMP)

setup: $(STAMP)
	@$(KERNEL)

# $(call extras,EXTRAS,WHAT): add scopa's optional dependencies EXTRAS (pyproject.toml) to .venv, saying WHAT first.
define extras
	@echo "setup: $(2)"
	@$(PIP) -e '.[$(1)]'
	@touch $@
endef

TEST_WHAT := the tests' extras: pytest, ruff, mypy (dev), onnx (export), Starlette, Playwright (web), mkdocs (docs), \
	Tianshou, TorchRL, Ray with RLlib (integrations, ray) (about 1.2 GB)
$(VENV)/.installed-test: $(STAMP)
	$(call extras,dev$(,)export$(,)web$(,)docs$(,)integrations$(,)ray,$(TEST_WHAT))
	@touch $(VENV)/.installed-dev $(VENV)/.installed-docs
$(VENV)/.installed-dev: $(STAMP)
	$(call extras,dev,the development tools: pytest$(,) ruff$(,) mypy (about 100 MB))
$(VENV)/.installed-docs: $(STAMP)
	$(call extras,docs,the docs site's tools: mkdocs$(,) mkdocs-material$(,) mkdocstrings (about 100 MB))

# A clean Ctrl-C of train.py exits 130 after saving last.zip and printing how to resume: not a make error (the
# trap keeps the recipe's shell alive through the Ctrl-C, so that it can tell make the stop was clean).
train: $(STAMP)
	@$(KERNEL)
	trap : INT; $(PY) train.py $(ARGS) || [ $$? -eq 130 ]

# Where a fresh clone or a change of their code left the cache without them, the kernel and the search compile in
# the background while the tests that need neither run first (tests/conftest.py); the others start once they are
# cached, so the tests see a warm install, as a user does after `make setup`.
test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 $(ARGS)

test-slow: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 -m slow $(ARGS)

bench: $(STAMP)
	$(PY) bench/env_speed.py --variant classic --batch 4096 --seconds 10

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check . && $(PY) -m ruff format --check .
	$(PY) -m mypy scopa_env agents train.py evaluate.py

# The docs site (mkdocs-material, API reference from the docstrings) into site/; --strict fails on a broken link.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

demo: $(STAMP)
	mkdir -p runs
	$(PY) -m agents.cli.record --variant classic --games 5 --seed 0 --out runs/demo.jsonl

clean:
	rm -rf $(VENV) .pytest_cache site
