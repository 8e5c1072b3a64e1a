"""The test settings with ``TELEMETRY`` on; the SDK exports to ``TELEMETRY_TEST_DIR`` (see ``export``)."""

import os

from tests.settings import *  # noqa: F403
from tests.settings import DJANGO_MCP

DJANGO_MCP = {
    **DJANGO_MCP,
    "TELEMETRY": os.environ.get("MCP_TELEMETRY", "1") == "1",
    "TELEMETRY_TOOL_CONTENT": True,
}
if os.environ.get("TELEMETRY_TEST_DIR"):
    from tests.otel.export import configure

    configure(os.environ["TELEMETRY_TEST_DIR"])
