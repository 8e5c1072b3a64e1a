"""The test project with strict mode on: its bare tools, resources and prompts stop check and daphne (E182)."""

from tests.settings import *  # noqa: F403

DJANGO_MCP = {**DJANGO_MCP, "REQUIRE_ACCESS_RULES": True}  # noqa: F405
