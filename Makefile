# Two commands on a fresh clone: `make demo` and `make test`.
# Each (re)creates .venv when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	# compile the numba kernels once now, so a new process's first query loads them from the cache
	$(VENV)/bin/python -m skipidx.apps.warm
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/skipidx demo

test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest -q tests

bench: $(STAMP)
	$(VENV)/bin/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
