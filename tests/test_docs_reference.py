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


def test_the_users_docs_hold_no_developers_records() -> None:
    """docs/ is for users: no commit hashes, issue numbers, dated runs, nor paths a pip user lacks (the test suite's
    files; the benchmarks only where the page says they are in a checkout of the repository)."""
    import re

    from django_mcp.protocol.versions import ALL_REVISIONS

    docs = Path(__file__).resolve().parent.parent / "docs"
    found = []
    for page in sorted(docs.glob("*.md")):
        in_block, previous = False, ""
        for number, line in enumerate(page.read_text().splitlines(), 1):
            in_block ^= line.lstrip().startswith("```")
            where = f"{page.name}:{number}: {line.strip()[:100]}"
            hexes = [
                w for w in re.findall(r"\b[0-9a-f]{7,40}\b", line) if re.search(r"[a-f]", w) and re.search(r"\d", w)
            ]
            if hexes and not re.search(r"token|Token|Bearer|session=|sha256", line):
                found.append(("commit hash", where))
            if re.search(r"\bissues? #?\d+", line, re.I):
                found.append(("issue number", where))
            dates = [
                d for d in re.findall(r"(?<!specification/)\b20\d\d-[01]\d-[0-3]\d\b", line) if d not in ALL_REVISIONS
            ]
            if dates and not re.search(r"--since|--until|\d\d:\d\d:\d\d", line):  # the commands' own examples
                found.append(("date", where))
            if re.search(r"(^|[^\w/.-])tests/\w", line):
                found.append(("a test suite path", where))
            if re.search(r"(^|[^\w/.-])benchmarks/\w", line) and "checkout" not in previous + line and not in_block:
                found.append(("a benchmarks path outside a checkout", where))
            previous = line
    assert not found, "\n".join(f"{what}: {where}" for what, where in found)
