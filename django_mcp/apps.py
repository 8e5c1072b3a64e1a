from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, autoreload_started
from django.utils.module_loading import autodiscover_modules


class DjangoMCPConfig(AppConfig):
    name = "django_mcp"
    verbose_name = "MCP server"
    default_auto_field = "django.db.models.BigAutoField"
    #: The default ``MCPServer`` (``django_mcp.site``), for the foundations that serve it (OAuth scopes).
    site: Any = None

    def ready(self) -> None:
        # Imported here, not at the top: each needs the app registry (models, settings), and this
        # module is imported while it is being populated.
        # reason: apps.py is imported before the app registry is ready
        from . import (
            checks,  # noqa: F401  (registers the system checks)
            model_resources,  # noqa: F401  (site.register(ModelResource), model objects in resources/list)
            ui,  # noqa: F401  (a tool's ui=: its MCP App page and render helper)
            view_tools,  # noqa: F401  (site.register_view)
        )
        from .auth import checks as auth_checks  # noqa: F401  # reason: as above (registers the OAuth checks)
        from .auth import token_cache  # reason: as above
        from .auth.clients import connect_signals  # reason: as above
        from .server import site  # reason: as above
        from .tasks import methods, store  # noqa: F401  # reason: as above (methods: tasks/* methods, task tools)

        if find_spec("rest_framework") is not None:  # the drf extra
            from .contrib import drf  # noqa: F401  # reason: optional dependency (DRF); site.register_drf

        store.load_job = _task_job
        if runs_task_worker(sys.argv):  # a task worker: it says it is alive while idle too (tasks.beat)
            from .tasks import beat  # reason: as above

            beat.start()
        if _telemetry_on():  # session ends and task links, in processes that serve no request too
            from .telemetry import middleware as telemetry  # reason: as above; imports nothing of OpenTelemetry itself

            telemetry.install()
        self.site = site
        connect_signals(self)
        token_cache.connect_signals()
        # Before importing the apps' mcp modules: one that fails to import is then watched all the same.
        # The folders are taken now: after a failed setup, runserver empties the app registry.
        _app_dirs[:] = [Path(config.path) for config in apps.get_app_configs()]
        autoreload_started.connect(watch_mcp_modules, dispatch_uid="django_mcp.watch_mcp_modules")
        autodiscover_modules("mcp", register_to=site)
        from . import skills  # reason: as above

        skills.autodiscover(site)  # after the mcp modules: a skill they declare in code wins over a folder's


#: Every installed app's folder, recorded by ``ready()`` before the apps' ``mcp`` modules are imported.
_app_dirs: list[Path] = []


def watch_mcp_modules(sender: Any, **kwargs: Any) -> None:
    """Have the autoreloader watch every app's ``mcp.py`` (or ``mcp/`` package), imported or not.

    The reloader watches the modules that imported. An ``mcp.py`` that raised while being imported
    at startup is not one of them (Django watches only the file of the traceback's last frame, often
    this package's), so fixing and saving it would not restart ``runserver``. Django also empties the
    app registry after such a failure, hence the folders recorded by ``ready()``.
    """
    for root in _app_dirs:
        sender.watch_dir(root, "mcp.py")
        if (root / "mcp").is_dir():
            sender.watch_dir(root / "mcp", "**/*.py")
        if (root / "skills").is_dir():  # a skill's files are read once: an edit restarts the server
            sender.watch_dir(root / "skills", "**/*")
    from .conf import mcp_settings  # reason: settings are read once they are configured

    for folder in mcp_settings.SKILL_DIRS:
        if Path(folder).is_dir():
            sender.watch_dir(Path(folder), "**/*")


def runs_task_worker(argv: list[str]) -> bool:
    """Whether this process runs ``db_worker``'s loop: not for ``--help``, nor in its autoreloader's parent.

    With ``--reload`` (``db_worker``'s default under ``DEBUG``) the command runs twice: a parent that only
    watches files and restarts the child, and the child (``RUN_MAIN=true``) that runs tasks. Only the
    child is a worker; counting the parent too showed one worker as two.
    """
    if argv[1:2] != ["db_worker"] or {"-h", "--help", "--version"} & set(argv[2:]):
        return False
    reload = "--reload" in argv or (bool(settings.DEBUG) and "--no-reload" not in argv)
    if "--batch" in argv:
        reload = False  # db_worker turns autoreload off for --batch
    return not reload or os.environ.get(DJANGO_AUTORELOAD_ENV) == "true"


def _telemetry_on() -> bool:
    """``TELEMETRY`` as set, read without ``mcp_settings``: a malformed ``DJANGO_MCP`` is for the checks to report."""
    user = getattr(settings, "DJANGO_MCP", None)
    return isinstance(user, dict) and user.get("TELEMETRY") is True


def _task_job() -> Any:
    """The Tasks framework task that runs a tool call, for ``tasks.store`` to enqueue."""
    from .tasks.jobs import run_tool_call  # reason: defining a Tasks framework task needs settings and the registry

    return run_tool_call
