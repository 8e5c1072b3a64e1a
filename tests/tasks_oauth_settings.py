"""``tests.oauth.settings`` with the Tasks framework's database backend installed (tests/test_tasks_live.py)."""

import importlib.util

from tests.oauth.settings import *  # noqa: F403

if importlib.util.find_spec("django.tasks") is None:
    INSTALLED_APPS.append("django_tasks")  # noqa: F405
INSTALLED_APPS.append("django_tasks_db")  # noqa: F405
