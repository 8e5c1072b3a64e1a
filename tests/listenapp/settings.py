"""The OAuth test project plus ``tests.listenapp``."""

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.listenapp"]  # noqa: F405
