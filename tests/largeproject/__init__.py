"""A large existing project served as docs/existing-projects.md says, with everything at once: a custom user
model without ``is_staff``, no ``django.contrib.admin``, a large DRF API (django-filter, drf-spectacular), an
object-permission backend, change-logging and tenancy middleware, its own API tokens, and every URL of the
package under ``/plugins/mcp/`` (``tests/test_large_project.py``)."""
