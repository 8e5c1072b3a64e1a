"""Build the wheel and sdist, check what they hold, and run the documented quickstart against the wheel.

``make package-check`` runs this. It

1. builds the sdist and, from it, the wheel (``uv build``);
2. checks the wheel holds every file of ``django_mcp/`` (``py.typed``, templates, migrations,
   static files, ...) and the LICENSE, and nothing from ``tests/``, ``example_project/``,
   ``benchmarks/`` or ``scripts/``; and that the sdist holds the LICENSE, README and ``py.typed``;
3. installs the wheel, with the extras the documents' first ``pip install django-mcp-toolkit[...]`` names
   (``asgi``: the quickstarts serve with Channels and daphne), and the newest Django into a fresh virtualenv;
4. for each document (README.md, docs/quickstart.md and docs/testing.md by default), runs
   ``django-admin startproject config`` and ``startapp books``, writes the document's file blocks
   into the project (docs/testing.md's after the README's), runs ``makemigrations``, ``migrate``
   and ``check``, lists the tools with ``mcp_inspect --format json``, calls each documented tool
   through the project's ASGI application, in process, and, when the blocks wrote a ``pytest.ini``,
   installs pytest-django and pytest-asyncio and runs ``pytest`` on the document's tests.

A file block is a fenced ``python`` block whose first line names the file:
``# books/mcp.py`` replaces the file, ``# config/settings.py (at the end)`` appends to it.

Needs PyPI for the wheel's dependencies and nothing else. ``PACKAGE_CHECK_PYTHON`` picks the
interpreter of the fresh virtualenv (default: the one running this script).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "django_mcp"
FORBIDDEN = ("tests/", "example_project/", "benchmarks/", "scripts/", "docs/")
BLOCK = re.compile(
    r"^```(?:python|ini)\n# (?P<path>[\w./-]+\.(?:py|html|txt|ini))(?P<rest>[^\n]*)\n(?P<body>.*?)^```", re.M | re.S
)
#: A document whose blocks go into the project another one builds (docs/testing.md tests the README's).
BUILDS_ON = {"docs/testing.md": "README.md"}
#: The install command a document gives its reader (its first one): ``pip install "django-mcp-toolkit[asgi]"``.
INSTALL = re.compile(r"^pip install \"?django-mcp-toolkit(?:\[(?P<extras>[\w,-]+)\])?\"?(?:\s|$)", re.M)
#: What a document's own test files need (installed into the fresh virtualenv before ``pytest`` runs them).
TEST_REQUIREMENTS = ("pytest", "pytest-django", "pytest-asyncio")
#: ``@site.tool...`` (on one line or several, up to the closing ``)`` at the start of a line), then its function.
TOOL = re.compile(r"^@site\.tool\b(?:\([^\n]*\)|(?:\(\n(?:[^\n]*\n)*?\)))?[^\n]*\n(?:async )?def (\w+)\(", re.M)

# Sent to the project's ASGI application by the driver below (written into the new project).
DRIVER = r"""
import asyncio, json, sys

from config.asgi import application

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


async def post(method, params, name=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}).encode()
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", VERSION.encode()),
               (b"mcp-method", method.encode()), (b"content-length", str(len(body)).encode())]
    if name:
        headers.append((b"mcp-name", name.encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/mcp/", "raw_path": b"/mcp/", "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 50123), "server": ("127.0.0.1", 8000)}
    sent, done, out = [False], asyncio.Event(), {"status": 0, "headers": {}, "body": b""}

    async def receive():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
            out["headers"] = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            out["body"] += message.get("body", b"")
            if not message.get("more_body"):
                done.set()

    await asyncio.wait_for(application(scope, receive, send), 30)
    text = out["body"].decode()
    if out["headers"].get("content-type", "").startswith("text/event-stream"):
        events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        text = json.dumps(next(e for e in reversed(events) if e.get("id") == 1))
    assert out["status"] == 200, (method, out["status"], text)
    answer = json.loads(text)
    assert "result" in answer, (method, answer)
    return answer["result"]


def sample(schema):
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    return {"string": "Ada", "integer": 3, "number": 1.5, "boolean": False, "array": [], "object": {}}.get(kind, "Ada")


