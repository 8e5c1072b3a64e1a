from django.apps import AppConfig


class TaskAppConfig(AppConfig):
    name = "tests.taskapp"
    label = "taskapp"
