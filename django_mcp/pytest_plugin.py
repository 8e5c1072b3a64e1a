"""pytest fixtures for testing a project's MCP server: ``mcp_client`` and ``async_mcp_client``.

Registered through the ``pytest11`` entry point ``django_mcp.pytest_plugin`` once
django-mcp-toolkit is installed; without the installed entry point (a checkout on
``sys.path``), add ``pytest_plugins = ["django_mcp.pytest_plugin"]`` to a conftest or run
``pytest -p django_mcp.pytest_plugin``. The entry point is named after the module, so the
two never register the plugin twice. ``-p no:django_mcp.pytest_plugin`` turns it off.

Nothing Django is imported until a fixture runs: projects without Django settings are
not affected. The fixtures need pytest-django.

The audit log's records are not written by a background thread under pytest (it would write
outside each test's transaction): call ``django_mcp.audit.middleware.flush()`` to write them,
inside the test's transaction. Each test starts with an empty buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from asgiref.sync import async_to_sync

if TYPE_CHECKING:
    from .test import AsyncMCPTestClient, MCPTestClient


def pytest_configure(config: pytest.Config) -> None:
    from .audit import writer  # reason: Django-free, and must be set before any call is recorded

    writer.manual()


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures run (and record calls of their own)
def pytest_runtest_setup(item: pytest.Item) -> None:
    from .audit import writer  # reason: as above

    writer.discard_all()  # what an earlier test's calls left unflushed is not this test's


@pytest.fixture
def mcp_client(db: None) -> Iterator[MCPTestClient]:
    """An ``MCPTestClient`` for ``django_mcp.site`` at the newest protocol revision, as an anonymous caller.

    Requests pytest-django's ``db`` (a ``django_db`` marker's options still apply): the
    client runs on the test's thread and inside its transaction.
    """
    from .test import MCPTestClient  # reason: pytest loads this plugin before Django is set up

    client = MCPTestClient()
    yield client
    client.close()


@pytest.fixture
def async_mcp_client(transactional_db: None) -> Iterator[AsyncMCPTestClient]:
    """An ``AsyncMCPTestClient`` for async tests, with pytest-django's ``transactional_db``.

    An async test's event loop hands sync and ORM work to other threads, each with its own
    database connection, which would not see the rows of a test wrapped in a transaction:
    hence a transactional database (rows are committed, tables flushed after the test).
    """
    from .test import AsyncMCPTestClient  # reason: pytest loads this plugin before Django is set up

    client = AsyncMCPTestClient()
    yield client
    async_to_sync(client.close)()
