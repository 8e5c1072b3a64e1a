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