async def main(expected):
    server = await post("server/discover", {})
    print("server/discover:", json.dumps(server.get("serverInfo", server))[:200])
    tools = {t["name"]: t for t in (await post("tools/list", {}))["tools"]}
    missing = set(expected) - set(tools)
    assert not missing, f"tools/list lacks {sorted(missing)}: {sorted(tools)}"
    for name in expected:
        schema = tools[name]["inputSchema"]
        args = {k: sample(v) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
        result = await post("tools/call", {"name": name, "arguments": args}, name=name)
        assert not result.get("isError"), (name, args, result)
        if "outputSchema" in tools[name]:
            assert "structuredContent" in result, (name, result)
        print(f"tools/call {name}({args}):", json.dumps(result.get("structuredContent", result["content"]))[:200])


asyncio.run(main(sys.argv[1:]))
"""


def run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None, capture: bool = False) -> str:
    shown = " ".join(str(c) for c in cmd)
    print(f"$ {shown}" + (f"   (in {cwd})" if cwd else ""), flush=True)
    started = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, text=True, capture_output=True)
    print(f"   ({time.monotonic() - started:.1f}s)", flush=True)
    if proc.returncode:
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"FAILED ({proc.returncode}): {shown}")
    if not capture and proc.stdout.strip():
        print("   " + proc.stdout.strip().replace("\n", "\n   "))
    return proc.stdout


def check_dists(dist: Path) -> Path:
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, (wheels, sdists)
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    expected = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    problems = [f"wheel lacks {name}" for name in sorted(expected - names)]
    kinds = {
        "py.typed": f"{PACKAGE}/py.typed",
        "templates": f"{PACKAGE}/templates/",
        "migrations": f"{PACKAGE}/migrations/0001_initial.py",
    }
    if any("/static/" in name for name in expected):
        kinds["static files"] = f"{PACKAGE}/static/"
    for kind, prefix in kinds.items():
        if not any(name.startswith(prefix) for name in names):
            problems.append(f"wheel has no {kind} ({prefix})")
    if not any(name.endswith(".dist-info/licenses/LICENSE") for name in names):
        problems.append("wheel has no LICENSE")
    problems += [f"wheel holds {name}" for name in sorted(names) if name.startswith(FORBIDDEN)]
    with tarfile.open(sdists[0]) as tar:
        members = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    problems += [
        f"sdist lacks {n}"
        for n in ("LICENSE", "README.md", "pyproject.toml", f"{PACKAGE}/py.typed")
        if n not in members
    ]
    if problems:
        raise SystemExit("Package contents:\n  " + "\n  ".join(problems))
    print(
        f"   {wheels[0].name}: {len(names)} files, {len(expected)} from {PACKAGE}/ (py.typed, templates, "
        f"migrations{', static' if 'static files' in kinds else ''}), LICENSE; nothing from {', '.join(FORBIDDEN)}"
    )
    print(f"   {sdists[0].name}: {len(members)} entries, LICENSE, README.md, py.typed")
    return wheels[0]


def blocks(doc: Path) -> list[tuple[str, bool, str]]:
    found = [(m["path"], "at the end" in m["rest"], m["body"]) for m in BLOCK.finditer(doc.read_text())]
    if not found:
        raise SystemExit(f"{doc}: no file blocks (a ```python block starting with '# path/to/file.py')")
    return found


def extras(doc: Path) -> set[str]:
    """The extras of the document's first install command (of the one it builds on when it has none)."""
    match = INSTALL.search(doc.read_text())
    if match is None and (rel := str(doc.relative_to(ROOT))) in BUILDS_ON:
        return extras(ROOT / BUILDS_ON[rel])
    if match is None:
        raise SystemExit(f"{doc}: no 'pip install django-mcp-toolkit' line")
    return set(filter(None, (match["extras"] or "").split(",")))


def check_doc(doc: Path, work: Path, python: Path) -> None:
    bin_dir = python.parent
    project = work / doc.stem.lower()
    project.mkdir()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("PYTHONPATH", None)  # the wheel, not the checkout
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a throwaway venv: caching bytecode saves seconds per command
    run(bin_dir / "django-admin", "startproject", "config", ".", cwd=project, env=env)
    run(python, "manage.py", "startapp", "books", cwd=project, env=env)
    (project / "books" / "tests.py").unlink(missing_ok=True)  # startapp's empty one; a document may write its own
    tools: list[str] = []
    docs = [ROOT / BUILDS_ON[rel], doc] if (rel := str(doc.relative_to(ROOT))) in BUILDS_ON else [doc]
    for path, append, body in [block for source in docs for block in blocks(source)]:
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"   {'append to' if append else 'write'} {path} ({body.count(chr(10))} lines) from {doc.name}")
        with target.open("a" if append else "w") as f:
            f.write(("\n\n" if append else "") + body)
        tools += TOOL.findall(body)
    if not tools:
        raise SystemExit(f"{doc}: no @site.tool in its file blocks")
    run(python, "manage.py", "makemigrations", cwd=project, env=env)
    run(python, "manage.py", "migrate", "--noinput", "-v0", cwd=project, env=env)
    run(python, "manage.py", "check", "--fail-level", "WARNING", cwd=project, env=env)
    surface = json.loads(
        run(python, "manage.py", "mcp_inspect", "--format", "json", cwd=project, env=env, capture=True)
    )
    listed = {t["name"] for t in surface["tools"]}
    assert set(tools) <= listed, f"mcp_inspect lists {sorted(listed)}, the document declares {tools}"
    print(f"   mcp_inspect: tools {sorted(listed)}")
    (project / "drive_mcp.py").write_text(DRIVER)
    run(python, "drive_mcp.py", *tools, cwd=project, env=env)
    if (project / "pytest.ini").exists():  # the document's own tests, as a reader runs them
        uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
        run(uv, "pip", "install", "-q", "--python", python, *TEST_REQUIREMENTS, cwd=project, env=env)
        run(bin_dir / "pytest", "-q", "-p", "no:cacheprovider", cwd=project, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docs", nargs="*", default=["README.md", "docs/quickstart.md", "docs/testing.md"])
    parser.add_argument("--keep", action="store_true", help="keep the work directory and print its path")
    args = parser.parse_args()
    started = time.monotonic()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if not uv:
        raise SystemExit("uv not found (pip install uv)")
    python = os.environ.get("PACKAGE_CHECK_PYTHON") or sys.executable
    work = Path(tempfile.mkdtemp(prefix="package-check-"))
    try:
        dist = work / "dist"
        run(uv, "build", "-q", "--out-dir", dist, ROOT)
        wheel = check_dists(dist)
        venv = work / "venv"
        run(uv, "venv", "-q", "--python", python, venv)
        venv_python = venv / "bin" / "python"
        wanted = sorted(set().union(*(extras(ROOT / doc) for doc in args.docs)))
        requirement = f"{wheel}[{','.join(wanted)}]" if wanted else str(wheel)
        run(uv, "pip", "install", "-q", "--python", venv_python, "--upgrade", requirement, "django")
        print("   " + run(venv_python, "-m", "django", "--version", capture=True).strip().join(["Django ", ""]))
        for doc in args.docs:
            print(f"== {doc}")
            check_doc(ROOT / doc, work, venv_python)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"package-check passed in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
