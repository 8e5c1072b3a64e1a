from django.apps import AppConfig


class DrfBigConfig(AppConfig):
    name = "tests.drfbig"
    label = "drfbig"
    default_auto_field = "django.db.models.BigAutoField"
