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
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.conformance_suite import (
    NODE,
    PASSING,
    REVISIONS,
    SKILLS_SCENARIOS,
    SUITE,
    SUITE_CHECKS_NOTHING,
    Suite,
    _describe,
    _suite_available,
    check_skills_scenario,
    scenario_params,
    serve_suite,
    server_scenarios,
)
from tests.support.servers import IN_CI, LiveServer, server_env, start_server

pytestmark = pytest.mark.conformance

#: (revision, scenario) -> reason, for scenarios that cannot pass yet (xfail, strict).
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    def start(tmp: Path) -> LiveServer:
        env = server_env(tmp, settings="tests.conformance.settings")
        return start_server(env, tmp / "daphne.log", app="tests.conformance.asgi:application")

    yield from serve_suite(tmp_path_factory, "conformance", start)


@pytest.mark.parametrize(("revision", "scenario"), scenario_params(KNOWN_FAILURES))
def test_scenario(suite: Suite, revision: str, scenario: str) -> None:
    run = suite.run(revision)
    checks = run.checks.get(scenario)
    assert checks is not None, f"no results for {scenario!r} in the {revision} run:\n{run.output[-4000:]}"
    assert checks, f"{scenario!r} ran no checks"
    passing = PASSING | {"SKIPPED"} if (revision, scenario) in SUITE_CHECKS_NOTHING else PASSING
    bad = [c for c in checks if c["status"] not in passing]
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
