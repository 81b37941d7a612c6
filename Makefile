# Entry points for people and CI. `make run` and `make test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install run test lint bench openapi clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[local,dev]'
	touch $(STAMP)

run: install
	$(VENV)/bin/memmy-kb dev up

test: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .

openapi: install
	$(PY) -c "from memmy_local.openapi import write; print('wrote', write())"

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache
