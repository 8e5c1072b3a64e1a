"""django-mcp-toolkit: serve a Django project over the Model Context Protocol.

Public API::

    from django_mcp import site, MCPServer, Context, ToolError
    from django_mcp import ModelResource              # Django models as resources
    from django_mcp import TemplatePrompt, Argument   # Django templates as prompts
    from django_mcp import content   # text(), image(), audio(), embedded_resource(), resource_link()
    from django_mcp import public    # check=public: open to every caller on purpose (REQUIRE_ACCESS_RULES)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

__all__ = [
    "Argument",
    "Context",
    "MCPError",
    "MCPServer",
    "Message",
    "ModelResource",
    "TemplatePrompt",
    "ToolError",
    "__version__",
    "assistant",
    "public",
    "run_sync",
    "site",
    "user",
]

if TYPE_CHECKING:
    from .access import public
    from .context import Context
    from .exceptions import MCPError, ToolError
    from .model_resources import ModelResource
    from .prompts import Message, assistant, user
    from .runtime.sync_pool import run_sync
    from .server import MCPServer
    from .template_prompts import Argument, TemplatePrompt

    site: MCPServer

_LAZY = {
    "MCPServer": ("server", "MCPServer"),
    "Context": ("context", "Context"),
    "ToolError": ("exceptions", "ToolError"),
    "MCPError": ("exceptions", "MCPError"),
    "Message": ("prompts", "Message"),
    "ModelResource": ("model_resources", "ModelResource"),
    "user": ("prompts", "user"),
    "assistant": ("prompts", "assistant"),
    "TemplatePrompt": ("template_prompts", "TemplatePrompt"),
    "Argument": ("template_prompts", "Argument"),
    "run_sync": ("sync", "run_sync"),
    "public": ("access", "public"),
}


def __getattr__(name: str) -> Any:
    # Lazy so that importing django_mcp (e.g. for __version__) needs no configured settings.
    if name == "site":
        from .server import site  # reason: keeps importing django_mcp free of settings

        return site
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
