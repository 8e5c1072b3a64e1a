"""WSGI mode against the other Django MCP packages, and against our Channels mode.

Every server runs with the same number of worker processes (``--workers``, default 2) and
exposes the same tool, ``echo(text) -> text``; the load is one ``tools/call`` per request:

* ``ours-wsgi``      our WSGI wiring (``django_mcp.wsgi``: the endpoint's view code served directly) under
                     gunicorn sync workers (``benchmarks.settings_wsgi``), 2026-07-28 stateless and a
                     2025-11-25 session
* ``ours-wsgi-view`` the same view run by Django's own handler (URL resolving, middleware, request signals)
* ``ours-channels``  the Channels consumer (``tests.settings.asgi:application``) under uvicorn, same cases
* ``django-mcp-server``  (PyPI) under gunicorn sync workers: a 2025-06-18 session (its only mode
                     besides stateless; the official SDK in JSON-response mode inside a DRF view)
* ``django-mcpz``    (PyPI) under gunicorn sync workers: 2026-07-28 (the only revision it serves)
* ``django-view``    the floor of every Django WSGI endpoint: a plain sync view (same Django,
                     settings and gunicorn as django-mcpz) that parses the body and answers the
                     same result, with no MCP in it. No Django view can be faster in this
                     harness, so ``django-view ÷ django-mcpz`` bounds what any Django MCP view,
                     ours included, can reach against django-mcpz.
* ``bare-wsgi``      the floor of gunicorn itself: the same JSON work as a WSGI callable, no Django.

The two PyPI packages are installed into a throwaway virtualenv (``--peers-venv``, made on
first use with ``pip``); our servers run from this checkout's virtualenv. The client
(``--client``): ``python`` (the default: ``http.client``, ``--concurrency`` threads, one
connection per request since sync workers close it), pinned to no core, so on a small machine
it competes with the servers and lowers every figure alike; or ``wrk`` (``--concurrency``
connections, pinned to core 1, reconnecting after each response), which costs the cores far less.
Each row also gives the server's own CPU per request (every process of it, every thread, from
``/proc``: ``procstat``), steadier than req/s on a busy machine. Prints a Markdown table;
``--duration`` seconds per case. ``--pair-rounds N`` then serves ``ours-wsgi`` beside the selected
stateless peers (django-mcpz, the plain view, the bare callable) and loads them in turn, N rounds each,
and judges the WSGI target by the ratio of the medians, which drift on a shared machine cannot move
the way it moves two rows run minutes apart.

    python benchmarks/wsgi_peers.py --duration 5 --concurrency 8 [--client wrk] [--pair-rounds 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent

from benchmarks import procstat  # noqa: E402

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = "application/json, text/event-stream"

#: The settings of django-mcpz's project and of the plain Django view's: the same but for the URLconf.
PLAIN_SETTINGS = """
    SECRET_KEY = "bench"
    DEBUG = False
    ALLOWED_HOSTS = ["*"]
    INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
    MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
    ROOT_URLCONF = "{project}.urls"
    DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": __import__("os").environ["PEER_DB"]}}}}
    USE_TZ = True
