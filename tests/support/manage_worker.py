"""Runs ``manage.py`` commands for a live server's tests in one long-lived process (``LiveServer.manage``).

A ``manage.py`` process costs about 2.5 s of CPU before it does anything (Django, DRF, DOT, Channels,
pydantic and mcp-types imported and set up): a test that sets up users, tokens and clients with a
dozen ``shell -c`` calls spent most of its time starting Python. This process starts once per
server, with the server's environment and directory, and runs each command asked on stdin (one JSON
line: ``{"args": [...]}``) through ``call_command``, answering one JSON line (``stdout``, ``stderr``,
``returncode``, as the command's own process would have) after a marker, so that output a command
writes past the redirection cannot be taken for an answer. Connections are closed after each
command, as a process's exit would.

A test's own setup (``shell -c``) begins its transactions ``IMMEDIATE`` on SQLite, as the settings do
for a ``shell`` process (``MCP_TEST_SETUP``): its deletes and ``set()`` read, then write, and SQLite
refuses such an upgrade at once, without the busy timeout, when the live server wrote meanwhile.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback

MARKER = "\x00mcp-manage-reply\x00"


def main() -> None:
    import django

    django.setup()
    from django.core.management import CommandError, call_command
    from django.db import connection, connections

    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        stdout, stderr = io.StringIO(), io.StringIO()
        code = 0
        try:
            if request["args"][:1] == ["shell"] and connection.vendor == "sqlite":
                connection.ensure_connection()  # the mode is read from the settings on connecting
                connection.transaction_mode = "IMMEDIATE"
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                call_command(*request["args"], stdout=stdout, stderr=stderr)
        except CommandError as exc:
            stderr.write(f"CommandError: {exc}\n")
            code = exc.returncode
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - what the command's own process would print before exiting 1
            stderr.write(traceback.format_exc())
            code = 1
        finally:
            connections.close_all()
        reply = {"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "returncode": code}
        out.write(MARKER + json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
