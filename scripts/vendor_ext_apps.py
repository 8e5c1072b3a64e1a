#!/usr/bin/env python3
"""Vendor the app side of the MCP Apps bridge: ``@modelcontextprotocol/ext-apps``'s ``app-with-deps.js``.

An MCP App page is rendered into a sandboxed frame that loads nothing it did not declare, so
``django_mcp.ui`` inlines the ext-apps ``App`` into every page. The package ships it as one
self-contained ES module ending in ``export{...}``; this script writes it to
``django_mcp/static/django_mcp/mcp-apps/ext-apps-app.js`` with that last statement made
``globalThis.McpExtApps = {...}`` (an inline module exports nothing), and copies its LICENSE.

``make node`` installs the pinned package into ``.node/``. Run this after changing the pin;
``--check`` (the suite's ``tests/test_ui.py``) fails when the vendored file is not what this makes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "ext-apps"
TARGET = ROOT / "django_mcp" / "static" / "django_mcp" / "mcp-apps"
BUNDLE = "ext-apps-app.js"
LICENSE = "LICENSE.ext-apps.txt"
_EXPORT = re.compile(r"export\{([^{}]*)\};?\s*$")


def vendored(package: Path = PACKAGE) -> dict[str, str]:
    """The files to write, by name: the bundle made a script that sets ``globalThis.McpExtApps``, the LICENSE."""
    meta = json.loads((package / "package.json").read_text())
    source = (package / "dist" / "src" / "app-with-deps.js").read_text()
    found = _EXPORT.search(source)
    if found is None:
        raise SystemExit("app-with-deps.js no longer ends in one export{...} statement: look at the new package")
    names = []
    for item in found.group(1).split(","):
        local, _, exported = item.strip().partition(" as ")
        names.append(f"{json.dumps(exported or local)}:{local}")
    digest = hashlib.sha256(source.encode()).hexdigest()
    header = (
        f"// @modelcontextprotocol/ext-apps {meta['version']} dist/src/app-with-deps.js (sha256 {digest}),\n"
        f"// {meta.get('license', '')} licensed (LICENSE.ext-apps.txt beside this file), by the Model Context\n"
        "// Protocol project. Vendored by scripts/vendor_ext_apps.py: its final export became globalThis.McpExtApps.\n"
    )
    bundle = header + source[: found.start()] + "globalThis.McpExtApps={" + ",".join(names) + "};\n"
    return {BUNDLE: bundle, LICENSE: (package / "LICENSE").read_text()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the vendored files differ")
    args = parser.parse_args()
    if not PACKAGE.exists():
        print(f"{PACKAGE} is missing: make node", file=sys.stderr)
        return 2
    stale = []
    for name, text in vendored().items():
        path = TARGET / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.check and stale:
        print(f"stale vendored files: {stale} (run scripts/vendor_ext_apps.py)", file=sys.stderr)
        return 1
    print("vendored:" if not args.check else "up to date:", ", ".join(sorted(vendored())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