"""

PEER_FILES = {
    "mcpserver_project/settings.py": """
        SECRET_KEY = "bench"
        DEBUG = False
        ALLOWED_HOSTS = ["*"]
        INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django.contrib.sessions",
                          "rest_framework", "mcp_server", "benchtools"]
        MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
        ROOT_URLCONF = "mcpserver_project.urls"
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": __import__("os").environ["PEER_DB"]}}
        USE_TZ = True
        REST_FRAMEWORK = {"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": []}
    """,
    "mcpserver_project/__init__.py": "",
    "mcpserver_project/urls.py": """
        from django.urls import include, path
        urlpatterns = [path("", include("mcp_server.urls"))]
    """,
    "benchtools/__init__.py": "",
    "benchtools/mcp.py": """
        from mcp_server import mcp_server

        @mcp_server.tool()
        def echo(text: str) -> str:
            \"\"\"Return the input.\"\"\"
            return text
    """,
    "benchtools/apps.py": """
        from django.apps import AppConfig

        class BenchtoolsConfig(AppConfig):
            name = "benchtools"

            def ready(self):
                from . import mcp  # noqa: F401
    """,
    "floor_project/__init__.py": "",
    "floor_project/settings.py": PLAIN_SETTINGS.format(project="floor_project"),
    "floor_project/urls.py": """
        import json
        from django.http import HttpResponse
        from django.urls import path
        from django.views.decorators.csrf import csrf_exempt

        @csrf_exempt
        def echo(request):
            # The least a JSON-RPC tools/call endpoint does: parse, take the argument, answer.
            message = json.loads(request.body)
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return HttpResponse(body, content_type="application/json")

        urlpatterns = [path("mcp", echo)]
    """,
    "bare_wsgi.py": """
        import json

        def application(environ, start_response):
            size = int(environ.get("CONTENT_LENGTH") or 0)
            message = json.loads(environ["wsgi.input"].read(size))
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
    """,
    "mcpz_project/__init__.py": "",
    "mcpz_project/settings.py": PLAIN_SETTINGS.format(project="mcpz_project"),
    "mcpz_project/urls.py": """
        import msgspec
        from django.urls import path
        from django_mcpz.server import MCPServer, public

        server = MCPServer(name="bench", version="1.0.0", auth=public)

        class EchoParams(msgspec.Struct):
            text: str

        @server.tool(description="Return the input.")
        def echo(request, params: EchoParams) -> str:
            return params.text

        urlpatterns = [path("mcp", server)]
    """,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not start:\n{log.read_text()[-3000:]}")


def request(port: int, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", "Accept": ACCEPT, "Connection": "close", **headers}
        conn.request("POST", path, json.dumps(body), sent)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def load(
    port: int, path: str, body: dict[str, Any], headers: dict[str, str], duration: float, conc: int
) -> dict[str, Any]:
    """``conc`` threads posting ``body`` for ``duration`` seconds: requests/s, p50 and p99 in ms."""
    stop = time.monotonic() + duration
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def worker() -> None:
        mine: list[float] = []
        bad = 0
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                status, _, data = request(port, path, body, headers)
                ok = status == 200 and b'"error"' not in data and b"echo-me" in data
            except OSError:
                ok = False
            mine.append(time.perf_counter() - t0)
            bad += not ok
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=worker) for _ in range(conc)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    latencies.sort()
    n = len(latencies)
    return {
        "rps": n / elapsed,
        "p50": latencies[n // 2] * 1000 if n else 0.0,
        "p99": latencies[min(n - 1, int(n * 0.99))] * 1000 if n else 0.0,
        "errors": errors[0],
        "requests": n,
    }


def load_wrk(
    port: int, path: str, body: dict[str, Any], headers: dict[str, str], duration: float, conc: int
) -> dict[str, Any]:
    """``load`` with ``wrk`` (``conc`` connections, pinned to core 1): the same figures.

    wrk cannot read the replies, so one is checked first (``echo-me`` in it); wrk's own error
    counts (non-2xx, timeouts, refused connections) are the errors.
    """
    from benchmarks.run import Case, Served, ensure_wrk, run_wrk  # reason: run.py's wrk harness

    status, _, data = request(port, path, body, headers)
    if status != 200 or b'"error"' in data or b"echo-me" not in data:
        raise RuntimeError(f"unexpected reply {status}: {data[:300]!r}")
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    case = Case("wsgi", "call", json.dumps(body), tuple(sent.items()))
    url = f"http://127.0.0.1:{port}{path}"
    stats = run_wrk(ensure_wrk(), url, case, conc, max(1, round(duration)), port, None, None)
    served = Served(stats, 0.0, 0.0)  # its rate and errors; the CPU is the whole process tree's (main's ``run``)
    return {
        "rps": served.rps,
        "p50": stats["p50_us"] / 1000,
        "p99": stats["p99_us"] / 1000,
        "errors": sum(served.errors.values()),
        "requests": int(stats["requests"]),
    }


def call(text: str = "echo-me", stateless: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if stateless:
        params["_meta"] = META
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def initialize(version: str) -> dict[str, Any]:
    """The ``initialize`` request a benchmark client opens a session with."""
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
    }


def handshake(port: int, path: str, version: str) -> dict[str, str]:
    status, headers, data = request(port, path, initialize(version), {})
    assert status == 200, (status, data[:500])
    sid = headers["mcp-session-id"]
    negotiated = json.loads(data)["result"]["protocolVersion"]
    out = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": negotiated}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    request(port, path, note, out)
    return out


STATELESS_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


def peers_venv(path: Path) -> Path:
    if not (path / "bin" / "gunicorn").exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run(
            [
                str(path / "bin" / "pip"),
                "install",
                "-q",
                "django>=5.2,<6",
                "gunicorn",
                "mcp<2",  # django-mcp-server 0.5 imports mcp.server.FastMCP, gone in the SDK 2.x
                "django-mcp-server",
                "django-mcpz",
            ],
            check=True,
        )
    return path


def serve(command: list[str], env: dict[str, str], cwd: Path, log: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    wait_port(port, proc, log)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


CASE = "2026-07-28 tools/call"
#: The WSGI targets: ours ≥ 0.95x django-mcpz with the default settings on both (the one-front-end issue), ≥ 1.2x
#: (the first speed issue's, same tool, same workers); the session path ≥ 0.8x stateless.
TARGETS_MCPZ, TARGET_SESSION = (0.95, 1.2), 0.8


def targets(rows: list[tuple[str, str, dict[str, Any]]], pairs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each WSGI target with its ratio and PASS or FAIL (empty when a side of it did not run), and the bounds.

    With ``pairs`` (``--pair-rounds``) the django-mcpz targets are judged by the side-by-side rounds' medians:
    the rows above ran minutes apart, and on a shared machine that moves the ratio more than the target's margin.
    The bounds are this harness's floors over django-mcpz: a plain Django view, then gunicorn with no Django.
    Their server CPU per request is what any endpoint there pays before its own work.
    """
    rps = {(label, case): r["rps"] for label, case, r in rows}
    cpu = {(label, case): r["cpu_us"] for label, case, r in rows}
    stateless = rps.get(("ours-wsgi", CASE))
    session = rps.get(("ours-wsgi", "2025-11-25 session tools/call"))
    mcpz = rps.get(("django-mcpz", CASE))
    lines = []
    if pairs.get("ours-wsgi") and pairs.get("django-mcpz"):
        ratio = statistics.median([r["rps"] for r in pairs["ours-wsgi"]]) / statistics.median(
            [r["rps"] for r in pairs["django-mcpz"]]
        )
        for target in TARGETS_MCPZ:
            verdict = "PASS" if ratio >= target else "FAIL"
            lines.append(
                f"- {verdict} ours in WSGI mode, 2026-07-28, ≥ {target}x django-mcpz: {ratio:.2f}x "
                f"(side by side, {len(pairs['ours-wsgi'])} rounds each)"
            )
        if stateless and mcpz:
            lines.append(f"- (for reference) the same from the rows above, minutes apart: {stateless / mcpz:.2f}x")
    elif stateless and mcpz:
        ratio = stateless / mcpz
        for target in TARGETS_MCPZ:
            verdict = "PASS" if ratio >= target else "FAIL"
            lines.append(f"- {verdict} ours in WSGI mode, 2026-07-28, ≥ {target}x django-mcpz: {ratio:.2f}x")
    view = rps.get(("ours-wsgi-view", CASE))
    if view and mcpz:
        lines.append(f"- (for reference) the same view inside Django's request cycle: {view / mcpz:.2f}x django-mcpz")
    for label, what in (("django-view", "a plain Django view"), ("bare-wsgi", "a bare WSGI callable (no Django)")):
        floor = rps.get((label, CASE))
        if pairs.get(label) and pairs.get("django-mcpz"):
            side = {name: statistics.median([r["rps"] for r in runs]) for name, runs in pairs.items()}
            cost = {name: statistics.median([r["cpu_us"] for r in runs]) for name, runs in pairs.items()}
            lines.append(
                f"- (bound, side by side) {what} doing the same JSON work: {side[label] / side['django-mcpz']:.2f}x "
                f"django-mcpz, server CPU {cost[label]:,.0f} µs/req against django-mcpz's {cost['django-mcpz']:,.0f} "
                f"and ours' {cost['ours-wsgi']:,.0f}"
            )
        elif floor and mcpz:
            lines.append(
                f"- (bound) {what} doing the same JSON work: {floor / mcpz:.2f}x django-mcpz, server CPU "
                f"{cpu[(label, CASE)]:,.0f} µs/req against django-mcpz's {cpu[('django-mcpz', CASE)]:,.0f}"
                + (f" and ours' {cpu[('ours-wsgi', CASE)]:,.0f}" if stateless else "")
            )
    if stateless and session:
        ratio = session / stateless
        verdict = "PASS" if ratio >= TARGET_SESSION else "FAIL"
        lines.append(
            f"- {verdict} ours in WSGI mode, a 2025-11-25 session ≥ {TARGET_SESSION}x the stateless path: {ratio:.2f}x"
        )
    return lines


