"""The test settings with development mode's check left on (tests/test_dev_mode.py)."""

from tests.settings import *  # noqa: F403

SILENCED_SYSTEM_CHECKS: list[str] = []
