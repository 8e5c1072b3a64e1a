from django.apps import AppConfig


class UIAppConfig(AppConfig):
    """MCP Apps from templates (tests/test_ui.py in process, tests/test_ui_browser.py through real hosts)."""

    name = "tests.uiapp"
    label = "uiapp"
