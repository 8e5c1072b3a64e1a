"""A project without ``django.contrib.admin``: OAuth, the Tasks framework, no admin app and no admin URLs.

Operators of such projects run every operation with management commands (``mcp_switch``, ``mcp_client``,
``mcp_session``, ``mcp_task``, ``mcp_audit``): ``tests/test_ops_live.py`` serves it and runs them there.
"""

from tests.settings.settings_tasks_oauth import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "django.contrib.admin"]  # noqa: F405
ROOT_URLCONF = "tests.settings.urls_no_admin"
