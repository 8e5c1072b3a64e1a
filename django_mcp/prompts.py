"""Function prompts at the protocol level.

A prompt is a function whose string arguments become the prompt's arguments
(required when they have no default) and whose return value becomes messages:
a string (one user message), a content block, or a list of ``Message``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from .access import Check, Guard
from .audit.declaration import REDACTED, AuditPolicy, check_policy
from .content import CONTENT_TYPES, Role, dump
from .context import Context
from .resources import Completer
from .runtime import project_middleware
from .signature import context_parameter


@dataclass
class Message:
    """One prompt message: a role and a content block (or plain text)."""

    content: Any
    role: Role = "user"

    def wire(self) -> dict[str, Any]:
        content = self.content
        if isinstance(content, str):
            block: dict[str, Any] = {"type": "text", "text": content}
        else:
            block = dump(content)
        return {"role": self.role, "content": block}


def user(content: Any) -> Message:
    return Message(content, "user")


def assistant(content: Any) -> Message:
    return Message(content, "assistant")


@dataclass
class Prompt(Guard):
    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    scopes: list[str] = field(default_factory=list)
    permissions: list[str] = field(default_factory=list)
    check: Check | None = None
    complete: dict[str, Completer | Sequence[str]] = field(default_factory=dict)
    #: What the audit log keeps of a ``prompts/get`` (``django_mcp.audit.declaration``).
    audit: AuditPolicy = REDACTED
    arguments: list[dict[str, Any]] = field(init=False)
    #: The parameter that receives the ``Context`` (``signature.context_parameter``).
    ctx_param: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.audit = check_policy(self.audit, "Prompt", self.name)
        if self.description is None:
            self.description = inspect.getdoc(self.fn)
        self.ctx_param = context_parameter(self.fn)
        self.arguments = []
        for pname, p in inspect.signature(self.fn).parameters.items():
            if pname == self.ctx_param:
                continue
            arg: dict[str, Any] = {"name": pname, "required": p.default is inspect.Parameter.empty}
            self.arguments.append(arg)

    def argument_definitions(self) -> list[dict[str, Any]]:
        """The ``arguments`` of the definition; subclasses may compute them per call (translated)."""
        return self.arguments

    def definition(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        if self.title:
            d["title"] = str(self.title)  # str(): a lazy translation becomes the caller's language
        if self.description:
            d["description"] = str(self.description)
        arguments = self.argument_definitions()
        if arguments:
            d["arguments"] = arguments
        if self.icons:
            d["icons"] = self.icons
        if self.meta:
            d["_meta"] = self.meta
        return d

    def check_arguments(self, arguments: dict[str, Any]) -> list[str]:
        """Names of required arguments that are missing."""
        return [a["name"] for a in self.arguments if a["required"] and a["name"] not in arguments]

    async def render(self, arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
        known = {a["name"] for a in self.arguments}
        kwargs = {k: v for k, v in arguments.items() if k in known}
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        value = await project_middleware.call_handler(ctx, self.fn, kwargs)
        items = value if isinstance(value, (list, tuple)) else [value]
        messages = []
        for item in items:
            if isinstance(item, Message):
                messages.append(item.wire())
            elif isinstance(item, types.PromptMessage):
                messages.append(item.model_dump(by_alias=True, exclude_none=True, mode="json"))
            elif isinstance(item, str) or isinstance(item, CONTENT_TYPES):
                messages.append(Message(item).wire())
            else:
                raise TypeError(f"Prompt {self.name!r} returned an unsupported message: {type(item).__name__}")
        result: dict[str, Any] = {"messages": messages}
        if self.description:
            result["description"] = self.description
        return result
