"""``GC_FREEZE``: a server process freezes the heap it loaded at startup (``django_mcp.runtime.gc_freeze``).

Each case is a fresh interpreter doing what the server does: importing the project's ASGI
application (daphne, uvicorn, gunicorn's uvicorn worker), or serving a first request through the
WSGI view under Django's WSGI handler (gunicorn sync workers), whose URLconf loads only then.
The speed this buys is measured in ``benchmarks/`` (docs/performance.md), not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: own_config: the heap a worker freezes does not depend on the database or the layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

ROOT = Path(__file__).resolve().parent.parent

ASGI = """
    import gc, json
    before = gc.get_freeze_count()
    from tests.settings.asgi import application
    print(json.dumps({"before": before, "after": gc.get_freeze_count(), "tracked": len(gc.get_objects())}))
"""

WSGI = """
    import gc, json
    from django.core.wsgi import get_wsgi_application
    application = get_wsgi_application()
    loaded = gc.get_freeze_count()
    status = []
    environ = {"REQUEST_METHOD": "OPTIONS", "PATH_INFO": "/mcp/", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
               "wsgi.input": __import__("io").BytesIO(), "wsgi.url_scheme": "http", "HTTP_HOST": "127.0.0.1"}
    b"".join(application(environ, lambda s, h, *a: status.append(s)))
    first = gc.get_freeze_count()
    b"".join(application(environ, lambda s, h, *a: status.append(s)))
    print(json.dumps({"before": loaded, "after": first, "again": gc.get_freeze_count(), "status": status}))
"""


def run(code: str, tmp_path: Path, settings: str, **overrides: object) -> dict[str, object]:
    """``code`` in a new interpreter with ``settings``, ``DJANGO_MCP`` updated by ``overrides``."""
    (tmp_path / "heap_settings.py").write_text(
        f"from {settings} import *  # noqa: F403\nDJANGO_MCP = {{**DJANGO_MCP, **{overrides!r}}}  # noqa: F405\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "heap_settings", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def grown(frozen: dict[str, object]) -> int:
    """Objects frozen since ``before`` (Python 3.12 starts with a few hundred in the permanent generation)."""
    before, after = frozen["before"], frozen["after"]
    assert isinstance(before, int) and isinstance(after, int)
    return after - before


def test_importing_the_asgi_application_freezes_what_startup_loaded(tmp_path: Path) -> None:
    frozen = run(ASGI, tmp_path, "tests.settings")
    assert grown(frozen) > 50_000  # Django, the project, the registry
    assert isinstance(frozen["tracked"], int)
    assert frozen["tracked"] < grown(frozen) // 10  # what a full collection still walks


def test_the_wsgi_view_freezes_at_its_first_request(tmp_path: Path) -> None:
    frozen = run(WSGI, tmp_path, "tests.settings.settings_wsgi")
    assert frozen["status"] == ["204 No Content", "204 No Content"]
    assert grown(frozen) > 50_000  # not before: the URLconf, hence the view, loads with the first request
    assert frozen["again"] == frozen["after"]  # once per process


BOTH = [(ASGI, "tests.settings"), (WSGI, "tests.settings.settings_wsgi")]


@pytest.mark.parametrize("code,settings", BOTH, ids=["asgi", "wsgi"])
def test_gc_freeze_off_leaves_the_collector_alone(tmp_path: Path, code: str, settings: str) -> None:
    frozen = run(code, tmp_path, settings, GC_FREEZE=False)
    assert grown(frozen) == 0
