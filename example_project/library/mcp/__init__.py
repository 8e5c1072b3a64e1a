"""What the library exposes over MCP, one module per kind (autodiscovered as ``library.mcp``)."""

from . import api, prompts, resources, skills, tools  # noqa: F401
