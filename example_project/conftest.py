"""pytest configuration of the example project.

Once django-mcp-toolkit is installed its pytest plugin (``mcp_client``, ``async_mcp_client``)
is registered by its ``pytest11`` entry point; this line also registers it when the package
is only on ``sys.path`` (a checkout). Both together are fine: they name the plugin the same.
"""

pytest_plugins = ["django_mcp.pytest_plugin"]
