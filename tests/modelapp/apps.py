from __future__ import annotations

from django.apps import AppConfig


class ModelAppConfig(AppConfig):
    name = "tests.modelapp"
    label = "modelapp"
    default_auto_field = "django.db.models.BigAutoField"
