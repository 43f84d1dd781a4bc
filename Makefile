# Entry points: `make demo` (its own environment, then the demo), `make test` (the whole
# suite), `make test-fast` (the edit loop: no compat, no slow end-to-end modules), and
# `make docs` (rewrites the output of every example session in README.md and docs/*.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.pq-installed

.PHONY: demo test test-fast lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,compat]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pq demo

test: $(STAMP)
	$(PY) -m pytest -q --hypothesis-profile=repeatable

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not compat and not slow"

docs: $(STAMP)
	$(PY) -m tests.transcripts --update

lint: $(STAMP)
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) bench/speed.py
	$(PY) bench/rebase.py
	$(PY) bench/audit.py
	$(PY) bench/hook.py
	$(PY) bench/import.py
	$(PY) bench/drift.py
	$(PY) bench/binary.py
	$(PY) bench/gate.py

clean:
	rm -rf $(VENV) demo build
