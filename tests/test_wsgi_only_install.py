"""`pip install django-mcp-toolkit` (no extra) serves WSGI mode: a fresh virtualenv without Channels, daphne or Twisted.

The package is installed into a new virtualenv with only what WSGI mode needs besides it (gunicorn); a small
project written here mounts the endpoint as a Django view (``django_mcp.urls_wsgi``, as docs/transports.md has it),
passes ``manage.py check`` and is served by real gunicorn on loopback, driven by the official SDK client from this
virtualenv. The same environment shows the errors of a project that wants Channels mode without the ``asgi`` extra.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.support.fresh_venv import fresh_venv, run
from tests.support.servers import ROOT, free_port, spawn_server

# Installs its own virtualenv (uv's cache makes it a few seconds): once, on Django 5.2, SQLite, no channel layer.
pytestmark = [pytest.mark.own_config, pytest.mark.version_independent]

EXTRA = "pip install 'django-mcp-toolkit[asgi]'"

FILES = {
    "config/__init__.py": "",
    "books/__init__.py": "",
    "config/settings.py": """\
SECRET_KEY = "wsgi-only-install-test-key-0123456789-0123456789"
DEBUG = True  # AUTH = "none" is a development mode (loopback only)
ALLOWED_HOSTS = ["127.0.0.1"]
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django_mcp", "books"]
ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
DJANGO_MCP = {"SERVER_NAME": "Books", "AUTH": "none"}
""",
    "config/urls.py": """\
from django.urls import include, path

urlpatterns = [path("", include("django_mcp.urls")), path("", include("django_mcp.urls_wsgi"))]
""",
    "config/wsgi.py": """\
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
""",
    "books/mcp.py": """\
from django.contrib.auth import get_user_model

from django_mcp import site


@site.tool(title="Greet", annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False})
def greet(name: str) -> dict:
    \"\"\"Greet someone and say how many users the project has.\"\"\"
    return {"text": f"Hello, {name}!", "users": get_user_model().objects.count()}
""",
    # The same project wanting Channels mode: the endpoint left to an ASGI application it cannot build.
    "config/settings_asgi.py": """\
from config.settings import *  # noqa: F403

ROOT_URLCONF = "config.urls_asgi"
ASGI_APPLICATION = "config.asgi.application"
""",
    "config/urls_asgi.py": """\
from django.urls import include, path

urlpatterns = [path("", include("django_mcp.urls"))]
""",
    "config/asgi.py": """\
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django_mcp.asgi import get_asgi_application

application = get_asgi_application()
""",
}


@pytest.fixture(scope="module")
def wsgi_only(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A fresh virtualenv with the package (no extra) and gunicorn, and the project: (python, project, env)."""
    tmp = tmp_path_factory.mktemp("wsgi-only")
    # What `pip install django-mcp-toolkit` installs (the project's own dependencies, built from this checkout).
    python, env = fresh_venv(tmp, ROOT, "gunicorn")
    project = tmp / "project"
    for name, text in FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    env["PYTHONPATH"] = str(project)
    return python, project, env


def test_no_channels_daphne_or_twisted_installed(wsgi_only: tuple[Path, Path, dict[str, str]]) -> None:
    """The install pulled none of Channels mode's stack (channels, daphne, Twisted), and the package is the
    installed one, not this checkout. The hub has no layer there, as with Channels and no CHANNEL_LAYERS;
    a CHANNEL_LAYERS entry without Channels is refused, naming the extra."""
    python, project, env = wsgi_only
    probe = (
        "import importlib.util, django, django_mcp\n"
        "print(django_mcp.__file__)\n"
        "for name in ('channels', 'daphne', 'twisted'):\n"
        "    print(name, importlib.util.find_spec(name) is not None)\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "from django_mcp.state.hub import channel_layer\n"
        "print('layer', channel_layer('default'))\n"
        "settings.CHANNEL_LAYERS = {'default': {'BACKEND': 'channels.layers.InMemoryChannelLayer'}}\n"
        "try:\n"
        "    channel_layer('default')\n"
        "except ImproperlyConfigured as exc:\n"
        "    print(exc)\n"
    )
    lines = run(python, "-c", probe, cwd=project, env=env).stdout.splitlines()
    assert str(python.parent.parent) in lines[0], lines[0]
    assert lines[1:] == [
        "channels False",
        "daphne False",
        "twisted False",
        "layer None",
        f"CHANNEL_LAYERS['default'] is configured but Channels is not installed: {EXTRA}",
    ]


def test_check_and_gunicorn_serve_mcp(wsgi_only: tuple[Path, Path, dict[str, str]]) -> None:
    """`manage.py check` is clean, and gunicorn serves initialize, tools/list and a tools/call (the ORM inside)
    to the official SDK client."""
    python, project, env = wsgi_only
    run(python, "-m", "django", "migrate", "-v0", cwd=project, env=env)
    check = run(python, "-m", "django", "check", "--fail-level", "WARNING", cwd=project, env=env)
    assert "no issues" in check.stdout, check.stdout + check.stderr
    port = free_port()
    gunicorn = [str(python.parent / "gunicorn"), "-w", "2", "-k", "sync", "-b", f"127.0.0.1:{port}", "config.wsgi"]
    server = spawn_server(gunicorn, env, project / "gunicorn.log", port, "gunicorn", cwd=project)
    try:

        async def drive() -> None:
            async with Client(server.url, mode="legacy", read_timeout_seconds=30) as client:
                assert client.protocol_version == "2025-11-25"
                assert client.server_info is not None and client.server_info.name == "Books"
                tools = (await client.list_tools()).tools
                assert [t.name for t in tools] == ["greet"]
                for name in ("Ada", "Grace"):  # a session in the database, either of the two workers
                    result = await client.call_tool("greet", {"name": name})
                    assert not result.is_error, result
                    assert result.structured_content == {"text": f"Hello, {name}!", "users": 0}

        anyio.run(drive)
    finally:
        server.stop()
    log = (project / "gunicorn.log").read_text(errors="replace")
    assert "Traceback" not in log, log


def test_channels_mode_without_the_extra_says_what_to_install(wsgi_only: tuple[Path, Path, dict[str, str]]) -> None:
    """Without the `asgi` extra a project that routes the endpoint through Channels is told to install it: by
    E003 (and E005, its ASGI application failing to build) in `manage.py check`, and by django_mcp.asgi itself."""
    python, project, env = wsgi_only
    asgi_env = {**env, "DJANGO_SETTINGS_MODULE": "config.settings_asgi"}
    check = run(python, "-m", "django", "check", cwd=project, env=asgi_env, ok=False)
    assert check.returncode != 0
    lines = check.stderr.splitlines()
    e003 = next(i for i, line in enumerate(lines) if "django_mcp.E003" in line)
    assert "HINT:" in lines[e003 + 1] and EXTRA in lines[e003 + 1], check.stderr
    assert "django_mcp.E005" in check.stderr and f"not installed: {EXTRA}" in check.stderr, check.stderr
    build = (
        "import django_mcp.asgi\n"  # importing the module needs no Channels
        "from django.core.exceptions import ImproperlyConfigured\n"
        "for build in (lambda: django_mcp.asgi.application, django_mcp.asgi.mcp_urlpatterns):\n"
        "    try:\n"
        "        build()\n"
        "    except ImproperlyConfigured as exc:\n"
        "        print(exc)\n"
    )
    refused = run(python, "-c", build, cwd=project, env=asgi_env).stdout.splitlines()
    assert len(refused) == 2 and all(f"not installed: {EXTRA}" in line for line in refused), refused
