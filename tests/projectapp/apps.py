from django.apps import AppConfig


class ProjectAppConfig(AppConfig):
    """An existing project's app: per-request change logging and tenancy done by its own middleware."""

    name = "tests.projectapp"
    label = "projectapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import changes  # noqa: F401  # connects the change-logging signal handlers
