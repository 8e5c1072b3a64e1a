from django.apps import AppConfig


class TokenAppConfig(AppConfig):
    name = "tests.tokenapp"
    label = "tokenapp"
    default_auto_field = "django.db.models.BigAutoField"
