"""Django's Tasks framework, wherever this Django keeps it.

``django.tasks`` ships with Django 6.0+; on 5.2 the ``django-tasks`` backport
provides the same API under ``django_tasks``. Both read the ``TASKS`` setting.
"""

from __future__ import annotations

import importlib
from typing import Any


def _module(name: str) -> Any:
    try:
        return importlib.import_module(f"django.{name}")
    except ImportError:
        return importlib.import_module(f"django_{name}")


def tasks_module() -> Any:
    """``django.tasks`` or ``django_tasks``."""
    return _module("tasks")


def task_backends() -> Any:
    return tasks_module().task_backends


def task_decorator() -> Any:
    return tasks_module().task


def backend(alias: str) -> Any:
    """The configured backend instance for ``alias`` (raises the framework's invalid-backend error)."""
    return task_backends()[alias]


def backend_path(alias: str) -> str | None:
    """The ``BACKEND`` import path configured for ``alias``, None when the alias is not configured."""
    settings = task_backends().settings
    entry = settings.get(alias) if isinstance(settings, dict) else None
    return str(entry.get("BACKEND", "")) if isinstance(entry, dict) else None


def runs_in_process(alias: str) -> bool:
    """Whether ``alias`` runs tasks inside the enqueuing process (ImmediateBackend) or never (DummyBackend)."""
    path = backend_path(alias) or ""
    return path.endswith(("ImmediateBackend", "DummyBackend"))


def busy_workers(alias: str) -> int | None:
    """How many ``db_worker`` processes run a task of ``alias`` now (any task, not only MCP's).

    From django-tasks-db's ``DBTaskResult`` rows (running ones name their worker); None for
    another backend, which keeps no such record.
    """
    if not (backend_path(alias) or "").startswith("django_tasks_db."):
        return None
    from django_tasks_db.models import DBTaskResult  # reason: an optional backend, needs the app registry

    running = DBTaskResult.objects.running().filter(backend_name=alias).values_list("worker_ids", flat=True)
    return len({ids[-1] for ids in running if ids})
