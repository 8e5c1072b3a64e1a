#!/usr/bin/env python
"""What a large DRF API costs: the ``tools/list`` catalog and the time Django takes to start.

Two APIs:

* ``tests.drfbig``: three viewsets (16 tools) over every DRF field type, a django-filter filterset,
  search, ordering and pagination;
* a generated one: ``--models`` models (default 30) of 12 fields each (text, choices, numbers, dates,
  a foreign key to the previous model, a many-to-many), each with a ``ModelViewSet`` whose filterset
  gives every field the lookups a generated filterset usually has (``exact``, ``icontains``, ``in``,
  ``gte``...), as large projects' APIs do.

For each: the catalog's bytes (``{"tools": [...]}`` as JSON), the largest tool, the most arguments of
one tool; with ``DRF_FILTER_LOOKUPS`` off (the default) and on. Then the startup: a subprocess runs
``django.setup()``, then registers the drfbig tools and the generated API's (what a project's
``mcp.py`` does while Django starts): the median of ``--runs`` runs of each, and the queries made.

``PYTHONPATH=<an older checkout> python benchmarks/drf_catalog.py`` measures another version of the
package the same way (the figures in docs/views.md compare two).

Usage: ``python benchmarks/drf_catalog.py [--models 30] [--runs 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after PYTHONPATH: another checkout of django_mcp wins

STARTUP = """
import sys, time, django
from django.db import connection
from django.test.utils import CaptureQueriesContext
started = time.perf_counter()
with CaptureQueriesContext(connection) as queries:
    django.setup()
    set_up = time.perf_counter()
    import tests.drfbig.tools
    from benchmarks.drf_catalog import generated_api
    from django_mcp import MCPServer
    server = MCPServer("generated")
    for i, viewset in enumerate(generated_api(int(sys.argv[1]))):
        server.register_drf(viewset, basename=f"kind{i}")
print(set_up - started, time.perf_counter() - set_up, len(queries.captured_queries))
"""

TEXT_LOOKUPS = ["exact", "iexact", "icontains", "istartswith", "iendswith", "isnull", "in", "regex", "iregex"]
NUMBER_LOOKUPS = ["exact", "gt", "gte", "lt", "lte", "in", "isnull"]


def generated_api(count: int) -> list[Any]:
    """``count`` models with a serializer, a filterset and a ``ModelViewSet`` each (not migrated: the schemas
    need no table)."""
    import django_filters
    from django.db import models
    from django_filters.rest_framework import DjangoFilterBackend
    from rest_framework import filters, pagination, serializers, viewsets

    viewsets_made: list[Any] = []
    previous: Any = None
    for i in range(count):
        attrs: dict[str, Any] = {
            "__module__": "tests.drfbig.models",
            "__doc__": f"A record of kind {i}.",
            "Meta": type("Meta", (), {"app_label": "drfbig", "ordering": ["id"]}),
            "name": models.CharField(max_length=80, help_text="What it is called."),
            "slug": models.SlugField(max_length=40),
            "notes": models.TextField(blank=True),
            "status": models.CharField(
                max_length=10, choices=[("planned", "Planned"), ("active", "Active"), ("retired", "Retired")]
            ),
            "count": models.IntegerField(default=0),
            "weight": models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True),
            "ratio": models.FloatField(default=0),
            "active": models.BooleanField(default=True),
            "created": models.DateTimeField(null=True, blank=True),
            "due": models.DateField(null=True, blank=True),
            "email": models.EmailField(blank=True),
        }
        if previous is not None:
            attrs["parent"] = models.ForeignKey(previous, null=True, blank=True, on_delete=models.SET_NULL)
            attrs["links"] = models.ManyToManyField(previous, blank=True, related_name="+")
        model = type(f"Generated{i}", (models.Model,), attrs)
        text = {f: TEXT_LOOKUPS for f in ("name", "slug", "notes", "status", "email")}
        numbers = {f: NUMBER_LOOKUPS for f in ("count", "weight", "ratio", "created", "due")}
        filterset = type(
            f"Generated{i}Filter",
            (django_filters.FilterSet,),
            {"Meta": type("Meta", (), {"model": model, "fields": {**text, **numbers, "active": ["exact"]}})},
        )
        serializer = type(
            f"Generated{i}Serializer",
            (serializers.ModelSerializer,),
            {"Meta": type("Meta", (), {"model": model, "fields": "__all__"})},
        )
        viewsets_made.append(
            type(
                f"Generated{i}ViewSet",
                (viewsets.ModelViewSet,),
                {
                    "__doc__": f"Records of kind {i}.",
                    "queryset": model.objects.all(),
                    "serializer_class": serializer,
                    "filter_backends": [DjangoFilterBackend, filters.SearchFilter, filters.OrderingFilter],
                    "filterset_class": filterset,
                    "search_fields": ["name", "slug"],
                    "ordering_fields": ["name", "count", "created"],
                    "pagination_class": pagination.LimitOffsetPagination,
                },
            )
        )
        previous = model
    return viewsets_made


def catalog(tools: list[Any]) -> dict[str, Any]:
    definitions = [tool.definition() for tool in tools]
    return {
        "tools": len(definitions),
        "bytes": len(json.dumps({"tools": definitions})),
        "largest": max(len(json.dumps(d)) for d in definitions),
        "most_args": max(len(d["inputSchema"].get("properties", {})) for d in definitions),
    }


def measure_catalogs(count: int) -> dict[str, Any]:
    import django
    from django.conf import settings
    from django.test import override_settings

    django.setup()
    from django_mcp import MCPServer

    results: dict[str, Any] = {}
    made = generated_api(count)
    for lookups in (False, True):
        with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "DRF_FILTER_LOOKUPS": lookups}):
            import importlib

            import tests.drfbig.tools

            drfbig = importlib.reload(tests.drfbig.tools).server
            results[f"drfbig lookups={lookups}"] = catalog(list(drfbig.tools.values()))
            server = MCPServer("generated")
            for i, viewset in enumerate(made):
                server.register_drf(viewset, basename=f"kind{i}")
            results[f"{count} models lookups={lookups}"] = catalog(list(server.tools.values()))
    return results


def measure_startup(runs: int, count: int) -> dict[str, Any]:
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)
    env = {**os.environ, "PYTHONPATH": path, "DJANGO_SETTINGS_MODULE": "tests.settings", "MCP_TEST_DB": "sqlite"}
    setup, registration, queries = [], [], set()
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", STARTUP, str(count)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        first, second, made = done.stdout.split()
        setup.append(float(first))
        registration.append(float(second))
        queries.add(int(made))
    return {
        "django_setup_s": round(statistics.median(setup), 3),
        "registration_s": round(statistics.median(registration), 3),
        "queries": sorted(queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ.setdefault("MCP_TEST_DB", "sqlite")
    started = time.perf_counter()
    report = {"startup": measure_startup(args.runs, args.models), **measure_catalogs(args.models)}
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
