from __future__ import annotations

import itertools
import threading
from typing import Any

from django.apps import AppConfig

#: Every SQL statement any connection of this process runs bumps this counter (tool ``queries``), except the
#: background writers' (the audit log's batches, ``mcp-*-writer`` threads): they are off the request path.
QUERIES = itertools.count()


def _count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    if not threading.current_thread().name.endswith("-writer"):
        next(QUERIES)
    return execute(sql, params, many, context)


class TestAppConfig(AppConfig):
    name = "tests.testapp"
    label = "testapp"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        def install(sender: Any, connection: Any, **kwargs: Any) -> None:
            if _count not in connection.execute_wrappers:
                connection.execute_wrappers.append(_count)

        connection_created.connect(install, weak=False)
