# Entry points for people and CI. `make run` and `make test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# worksteal lets an idle worker take queued tests from the busy one, so a few long ones (the model tests,
# the browser) no longer leave one core idle at the end (one run here: 303 s instead of 410 s).
PYTEST := $(PY) -m pytest -n 2 --dist worksteal
# The page's browser tests drive Debian's chromium through Playwright (never `playwright install`).
MEMMY_KB_CHROMIUM ?= /usr/bin/chromium
export MEMMY_KB_CHROMIUM

.PHONY: install install-cli browser cjk-fonts layer-python run lint page-install page-unit test unit integration e2e e2e-stage e2e-stage-settings agents agents-install conformance-install fuzz bench load soak fair openapi screenshots clean

install: $(STAMP)

# Two distributions, one pip run: the user's client (client/, `memmy-kb`, with the OS keychain) and the
# root project (the core and the local stack, `memmy-local`, which also starts the client's desktop service).
# The root does not name the client as a requirement, so pip never looks for it in a registry. A change to
# either pyproject reinstalls both. setuptools' "Editable installation" notice (20 lines for the two, about
# folders named like a package in the working directory, which these are by design) is the one warning
# silenced.
$(STAMP): pyproject.toml client/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' \
	  $(PY) -m pip install --quiet --disable-pip-version-check -e './client[desktop,mcp]' -e '.[local,dev]'
	touch $(STAMP)

# `memmy-kb` on PATH for good, in an environment of its own apart from .venv (README, "memmy-kb on your
# PATH"): the client alone, with the keychain and the MCP server, by pipx if it is there, else by uv's tool
# install; each also puts its bin directory on PATH in the shell's profile. Run it again after an update.
CLIENT_SPEC := ./client[desktop,mcp]
install-cli:
	@if command -v pipx >/dev/null 2>&1; then \
	  pipx install --force '$(CLIENT_SPEC)' && pipx ensurepath; \
	elif command -v uv >/dev/null 2>&1; then \
	  uv tool install --force '$(CLIENT_SPEC)' && uv tool update-shell; \
	else \
	  echo "make install-cli puts memmy-kb on PATH with pipx or uv, and neither is installed. Install one" >&2; \
	  echo "(apt install pipx, brew install pipx or brew install uv) and run make install-cli again, or run" >&2; \
	  echo "pipx install '$(CLIENT_SPEC)' or uv tool install '$(CLIENT_SPEC)' yourself." >&2; \
	  exit 1; \
	fi

# $(call apt_install,PACKAGE,WHAT FOR,INSTRUCTION): Debian's PACKAGE installed with apt-get when we are
# root, else the one-line INSTRUCTION and a failure.
apt_install = if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(1) for $(2) (apt-get)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1) >/dev/null; \
	else \
	  echo "$(3)" >&2; \
	  exit 1; \
	fi

# chromium for the browser tests.
browser:
	@test -x $(MEMMY_KB_CHROMIUM) || { $(call apt_install,chromium,the page's browser tests,The page's browser \
	  tests need chromium: run 'sudo apt-get install chromium' (or set MEMMY_KB_CHROMIUM=/path/to/chromium) and try again.); }

# Chinese glyphs for screenshots (tests read the DOM and do not need them).
cjk-fonts:
	@fc-list :lang=zh 2>/dev/null | grep -q . || { $(call apt_install,fonts-noto-cjk,screenshots,Screenshots \
	  need a Chinese font: run 'sudo apt-get install fonts-noto-cjk' and try again.); }

# The layer's tests (tests/unit/repository/test_layer_build.py) compile its bytecode with a Python 3.12, the Lambda
# runtime's. Without one they are skipped, and this says so first, in one line (the layer's Makefile
# finds the Python and words the reason; PYTHON312=/path/to/python3.12 chooses).
layer-python:
	@why="$$($(MAKE) -s --no-print-directory -C layers/core/python print-python 2>&1 >/dev/null)"; \
	  [ -z "$$why" ] || echo "note: skipping the layer-bytecode tests (tests/unit/repository/test_layer_build.py): $$why"

# The local stack until Ctrl-C; options for `memmy-local up` in ARGS: make run ARGS="--demo --port 0".
run: install
	$(VENV)/bin/memmy-local up $(ARGS)

# The knowledge-base page's tools: TypeScript (its checker, tsc) and Node's types, pinned in package.json and
# package-lock.json (npm ci into node_modules, once). The page itself has no build step.
PAGE_STAMP := node_modules/.installed-stamp

page-install: $(PAGE_STAMP)

