"""Operations features, each written as MCP middleware on the public API (docs/middleware.md, docs/operations.md).

Layer 3 ("mappings"): built on the core, below the door. Each module is one concern; the middleware are
listed in ``DEFAULT_MIDDLEWARE`` (django_mcp/conf.py), outermost first, so users reorder, replace or remove them:

- ``telemetry``: OpenTelemetry spans and metrics per the MCP semantic conventions (``TELEMETRY``; ``otel``
  is the one module that imports OpenTelemetry);
- ``audit``: the audit log of calls and the ``django_mcp.calls`` log line (``calllog``); ``writer`` buffers
  records and writes them in batches from a background thread; ``usage`` computes the admin's usage page;
- ``switches``: kill switches for tools, resources, prompts and OAuth clients (``strict``: strict mode);
- ``limits``: request rates and task quotas counted on Django's cache (``counting``), and the result size
  cap of ``sizes``;
- ``timeouts``: ``TOOL_TIMEOUT``, ``TASK_TIMEOUT`` and a tool's ``timeout=``.
"""
