"""The test project with object permissions and a custom user model beside auth.User (``tests.objpermapp``).

``MCP_OBJPERM_BACKEND`` picks the object-permission backend next to Django's ``ModelBackend``:
``guardian`` (default; its tables are installed either way, so both share one migration) or ``rules``.
"""

import os

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "guardian", "tests.objpermapp"]  # noqa: F405
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    {
        "guardian": "guardian.backends.ObjectPermissionBackend",
        "rules": "rules.permissions.ObjectPermissionBackend",
    }[os.environ.get("MCP_OBJPERM_BACKEND", "guardian")],
]
AUTHENTICATION_BACKENDS.append("tests.objpermapp.backends.MemberBackend")
DJANGO_MCP = {**DJANGO_MCP, "BROWSABLE_ENDPOINT": os.environ.get("MCP_BROWSABLE", "staff")}  # noqa: F405
