"""Import paths of earlier releases for the built-in middleware and their public functions.

The code lives in feature packages (docs/architecture.md, "Layout"): ``audit/``, ``limits/``,
``telemetry/`` and ``switches``. Settings and imports that name ``django_mcp.operations.<module>``
keep working through the modules here, which only re-export.
"""
