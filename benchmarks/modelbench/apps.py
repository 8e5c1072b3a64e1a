from __future__ import annotations

from django.apps import AppConfig


class ModelBenchConfig(AppConfig):
    name = "benchmarks.modelbench"
    label = "modelbench"
    default_auto_field = "django.db.models.BigAutoField"
