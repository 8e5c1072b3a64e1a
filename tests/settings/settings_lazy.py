"""``tests.settings`` with ``tests.lazyapp``, whose ``mcp.py`` registers a DRF viewset that queries while its
schema is built (``tests/test_drf_lazy.py``)."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.lazyapp"]  # noqa: F405