$(PAGE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "make lint checks the page with node 20 and npm: install them and try again." >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(PAGE_STAMP)

# Static checks. `make test` runs them first, so a check added here runs there too. tsc checks the page's
# modules (tsconfig.json) and their unit tests (tests/unit/page/tsconfig.json) from their JSDoc types.
lint: install page-install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	node_modules/.bin/tsc -p tsconfig.json
	node_modules/.bin/tsc -p tests/unit/page/tsconfig.json

# The page's pure modules (its words, formatting, what it holds) under Node's own test runner.
page-unit:
	node --test tests/unit/page/

# Everything: the checks above, then every tier of tests, then the real agents.
test: layer-python install lint browser page-unit
	$(PYTEST) $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory agents

# One tier at a time (no lint): unit (no AWS, no network; the page's modules under node too), integration
# (the handlers on moto and the MemOS emulator), e2e (over HTTP against the local stack).
unit: layer-python install page-unit
	$(PYTEST) tests/unit $(PYTEST_ARGS)

integration: install
	$(PYTEST) tests/integration $(PYTEST_ARGS)

e2e: install browser
	$(PYTEST) tests/e2e $(PYTEST_ARGS)

# The e2e tier against a deployed stack (README, "Deploying"): MEMMY_KB_E2E_URL is its ApiUrl output, and
# MEMMY_KB_E2E_TOKEN_COMMAND a command that prints a login token for a user name (run as `COMMAND NAME
# [--name N] [--email E] [--phone P]`, making that person on first sight). The tests that need the local
# stack's internals are skipped, saying why; each run's people and KBs carry its id, and its KBs are deleted.
e2e-stage: e2e-stage-settings install browser
	$(PYTEST) tests/e2e $(PYTEST_ARGS)

e2e-stage-settings:
	@test -n "$$MEMMY_KB_E2E_URL" || { echo "make e2e-stage needs MEMMY_KB_E2E_URL: the deployed stack's ApiUrl output (README, \"Deploying\")" >&2; exit 1; }
	@test -n "$$MEMMY_KB_E2E_TOKEN_COMMAND" || { echo "make e2e-stage needs MEMMY_KB_E2E_TOKEN_COMMAND: a command printing a login token for a user name (README, \"Deploying\")" >&2; exit 1; }

# The real agents: the releases of Claude Code, Codex CLI and Gemini CLI pinned in .agents/package-lock.json
# (npm ci into .agents/node_modules, once), each run offline against tests/support/fake_models.py with our
# hook and our MCP server installed. Everything runs in a network namespace with only loopback in it
# (unshare --net --map-root-user; tests/agents/conftest.py brings it up): the local stack, the desktop
# service, the fake model server, the agents.
AGENTS_DIR := .agents
AGENTS_STAMP := $(AGENTS_DIR)/node_modules/.installed-stamp

agents-install: $(AGENTS_STAMP)

$(AGENTS_STAMP): $(AGENTS_DIR)/package.json $(AGENTS_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "make agents needs node 20 and npm: install them and try again." >&2; exit 1; }
	cd $(AGENTS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(AGENTS_STAMP)

# The MCP conformance suite, run by the same tier against the remote endpoint (tests/agents/test_mcp_conformance.py),
# and the Node 22 it needs, as an npm package: both pinned in .conformance/package-lock.json.
CONFORMANCE_DIR := .conformance
CONFORMANCE_STAMP := $(CONFORMANCE_DIR)/node_modules/.installed-stamp

conformance-install: $(CONFORMANCE_STAMP)

$(CONFORMANCE_STAMP): $(CONFORMANCE_DIR)/package.json $(CONFORMANCE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "make agents needs node 20 and npm: install them and try again." >&2; exit 1; }
	cd $(CONFORMANCE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(CONFORMANCE_STAMP)

agents: install agents-install conformance-install
	unshare --net --map-root-user $(PY) -m pytest -n 0 tests/agents $(AGENTS_PYTEST_ARGS)

# The schema-driven fuzz of the local stack, longer than the bounded run in `make test`.
fuzz: install
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-300} $(PY) -m pytest -s tests/e2e/test_fuzz_e2e.py $(PYTEST_ARGS)

openapi: install
	$(PY) -c "from memmy_local.gateway.openapi import write; print('wrote', write())"

bench: install
	$(PY) -m bench

# Six users at once (USERS=60 for sixty) on a local stack of its own for 60 s or 5000 requests, then the
# oracle (bench/load.py): no recall outside the caller's scope at that moment, nothing lost, no MemOS
# residue; then each process's memory before and after. LOAD_DURATION, LOAD_REQUESTS, LOAD_USERS (USERS
# wins over it), LOAD_SEED, or flags: make load LOAD_ARGS='--duration 30 --seed 1'; with MemOS's rate
# limit enforced by the emulator (recall's governor then keeps under it): LOAD_ARGS='--memos-qps 20'.
load: install
	$(PY) -m bench.load $(if $(USERS),--users $(USERS)) $(LOAD_ARGS)

# The same scenario and oracle at 60 users (USERS) for ten minutes (SOAK_DURATION=120 to try it shorter),
# each process's memory sampled; fails when one keeps growing (bench/load_soak.py). Not part of make test.
soak: install
	$(PY) -m bench.load_soak $(if $(USERS),--users $(USERS)) $(SOAK_ARGS)

# Recall's fairness (bench/fair_recall.py; docs/load-test.md, "Fair recall"): on a stack of its own with
# MemOS limited to 10 searches a second, a light user at 1 recall/s alone, then with a heavy user at 10/s
# for 60 s, then alone again; fails unless she keeps her excerpts and latency and he meets only the
# per-user limit. Flags in FAIR_ARGS: make fair FAIR_ARGS='--memos-qps 20 --duration 30'.
fair: install
	$(PY) -m bench.fair_recall $(FAIR_ARGS)

# PNGs of each screen of the knowledge-base page, both languages, narrow and wide, into docs/screenshots/.
screenshots: install browser cjk-fonts
	$(PY) -m tests.e2e.page_screenshots docs/screenshots

clean:
	rm -rf $(VENV) .pytest_cache $(AGENTS_DIR)/node_modules node_modules
