from django.apps import AppConfig


class PromptAppConfig(AppConfig):
    """Template prompts the test suite drives through real clients (see tests/test_template_prompts.py)."""

    name = "tests.promptapp"
    label = "promptapp"
