"""A large, varied DRF API (every serializer field type, filtersets, nested and related fields, pagination).

Served on its own MCP server (``tests.drfbig.tools``, mounted by ``tests.settings.asgi_drfbig``), not on ``site``:
``tests/test_drf_sdk_validation.py`` calls every tool through the official SDK clients.
"""
