"""A project that mounts plugins only under a prefix: the whole package lives under ``/plugins/mcp/``."""
