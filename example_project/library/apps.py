from django.apps import AppConfig
from django.db.models.signals import post_migrate


class LibraryConfig(AppConfig):
    name = "library"
    verbose_name = "Library"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(superuser_hint, sender=self)


def superuser_hint(verbosity: int = 1, using: str = "default", **kwargs: object) -> None:
    """After ``migrate``, say how to get into /admin/ when nobody can yet (no password ships in fixtures)."""
    from django.contrib.auth import get_user_model

    if verbosity < 1 or get_user_model().objects.using(using).filter(is_superuser=True).exists():
        return
    print(
        "\nNo admin user yet. To use http://127.0.0.1:8000/admin/, create one with:\n"
        "    cd example_project && ../.venv/bin/python manage.py createsuperuser\n"
    )
