"""The test host of MCP Apps (``host.mjs``, ``index.html``, ``sandbox.html``): built, and served beside a project.

``build(directory)`` bundles ``host.mjs`` with esbuild (installed by ``make node``) and copies the
pages there. ``with_host_page(app)`` wraps a project's ASGI application so that ``/host/<file>``
serves ``MCP_UI_HOST_DIR`` (the page must share the MCP endpoint's origin: the endpoint sends no CORS
headers), everything else going to the project as usual. A test harness, never part of the package.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent.parent / ".node" / "node_modules"


def build(directory: Path) -> Path:
    """The host page's files in ``directory``: ``index.html``, ``sandbox.html`` and the bundled ``host.js``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("index.html", "sandbox.html"):
        shutil.copy(HERE / name, directory / name)
    subprocess.run(  # AppBridge and the TypeScript SDK client in one module
        [str(NODE_MODULES / "esbuild" / "bin" / "esbuild"), str(HERE / "host.mjs"), "--bundle", "--format=esm",
         "--platform=browser", f"--outfile={directory / 'host.js'}", "--log-level=warning"],
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)}, check=True, timeout=120,
    )  # fmt: skip
    return directory


def with_host_page(app: Any) -> Any:
    """``app`` with ``/host/<file>`` served from ``MCP_UI_HOST_DIR`` when that is set."""
    folder = os.environ.get("MCP_UI_HOST_DIR")
    if not folder:
        return app
    root = Path(folder).resolve()

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/host/"):
            await app(scope, receive, send)
            return
        file = (root / path.removeprefix("/host/")).resolve()
        found = file.is_file() and file.is_relative_to(root)
        body = file.read_bytes() if found else b"not found"
        kind = (mimetypes.guess_type(file.name)[0] or "application/octet-stream") if found else "text/plain"
        await send({"type": "http.response.start", "status": 200 if found else 404,
                    "headers": [(b"content-type", kind.encode()), (b"cache-control", b"no-store")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    return application
