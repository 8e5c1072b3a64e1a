"""The test settings plus ``tests.taskapp``: each kind of tool (function, sync, view, DRF) run as a task."""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.taskapp"]