def paired_lines(pairs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The side-by-side rounds as a table (req/s and server CPU a request), and the ratios of their medians."""
    if "ours-wsgi" not in pairs or len(pairs) < 2:
        return []
    labels = list(pairs)
    lines = [
        "| round | " + " | ".join(f"{label} req/s" for label in labels) + " | "
        + " | ".join(f"{label} CPU µs/req" for label in labels) + " |",
        "|--:|" + "--:|" * (2 * len(labels)),
    ]  # fmt: skip
    for i in range(len(pairs["ours-wsgi"])):
        rps = " | ".join(f"{pairs[label][i]['rps']:,.0f}" for label in labels)
        cpu = " | ".join(f"{pairs[label][i]['cpu_us']:,.0f}" for label in labels)
        lines.append(f"| {i + 1} | {rps} | {cpu} |")
    ours_rps = statistics.median([r["rps"] for r in pairs["ours-wsgi"]])
    ours_cpu = statistics.median([r["cpu_us"] for r in pairs["ours-wsgi"]])
    lines.append("")
    for label in labels[1:]:
        rps = ours_rps / statistics.median([r["rps"] for r in pairs[label]])
        cpu = statistics.median([r["cpu_us"] for r in pairs[label]]) / ours_cpu
        lines.append(f"- medians, ours-wsgi ÷ {label}: {rps:.2f}x req/s, {cpu:.2f}x by server CPU a request")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--peers-venv", type=Path, default=Path(tempfile.gettempdir()) / "django-mcp-peers-venv")
    parser.add_argument(
        "--only", default="ours-wsgi,ours-wsgi-view,ours-channels,django-mcp-server,django-mcpz,django-view,bare-wsgi"
    )
    parser.add_argument("--client", choices=("python", "wrk"), default="python")
    parser.add_argument(
        "--pair-rounds",
        type=int,
        default=0,
        help="then serve ours-wsgi beside the stateless peers, in turn for this many rounds of --duration seconds "
        "each: the WSGI target is judged by the ratio of the medians (0: by the rows above)",
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="wsgi-peers-"))
    for name, text in PEER_FILES.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(textwrap.dedent(text).lstrip())
    workers = str(args.workers)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    drive = load_wrk if args.client == "wrk" else load
    ours_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MCP_SQLITE": str(tmp / "ours.sqlite3"),
        "MCP_TEST_LAYER": "memory",
    }
    ours_env.pop("MCP_TEST_DB", None)
    ours = {
        "ours-wsgi": ([str(BIN / "gunicorn"), "-w", workers, "-k", "sync", "benchmarks.wsgi:application"],
                      "benchmarks.settings_wsgi"),
        "ours-wsgi-view": ([str(BIN / "gunicorn"), "-w", workers, "-k", "sync", "benchmarks.wsgi:view_application"],
                           "benchmarks.settings_wsgi"),
        "ours-channels": ([str(BIN / "python"), "-m", "uvicorn", "--workers", workers, "--no-access-log",
                           "--log-level", "warning", "tests.settings.asgi:application"], "benchmarks.settings"),
    }  # fmt: skip
    #: The peers' Django project (none: the bare WSGI callable) and their endpoint's path.
    peers = {
        "django-mcp-server": ("mcpserver_project", "/mcp"),
        "django-mcpz": ("mcpz_project", "/mcp"),
        "django-view": ("floor_project", "/mcp"),
        "bare-wsgi": ("", "/mcp"),
    }

    def launch(label: str) -> tuple[subprocess.Popen[bytes], int, str]:
        """Start ``label``'s server on a free loopback port (its database migrated): the process, port, path."""
        port = free_port()
        if label in ours:
            command, settings = ours[label]
            env = {**ours_env, "DJANGO_SETTINGS_MODULE": settings}
            subprocess.run([str(BIN / "python"), "-m", "django", "migrate", "-v0"], env=env, cwd=ROOT, check=True)
            gunicorn = "gunicorn" in command[0]
            bind = ["-b", f"127.0.0.1:{port}"] if gunicorn else ["--host", "127.0.0.1", "--port", str(port)]
            return serve([*command, *bind], env, ROOT, tmp / f"{label}.log", port), port, "/mcp/"
        venv = peers_venv(args.peers_venv)
        project, path = peers[label]
        env = {**os.environ, "PYTHONPATH": str(tmp), "PEER_DB": str(tmp / f"{label}.sqlite3")}
        app = "bare_wsgi:application"
        if project:
            env["DJANGO_SETTINGS_MODULE"] = f"{project}.settings"
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "django", "migrate", "-v0"], env=env, cwd=tmp, check=True
            )
            (tmp / project / "wsgi_app.py").write_text(
                "from django.core.wsgi import get_wsgi_application\napplication = get_wsgi_application()\n"
            )
            app = f"{project}.wsgi_app:application"
        command = [str(venv / "bin" / "gunicorn"), "-w", workers, "-k", "sync", "-b", f"127.0.0.1:{port}", app]
        return serve(command, env, tmp, tmp / f"{label}.log", port), port, path

    def measure(pid: int, port: int, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """One load of ``--duration`` seconds: the client's figures and the server's CPU a request (every process)."""
        pids = procstat.family(pid)
        before = procstat.cpu_seconds(pids)
        result = drive(port, path, body, headers, args.duration, args.concurrency)
        result["cpu_us"] = (procstat.cpu_seconds(pids) - before) * 1e6 / max(1, result["requests"])
        return result

    def run(
        label: str, case: str, pid: int, port: int, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> None:
        drive(port, path, body, headers, min(1.0, args.duration), args.concurrency)  # warm-up
        result = measure(pid, port, path, body, headers)
        rows.append((label, case, result))
        print(f"{label:18} {case:28} {result['rps']:8.0f} req/s  p50 {result['p50']:6.1f} ms  "
              f"p99 {result['p99']:6.1f} ms  CPU {result['cpu_us']:6.0f} µs/req  errors {result['errors']}",
              flush=True)  # fmt: skip

    for label in [*ours, *peers]:
        if label not in only:
            continue
        proc, port, path = launch(label)
        try:
            if label in ours:
                run(label, CASE, proc.pid, port, path, call(stateless=True), STATELESS_HEADERS)
                session = handshake(port, path, "2025-11-25")
                run(label, "2025-11-25 session tools/call", proc.pid, port, path, call(), session)
            elif label != "django-mcp-server":
                run(label, CASE, proc.pid, port, path, call(stateless=True), STATELESS_HEADERS)
            else:
                session = handshake(port, path, "2025-06-18")
                run(label, "2025-06-18 session tools/call", proc.pid, port, path, call(), session)
        finally:
            stop(proc)

    # Side by side: ours-wsgi and the stateless peers up at once (an idle sync worker costs nothing), loaded in
    # turn, the order rotating each round, so that what the machine does meanwhile falls on each alike.
    pairs: dict[str, list[dict[str, Any]]] = {}
    side = [label for label in ("ours-wsgi", "django-mcpz", "django-view", "bare-wsgi") if label in only]
    if args.pair_rounds and len(side) > 1 and side[0] == "ours-wsgi":
        started: list[tuple[str, subprocess.Popen[bytes], int, str]] = []
        try:
            for label in side:
                started.append((label, *launch(label)))
            for _, _, port, path in started:
                drive(port, path, call(stateless=True), STATELESS_HEADERS, min(1.0, args.duration), args.concurrency)
            for i in range(args.pair_rounds):
                turn = i % len(started)
                for label, proc, port, path in started[turn:] + started[:turn]:
                    result = measure(proc.pid, port, path, call(stateless=True), STATELESS_HEADERS)
                    pairs.setdefault(label, []).append(result)
                    print(f"paired {i + 1}: {label:12} {result['rps']:8.0f} req/s  CPU {result['cpu_us']:6.0f} µs/req  "
                          f"errors {result['errors']}", flush=True)  # fmt: skip
        finally:
            for _, proc, _, _ in started:
                stop(proc)

    client = f"{args.concurrency} client threads" if args.client == "python" else f"wrk, {args.concurrency} connections"
    print(f"\n{args.workers} workers each, {client}, {args.duration:g} s per case\n")
    print("| server | case | req/s | p50 ms | p99 ms | server CPU µs/req | errors |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for label, case, r in rows:
        print(f"| {label} | {case} | {r['rps']:,.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['cpu_us']:,.0f} "
              f"| {r['errors']} |")  # fmt: skip
    paired = paired_lines(pairs)
    if paired:
        print(f"\nSide by side, {args.pair_rounds} rounds of {args.duration:g} s each, in turn:\n")
        print("\n".join(paired))
    lines = targets(rows, pairs)
    if lines:
        print("\nTargets:\n" + "\n".join(lines))
    errors = any(r["errors"] for _, _, r in rows) or any(r["errors"] for runs in pairs.values() for r in runs)
    return 1 if errors or any(line.startswith("- FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
