# Entry points for people and CI. `make run` and `make test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install run lint test unit integration e2e fuzz bench openapi clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[local,dev,desktop]'
	touch $(STAMP)

run: install
	$(VENV)/bin/memmy-kb dev up

# Static checks. `make test` runs them first, so a check added here runs there too.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Everything: the checks above, then every tier of tests.
test: install lint
	$(PY) -m pytest -n 2 $(PYTEST_ARGS)

# One tier at a time (no lint): unit (no AWS, no network), integration (the handlers on moto and the
# MemOS emulator), e2e (over HTTP against the local stack).
unit: install
	$(PY) -m pytest -n 2 tests/unit $(PYTEST_ARGS)

integration: install
	$(PY) -m pytest -n 2 tests/integration $(PYTEST_ARGS)

e2e: install
	$(PY) -m pytest -n 2 tests/e2e $(PYTEST_ARGS)

# The schema-driven fuzz of the local stack, longer than the bounded run in `make test`.
fuzz: install
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-300} $(PY) -m pytest -s tests/e2e/test_fuzz_e2e.py $(PYTEST_ARGS)

openapi: install
	$(PY) -c "from memmy_local.openapi import write; print('wrote', write())"

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache
