"""``Context``: what a tool, resource or prompt handler may ask of the client.

One API for both eras. In the handshake era ``elicit``/``sample``/``list_roots``
send a server->client request on the request's SSE stream and await the answer.
In the stateless era (2026-07-28) they end the call with an ``input_required``
result; the client retries with the answers and the handler runs again, this
time receiving them. Code before an elicitation point must therefore be safe to
run twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast

import mcp_types as types
from pydantic import BaseModel

from .exceptions import InputRequired, RequestCancelled

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from .auth.bearer import AuthInfo
    from .runtime.engine import Exchange
    from .server import MCPServer

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
T = TypeVar("T")
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class Runtime(Protocol):
    """What the engine provides to a running request (see ``engine.Exchange``)."""

    revision: str
    request_id: str | int | None
    progress_token: str | int | None
    session_id: str | None
    client_info: dict[str, Any]
    client_capabilities: dict[str, Any]
    user: Any
    #: The ``MCPServer`` answering the request.
    server: Any
    #: ``AuthInfo`` of the bearer token that authenticated the request, or None.
    auth: Any

    @property
    def cancelled(self) -> asyncio.Event: ...

    def log_enabled(self, level: str) -> bool: ...

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def ask(self, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]: ...

    async def close_stream(self) -> None: ...

    async def begin_task(self) -> None: ...


class Context:
    """Handed to a handler that declares a parameter annotated ``Context``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._last_progress: float | None = None

    # -- who is asking -------------------------------------------------------------
    @property
    def user(self) -> AbstractBaseUser | AnonymousUser:
        return self._rt.user  # type: ignore[no-any-return]

    @property
    def session_id(self) -> str | None:
        return self._rt.session_id

    @property
    def request_id(self) -> str | int | None:
        return self._rt.request_id

    @property
    def protocol_version(self) -> str:
        return self._rt.revision

    @property
    def client_info(self) -> dict[str, Any]:
        return self._rt.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._rt.client_capabilities

    @property
    def auth(self) -> AuthInfo | None:
        """What the OAuth bearer token grants (``user``, ``client_id``, ``scopes``); None without a token."""
        return getattr(self._rt, "auth", None)

    @property
    def token(self) -> Any:
        """The caller's token: DOT's access token, the project's own API token (``AUTHENTICATION_CLASSES``),
        or the claims (a dict) of a JWT from ``JWT_ISSUER``.

        What the project's authentication class returned as ``auth``, so its rules (a write flag, say)
        can be read here as DRF views read ``request.auth``; None without a token.
        """
        auth = self.auth
        return auth.token if auth is not None else None

    @property
    def client_id(self) -> str | None:
        """The OAuth client the caller's token was issued to; None without a token."""
        auth = self.auth
        return auth.client_id if auth is not None else None

    @property
    def server(self) -> MCPServer:
        """The ``MCPServer`` answering this request."""
        return self._rt.server  # type: ignore[no-any-return]

    # -- the server's own content, as the caller --------------------------------------
    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The wire ``contents`` of ``uri``, read through the server's ``resources/read`` handler.

        The caller's access checks apply (scopes, permissions, ``check``, a model
        object's own rules): what the caller may not read is ``ResourceNotFound``.
        """
        exchange = cast("Exchange", self._rt)  # the server's handlers take the engine's Exchange
        result = await self.server.handle("resources/read", {"uri": uri}, exchange)
        return list(result["contents"])

    # -- cancellation --------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self._rt.cancelled.is_set()

    def check_cancelled(self) -> None:
        """Raise ``RequestCancelled`` if the client cancelled (for sync loops that poll)."""
        if self._rt.cancelled.is_set():
            raise RequestCancelled()

    # -- progress and logging ------------------------------------------------------
    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for it; progress must increase."""
        token = self._rt.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError("progress must increase with each notification")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._rt.notify("notifications/progress", params)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when the client's log level lets it through."""
        if not self._rt.log_enabled(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self._rt.notify("notifications/message", params)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # -- asking the client ---------------------------------------------------------
    async def elicit(
        self, message: str, schema: type[BaseModel] | dict[str, Any], *, key: str | None = None
    ) -> types.ElicitResult:
        """Ask the user for structured input (form mode).

        ``schema`` is a flat pydantic model or a JSON Schema object of primitives.
        The result's ``content`` is validated against a pydantic model when one is given.
        ``key`` names the question in a 2026-07-28 ``input_required`` result (default:
        the method and the question's position in the call).
        """
        if isinstance(schema, dict):
            requested = schema
        else:
            requested = schema.model_json_schema()
            requested.pop("title", None)
            for prop in requested.get("properties", {}).values():
                prop.pop("title", None)
        params = {"mode": "form", "message": message, "requestedSchema": requested}
        if self._rt.revision < "2025-11-25":
            params.pop("mode")
        answer = await self._rt.ask("elicitation/create", params, key)
        result = types.ElicitResult.model_validate(answer)
        if result.action == "accept" and not isinstance(schema, dict) and result.content is not None:
            schema.model_validate(result.content)
        return result

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None
    ) -> types.ElicitResult:
        """Send the user to a URL (URL mode, 2025-11-25+)."""
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return types.ElicitResult.model_validate(await self._rt.ask("elicitation/create", params, key))

    async def sample(
        self,
        messages: list[types.SamplingMessage] | str,
        *,
        max_tokens: int = 512,
        system_prompt: str | None = None,
        key: str | None = None,
        **extra: Any,
    ) -> types.CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``)."""
        if isinstance(messages, str):
            messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=messages))]
        params: dict[str, Any] = {
            "messages": [m.model_dump(by_alias=True, exclude_none=True, mode="json") for m in messages],
            "maxTokens": max_tokens,
            **extra,
        }
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        return types.CreateMessageResult.model_validate(await self._rt.ask("sampling/createMessage", params, key))

    async def list_roots(self, *, key: str | None = None) -> list[types.Root]:
        """The client's roots (``roots/list``)."""
        answer = await self._rt.ask("roots/list", {}, key)
        return types.ListRootsResult.model_validate(answer).roots

    async def gather(self, *asks: Awaitable[T]) -> list[T]:
        """Ask several things at once: ``await ctx.gather(ctx.elicit(...), ctx.list_roots())``.

        In the handshake era the requests go out one after the other. In the
        stateless era every unanswered question goes into one ``input_required``
        result, so the client answers them all in a single round trip.
        """
        results: list[Any] = []
        missing: InputRequired | None = None
        pending = list(asks)
        try:
            while pending:
                try:
                    results.append(await pending.pop(0))
                except InputRequired as need:
                    missing = need if missing is None else missing.merge(need)
        finally:
            for ask in pending:  # an error ended the loop: don't leave coroutines unawaited
                close = getattr(ask, "close", None)
                if close is not None:
                    close()
        if missing is not None:
            raise missing
        return results

    # -- tasks ---------------------------------------------------------------------
    @property
    def task_id(self) -> str | None:
        """The MCP task this call runs as (in the task worker), else None."""
        return getattr(self._rt, "task_id", None)

    async def begin_task(self) -> None:
        """Mark where a tool declared with ``ask_first=True`` hands its work to a task.

        Code before this line runs in the web request, so the questions it asks are
        answered there (a 2026-07-28 client answers them by multi round-trip before
        it gets the task). When the caller opted into a task, the call stops here and
        a worker runs the tool again from the start, with those answers; otherwise
        (no task) this does nothing and the tool goes on.
        """
        await self._rt.begin_task()

    # -- the response stream -------------------------------------------------------
    async def close_stream(self) -> None:
        """End the request's SSE response early; the client polls for the rest (SEP-1699).

        The handler keeps running. What it sends afterwards (including the result)
        is kept in the event store, and the client receives it by reconnecting
        with ``Last-Event-ID`` after the ``retry`` interval. Only handshake-era
        HTTP requests can do this; elsewhere it does nothing.
        """
        await self._rt.close_stream()
