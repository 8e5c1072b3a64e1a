"""TEST ONLY: ``tests.settings.wsgi`` (WSGI mode) behind the documented nginx, in development mode.

As ``tests/production/asgi.py`` does for ASGI: ``AUTH = "none"`` refuses proxied requests,
so the forwarding headers nginx adds are dropped before django_mcp sees them.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings.settings_wsgi")

from typing import Any

from tests.settings.wsgi import application as inner

_DROP = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def application(environ: dict[str, Any], start_response: Any) -> Any:
    for key in _DROP:
        environ.pop(key, None)
    return inner(environ, start_response)
