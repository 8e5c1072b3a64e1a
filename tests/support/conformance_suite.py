"""The official MCP conformance suite (``@modelcontextprotocol/conformance`` under ``.node/``, ``make node``)
driven against a live server: its scenario lists, one run per requirement set, an extension's scenario on its own.

Shared by the Channels run (tests/test_conformance.py) and the WSGI one (tests/test_conformance_wsgi.py).
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

from tests.support.node import NODE
from tests.support.servers import IN_CI, ROOT, LiveServer, start_task_worker

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


def _describe(checks: list[dict[str, Any]]) -> str:
    lines = []
    for c in checks:
        if c["status"] not in PASSING:
            lines.append(f"  {c['status']} {c['id']}: {c.get('errorMessage') or c.get('description', '')}")
            if c.get("details"):
                lines.append(f"    details: {json.dumps(c['details'])[:1500]}")
    return "\n".join(lines)


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
