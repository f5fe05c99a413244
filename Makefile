# Quick start: `make train` (main job) and `make test` (test suite). Each sets up .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup train test test-slow bench lint docs demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,export,web,docs,integrations,ray]'
	touch $(STAMP)

setup: $(STAMP)

# A clean Ctrl-C of train.py exits 130 after saving last.zip and printing how to resume: not a make error (the
# trap keeps the recipe's shell alive through the Ctrl-C, so that it can tell make the stop was clean).
train: $(STAMP)
	trap : INT; $(PY) train.py $(ARGS) || [ $$? -eq 130 ]

# The compiled kernel is loaded (compiled once, then from numba's disk cache) before the workers start, so that
# they do not both compile it.
KERNEL := $(PY) -c "from scopa_env import kernel; kernel.jit()"

test: $(STAMP)
	$(KERNEL)
	$(PY) -m pytest -q -n 2 $(ARGS)

test-slow: $(STAMP)
	$(KERNEL)
	$(PY) -m pytest -q -n 2 -m slow $(ARGS)

bench: $(STAMP)
	$(PY) bench/env_speed.py --variant classic --batch 4096 --seconds 10

lint: $(STAMP)
	$(PY) -m ruff check . && $(PY) -m ruff format --check .
	$(PY) -m mypy scopa_env agents train.py evaluate.py

# The docs site (mkdocs-material, API reference from the docstrings) into site/; --strict fails on a broken link.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

demo: $(STAMP)
	mkdir -p runs
	$(PY) -m scopa_env.record --variant classic --games 5 --seed 0 --out runs/demo.jsonl

clean:
	rm -rf $(VENV) .pytest_cache site
