"""docs/settings.md has a row for every ``DJANGO_MCP`` key and docs/checks.md one for every check id."""

from __future__ import annotations

import re
from pathlib import Path

from django_mcp.conf import DEFAULTS, SETTINGS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "django_mcp"


def table_rows(doc: str) -> str:
    return "\n".join(line for line in (ROOT / "docs" / doc).read_text().splitlines() if line.startswith("| `"))


def check_ids() -> set[str]:
    """Every ``django_mcp.E…``/``W…`` id the package can report (its own checks and the per-setting ones)."""
    found = {setting.id for setting in SETTINGS.values()}
    for source in PACKAGE.rglob("*.py"):
        found.update(re.findall(r'id="(django_mcp\.[EW]\d+)"', source.read_text()))
    return found


def test_every_setting_has_a_row_in_settings_md() -> None:
    rows = table_rows("settings.md")
    missing = [key for key in DEFAULTS if f"| `{key}` |" not in rows]
    assert not missing, f"docs/settings.md has no row for {missing}"


def test_every_check_id_has_a_row_in_checks_md() -> None:
    rows = table_rows("checks.md")
    ids = check_ids()
    assert {"django_mcp.E037", "django_mcp.E038", "django_mcp.W005", "django_mcp.E152"} <= ids
    missing = sorted(i for i in ids if f"| `{i}` |" not in rows)
    assert not missing, f"docs/checks.md has no row for {missing}"
