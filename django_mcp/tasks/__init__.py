"""Long-running tool calls as MCP tasks, run on Django's Tasks framework.

A tool declared with ``task="optional"`` or ``task="required"`` may answer a
``tools/call`` with a task handle instead of its result: the call is stored as an
``MCPTask`` row and enqueued on the project's ``TASKS`` backend, a worker process
(``manage.py db_worker`` with ``django-tasks-db``) runs the tool with the caller's
identity and access checks, and any web worker answers ``tasks/get`` from the row.

- ``framework``: ``django.tasks`` (Django 6.0+) or the ``django-tasks`` backport (5.2).
- ``store``: the rows: create, find for a caller, update, and their wire shapes per era.
- ``methods``: the ``tasks/*`` methods and the task branch of ``tools/call``.
- ``jobs``: the Tasks framework task the worker runs (imported by the worker, lazily here).
"""

from __future__ import annotations

from ..tools import TaskSupport

#: The 2026-07-28 extension identifier (SEP-2663).
EXTENSION = "io.modelcontextprotocol/tasks"
#: ``_meta`` key tying a 2025-11-25 message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"

__all__ = ["EXTENSION", "RELATED_TASK", "TaskSupport"]
