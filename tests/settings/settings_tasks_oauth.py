"""``tests.oauth.settings`` with the Tasks framework's database backend installed (tests/test_tasks_live.py).

Plus ``tests.taskgrants``: a task tool behind the ``notes:write`` scope (the revocation tests).
"""

import importlib.util

from tests.oauth.settings import *  # noqa: F403

if importlib.util.find_spec("django.tasks") is None:
    INSTALLED_APPS.append("django_tasks")  # noqa: F405
INSTALLED_APPS.append("django_tasks_db")  # noqa: F405
INSTALLED_APPS.append("tests.taskgrants")  # noqa: F405
DJANGO_MCP = {**DJANGO_MCP, "SCOPES": {**DJANGO_MCP["SCOPES"], "notes:write": "Write notes"}}  # noqa: F405
