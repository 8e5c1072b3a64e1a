"""The settings docs/deployment.md gives, read from the page itself (what a user copies is what is tested).

Every ```` ```python ```` block of the guide is run in order; a name a later block assigns wins,
except ``DJANGO_MCP``, whose dicts are merged (each section adds its keys). Blocks elide what is
the project's own with ``# ...`` (the database ``NAME``): callers fill that in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"


def guide_settings() -> dict[str, Any]:
    settings: dict[str, Any] = {}
    mcp: dict[str, Any] = {}
    for block in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S):
        namespace: dict[str, Any] = {}
        exec(compile(block, str(GUIDE), "exec"), namespace)  # the guide's own settings
        for name, value in namespace.items():
            if name == "DJANGO_MCP":
                mcp.update(value)
            elif name.isupper():
                settings[name] = value
    settings["DJANGO_MCP"] = mcp
    return settings
