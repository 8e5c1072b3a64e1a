"""Test clients for a project's own tests: ``MCPTestClient`` and ``AsyncMCPTestClient``.

What Django's ``Client``/``AsyncClient`` are to views, these are to an MCP server: they
run in process, with no sockets, through the same dispatch path every transport uses
(``dispatch.initialize``, ``dispatch.find_session``, ``dispatch.stateless_revision``, then
the one door, ``dispatch.handle``, with its scope check, validation and error mapping)::

    from django_mcp.test import MCPTestClient

    def test_search(db, django_user_model):
        client = MCPTestClient()
        client.force_authenticate(django_user_model.objects.create_user("ann"))
        result = client.call_tool("search_books", {"query": "dune"})
        assert result.structured_content["total"] == 1

The handshake revisions (2024-11-05 ... 2025-11-25) open a real session (stored in the
database) on the first request; 2026-07-28 (the default: the newest) sends the ``_meta``
envelope with every request and answers ``input_required`` results by retrying, as a real
client does. Server->client requests (elicitation, sampling, roots) are answered from
``on_elicitation``/``on_sampling``/``on_roots``; the notifications a request sends
(progress, logs) are collected in ``notifications``. See docs/testing.md.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from asgiref.sync import async_to_sync
from django.contrib.auth.models import AnonymousUser
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from pydantic import BaseModel

from .auth.bearer import AuthInfo
from .protocol import jsonrpc
from .protocol.versions import ALL_REVISIONS, LATEST, is_stateless
from .runtime import dispatch
from .server import site
from .state.hub import hub
from .state.sessions import store
from .version import __version__

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")

#: What a client declares by default: every feature the test client can answer.
DEFAULT_CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {"listChanged": True},
}
DEFAULT_CLIENT_INFO: dict[str, Any] = {"name": "django-mcp-test-client", "version": __version__}
#: The most ``input_required`` rounds one call may take before the client gives up.
MAX_INPUT_ROUNDS = 10

#: A scripted answer: a value, or a callable (sync or async) taking the request's params.
Answer = Any


class MCPClientError(Exception):
    """The server answered a request with a JSON-RPC error (or refused it before the engine).

    ``code``, ``message`` and ``data`` are the error's; ``status`` is the HTTP status the
    refusal would have had over Streamable HTTP, when the dispatch path gave one.
    """

    def __init__(self, code: int, message: str, data: Any = None, status: int | None = None) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code, self.message, self.data, self.status = code, message, data, status


class UnansweredRequest(AssertionError):
    """The server asked the client something (elicitation, sampling, roots) no answer was scripted for."""

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        hint = {
            "elicitation/create": "on_elicitation",
            "sampling/createMessage": "on_sampling",
            "roots/list": "on_roots",
        }
        super().__init__(
            f"The server sent {method} but the test client has no scripted answer: "
            f"call client.{hint.get(method, 'on_elicitation')}(...) first. Params: {params!r}"
        )
        self.method, self.params = method, params


@dataclass
class ServerRequest:
    """A request the server sent the client during a call, and what the client answered."""

    method: str
    params: dict[str, Any]
    answer: dict[str, Any] | None = None


# -- scripted answers -------------------------------------------------------------------------------
def _elicit_result(value: Any) -> dict[str, Any]:
    if isinstance(value, types.ElicitResult):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if value in ("decline", "cancel"):
        return {"action": value}
    if value == "accept":
        return {"action": "accept", "content": {}}
    if isinstance(value, dict):
        if value.get("action") in ("accept", "decline", "cancel"):
            return dict(value)
        return {"action": "accept", "content": value}
    raise TypeError(f"An elicitation answer is a dict of content, 'decline', 'cancel' or an ElicitResult: {value!r}")


def _sampling_result(value: Any) -> dict[str, Any]:
    if isinstance(value, types.CreateMessageResult):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, str):
        return {
            "role": "assistant",
            "content": {"type": "text", "text": value},
            "model": "django-mcp-test-model",
            "stopReason": "endTurn",
        }
    if isinstance(value, dict):
        return dict(value)
    raise TypeError(f"A sampling answer is a str, a dict or a CreateMessageResult: {value!r}")


def _roots_result(value: Any) -> dict[str, Any]:
    if isinstance(value, types.ListRootsResult):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, dict):
        return dict(value)
    roots = []
    for root in value:
        if isinstance(root, types.Root):
            roots.append(root.model_dump(by_alias=True, exclude_none=True, mode="json"))
        elif isinstance(root, str):
            roots.append({"uri": root})
        else:
            roots.append(dict(root))
    return {"roots": roots}


_SHAPERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "elicitation/create": _elicit_result,
    "sampling/createMessage": _sampling_result,
    "roots/list": _roots_result,
}


class _Script:
    """The answers for one kind of server request: a fixed value, a callable, or a queue (elicit/sample)."""

    def __init__(self, value: Answer, queue: bool) -> None:
        self.queue: Iterator[Any] | None = iter(list(value)) if queue else None
        self.value = value

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        value = self.value
        if self.queue is not None:
            try:
                value = next(self.queue)
            except StopIteration:
                raise UnansweredRequest(method, params) from None
        if callable(value) and not isinstance(value, BaseModel):
            value = value(params)
            if inspect.isawaitable(value):
                value = await value
        return value


# -- the in-process outlet --------------------------------------------------------------------------
class TestClientOutlet:
    """Carries one in-process call's notifications (collected on the client) and server->client
    requests (answered from the client's scripts, the answer delivered back to the engine)."""

    __test__ = False  # a name pytest would otherwise try to collect

    def __init__(self, client: AsyncMCPTestClient, session_id: str) -> None:
        self.client, self.session_id = client, session_id

    async def send(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            return
        if "id" not in message:
            self.client.notifications.append(message)
            return
        try:
            result = await self.client._answer(message["method"], message.get("params") or {})
        except UnansweredRequest as exc:
            self.client._unanswered = exc
            error = {"code": jsonrpc.METHOD_NOT_FOUND, "message": str(exc)}
            await dispatch.deliver_response(self.session_id, jsonrpc.Response(message["id"], None, error))
            return
        await dispatch.deliver_response(self.session_id, jsonrpc.Response(message["id"], result, None))


# -- one event loop per sync call --------------------------------------------------------------------
def _sync(method: Callable[..., Awaitable[R]]) -> Callable[..., R]:
    """``async_to_sync(method)``, releasing the hub before the call's event loop closes."""

    async def call(*args: Any, **kwargs: Any) -> R:
        try:
            return await method(*args, **kwargs)
        finally:
            await hub.stop()  # before async_to_sync closes this call's loop

    return async_to_sync(call)


# -- the clients ------------------------------------------------------------------------------------
class AsyncMCPTestClient:
    """An in-process MCP client for async tests (``await client.call_tool(...)``).

    ``server``: the ``MCPServer`` to talk to (default ``django_mcp.site``).
    ``protocol_version``: any revision the package serves (default: the newest).
    ``capabilities``/``client_info``: what the client declares (default: elicitation,
    sampling and roots). ``log_level``: the lowest log level the client asks for
    (``None``: the handshake era's default, everything; no logs in 2026-07-28).
    ``locale``: the caller's language, as an ``Accept-Language`` header would give it.
    """

    def __init__(
        self,
        server: Any = None,
        *,
        protocol_version: str | None = None,
        user: Any = None,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        log_level: str | None = "debug",
        locale: str | None = None,
    ) -> None:
        if server is None:
            server = site
        version = protocol_version or LATEST
        if version not in ALL_REVISIONS:
            raise ValueError(f"Unknown protocol version {version!r}; choose one of {', '.join(ALL_REVISIONS)}")
        self.server = server
        self.protocol_version = version
        self.capabilities = dict(DEFAULT_CAPABILITIES if capabilities is None else capabilities)
        self.client_info = dict(client_info or DEFAULT_CLIENT_INFO)
        self.log_level = log_level
        self.locale = locale
        self.user: Any = None
        self.auth: Any = None
        self.client_id = ""
        #: Notifications the server sent during the last call (JSON-RPC messages: ``method``, ``params``).
        self.notifications: list[dict[str, Any]] = []
        #: Requests the server sent the client during the last call, with the answers given.
        self.server_requests: list[ServerRequest] = []
        self.session: Any = None  # the handshake era's SessionState, once initialized
        self._opened: list[str] = []  # every session this client opened, ended by close()
        self.initialize_result: types.InitializeResult | None = None
        self._scripts: dict[str, _Script] = {}
        self._ids = itertools.count(1)
        self._unanswered: UnansweredRequest | None = None
        if user is not None:
            self.force_authenticate(user)

    # -- configuration -----------------------------------------------------------------------------
    @property
    def stateless(self) -> bool:
        return is_stateless(self.protocol_version)

    def force_authenticate(self, user: Any = None, scopes: Any = None, client_id: str = "mcp-test-client") -> None:
        """Make every following request come from ``user`` (``None``: anonymous).

        ``scopes=None``: no token, the user's full rights (as ``mcp_stdio --user``). With
        ``scopes``, the requests carry an OAuth token for ``client_id`` granting exactly those
        scopes: what a tool, resource or prompt requires beyond them is hidden and refused.
        A handshake-era session belongs to its user: the next request opens a new one.
        """
        if user is None:
            user = AnonymousUser()
        self.user = user
        if scopes is None:
            self.auth, self.client_id = None, ""
        else:
            self.auth = AuthInfo(user=user, client_id=client_id, scopes=frozenset(scopes))
            self.client_id = client_id
        self.session = None
        self.initialize_result = None

    def logout(self) -> None:
        """Back to an anonymous caller (a new session in the handshake era)."""
        self.force_authenticate(None)

    def on_elicitation(self, answer: Answer) -> None:
        """Script the answers to ``elicitation/create``.

        A dict is accepted content (``{"name": "Ann"}``); ``"decline"``/``"cancel"`` or an
        ``mcp_types.ElicitResult`` answer otherwise; a callable receives the request's params
        and returns one of these (it may be async); a list answers one question each, in order.
        ``None`` removes the script.
        """
        self._script("elicitation/create", answer, queue=isinstance(answer, list))

    def on_sampling(self, answer: Answer) -> None:
        """Script the answers to ``sampling/createMessage``: a str (the model's text), a dict or
        ``CreateMessageResult``, a callable taking the params, or a list (one per request)."""
        self._script("sampling/createMessage", answer, queue=isinstance(answer, list))

    def on_roots(self, roots: Answer) -> None:
        """Script the answer to ``roots/list``: a list of URIs (or ``Root``s), or a callable taking the params."""
        self._script("roots/list", roots, queue=False)

    def _script(self, method: str, answer: Answer, queue: bool) -> None:
        if answer is None:
            self._scripts.pop(method, None)
        else:
            self._scripts[method] = _Script(answer, queue)

    async def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        record = ServerRequest(method, params)
        self.server_requests.append(record)
        script = self._scripts.get(method)
        if script is None or method not in _SHAPERS:
            raise UnansweredRequest(method, params)
        record.answer = _SHAPERS[method](await script.answer(method, params))
        return record.answer

    # -- the handshake era ----------------------------------------------------------------------------
    async def initialize(self) -> types.InitializeResult:
        """The ``initialize`` handshake (done on the first request anyway); handshake revisions only."""
        if self.stateless:
            raise RuntimeError(f"{self.protocol_version} has no initialize handshake: it is stateless")
        if self.initialize_result is not None:
            return self.initialize_result

        if self.user is None:
            self.force_authenticate(None)
        params = {
            "protocolVersion": self.protocol_version,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        request = jsonrpc.Request(next(self._ids), "initialize", params)
        try:
            session, response = await dispatch.initialize(self.server, request, self._caller())
        except dispatch.Rejected as exc:
            raise _refused(exc) from None
        self.session = session
        self._opened.append(session.id)
        await dispatch.absorb(jsonrpc.Notification("notifications/initialized", None), session, session.revision)
        self.initialize_result = types.InitializeResult.model_validate(_result(response))
        if self.log_level is not None:
            await self._send("logging/setLevel", {"level": self.log_level})
        return self.initialize_result

    async def close(self) -> None:
        """End the handshake-era sessions this client opened (the fixtures do it after each test)."""
        opened, self._opened = self._opened, []
        self.session = self.initialize_result = None
        for sid in opened:
            await store.end(sid, "test")

    # -- requests -------------------------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send any request and return its result as a dict (``MCPClientError`` for an error).

        ``notifications`` and ``server_requests`` start empty for it.
        """
        self.notifications, self.server_requests = [], []
        return await self._send(method, params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (``notifications/cancelled``, ``notifications/roots/list_changed``...)."""
        if not self.stateless:
            await self.initialize()
        revision = self.session.revision if self.session is not None else self.protocol_version
        await dispatch.absorb(jsonrpc.Notification(method, params), self.session, revision)

    async def _send(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if self.user is None:
            self.force_authenticate(None)
        params = dict(params or {})
        rid = next(self._ids)
        meta = dict(params.get("_meta") or {})
        meta.setdefault("progressToken", f"progress-{rid}")
        self._unanswered = None
        if self.stateless:
            response = await self._stateless(rid, method, params, meta)
        else:
            response = await self._handshake(rid, method, params, meta)
        if self._unanswered is not None:
            raise self._unanswered
        return _result(response)

    async def _handshake(
        self, rid: int, method: str, params: dict[str, Any], meta: dict[str, Any]
    ) -> dict[str, Any] | None:
        await self.initialize()
        caller = self._caller()
        request = jsonrpc.Request(rid, method, {**params, "_meta": meta})
        try:
            session = await dispatch.find_session(self.session.id, caller, rid, self.session.revision)
            return await dispatch.handle(
                self.server, request, session.revision, session, caller, TestClientOutlet(self, session.id)
            )
        except dispatch.Rejected as exc:
            raise _refused(exc) from None

    async def _stateless(
        self, rid: int, method: str, params: dict[str, Any], meta: dict[str, Any]
    ) -> dict[str, Any] | None:
        meta.update(
            {
                PROTOCOL_VERSION_META_KEY: self.protocol_version,
                CLIENT_CAPABILITIES_META_KEY: self.capabilities,
                CLIENT_INFO_META_KEY: self.client_info,
            }
        )
        if self.log_level is not None:
            meta[LOG_LEVEL_META_KEY] = self.log_level
        params = {**params, "_meta": meta}
        caller = self._caller()
        # A real client's loop: answer each ``input_required`` round and send the request again.
        for _ in range(MAX_INPUT_ROUNDS):
            request = jsonrpc.Request(rid, method, params)
            try:
                revision = dispatch.stateless_revision(request)
                response = await dispatch.handle(
                    self.server, request, revision, None, caller, TestClientOutlet(self, "")
                )
            except dispatch.Rejected as exc:
                raise _refused(exc) from None
            result = (response or {}).get("result")
            if not isinstance(result, dict) or result.get("resultType") != "input_required":
                return response
            answers: dict[str, Any] = {}
            for key, asked in (result.get("inputRequests") or {}).items():
                answers[key] = await self._answer(asked["method"], asked.get("params") or {})
            params = {**params, "inputResponses": answers, "requestState": result.get("requestState")}
        raise MCPClientError(-32603, f"{method} still needed input after {MAX_INPUT_ROUNDS} rounds")

    def _caller(self) -> Any:
        return dispatch.Caller(self.user, self.auth, self.client_id, self.locale, transport="test")

    async def _typed(self, model: type[M], method: str, params: dict[str, Any] | None = None) -> M:
        return model.model_validate(await self.request(method, params))

    async def _pages(self, model: type[M], method: str, key: str, cursor: str | None, all_pages: bool) -> M:
        self.notifications, self.server_requests = [], []
        result = await self._send(method, {"cursor": cursor} if cursor else None)
        items = list(result.get(key) or [])
        while all_pages and result.get("nextCursor"):
            result = await self._send(method, {"cursor": result["nextCursor"]})
            items.extend(result.get(key) or [])
        if all_pages:
            result = {**result, key: items}
            result.pop("nextCursor", None)
        return model.model_validate(result)

    # -- the MCP methods ------------------------------------------------------------------------------
    async def ping(self) -> None:
        await self.request("ping")

    async def list_tools(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListToolsResult:
        """The tools the caller sees; every page from ``cursor`` on, or only that page (``all_pages=False``)."""
        return await self._pages(types.ListToolsResult, "tools/list", "tools", cursor, all_pages)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """Call a tool; a tool error is a result with ``is_error`` set, a protocol error raises ``MCPClientError``."""
        return await self._typed(types.CallToolResult, "tools/call", {"name": name, "arguments": arguments or {}})

    async def list_resources(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListResourcesResult:
        return await self._pages(types.ListResourcesResult, "resources/list", "resources", cursor, all_pages)

    async def list_resource_templates(
        self, cursor: str | None = None, *, all_pages: bool = True
    ) -> types.ListResourceTemplatesResult:
        return await self._pages(
            types.ListResourceTemplatesResult, "resources/templates/list", "resourceTemplates", cursor, all_pages
        )

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._typed(types.ReadResourceResult, "resources/read", {"uri": uri})

    async def list_prompts(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListPromptsResult:
        return await self._pages(types.ListPromptsResult, "prompts/list", "prompts", cursor, all_pages)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._typed(types.GetPromptResult, "prompts/get", params)

    async def complete(
        self,
        *,
        argument: str,
        value: str = "",
        prompt: str | None = None,
        resource_template: str | None = None,
        ref: Any = None,
        context: dict[str, str] | None = None,
    ) -> types.CompleteResult:
        """Complete an argument of a prompt (``prompt=name``) or a resource template (``resource_template=uri``)."""
        if ref is None:
            if (prompt is None) == (resource_template is None):
                raise TypeError("complete() takes exactly one of prompt=, resource_template= or ref=")
            ref = (
                {"type": "ref/prompt", "name": prompt}
                if prompt is not None
                else {"type": "ref/resource", "uri": resource_template}
            )
        elif isinstance(ref, BaseModel):
            ref = ref.model_dump(by_alias=True, exclude_none=True, mode="json")
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": context}
        return await self._typed(types.CompleteResult, "completion/complete", params)

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe`` (handshake era): refused like a read when the caller may not read ``uri``."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})


def _refused(exc: Any) -> MCPClientError:
    """A refusal at the door (``dispatch.Rejected``) as the error a test sees, with its HTTP status."""
    return MCPClientError(exc.error.code, exc.error.message, exc.error.data, exc.status)


def _result(response: dict[str, Any] | None) -> dict[str, Any]:
    if response is None:
        raise MCPClientError(-32800, "The request was cancelled: no response")
    error = response.get("error")
    if error is not None:
        raise MCPClientError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
    result = response.get("result")
    return result if isinstance(result, dict) else {}


class MCPTestClient:
    """The synchronous client, for ordinary (sync) tests: ``AsyncMCPTestClient`` under ``async_to_sync``.

    As with Django's ``Client``, each call runs on the test's own thread as far as the
    database is concerned: sync tools, ORM calls of async tools and the session store all
    use the test's connection, so pytest-django's ``db`` transaction covers them. Do not use
    it inside an async test (``async_to_sync`` refuses to run inside an event loop): use
    ``AsyncMCPTestClient`` there.
    """

    def __init__(
        self,
        server: Any = None,
        *,
        protocol_version: str | None = None,
        user: Any = None,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        log_level: str | None = "debug",
        locale: str | None = None,
    ) -> None:
        #: The ``AsyncMCPTestClient`` doing the work (its options are this client's).
        self.async_client = AsyncMCPTestClient(
            server,
            protocol_version=protocol_version,
            user=user,
            capabilities=capabilities,
            client_info=client_info,
            log_level=log_level,
            locale=locale,
        )

    # Configuration and what was collected: the async client's own.
    @property
    def server(self) -> Any:
        return self.async_client.server

    @property
    def protocol_version(self) -> str:
        return self.async_client.protocol_version

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return self.async_client.notifications

    @property
    def server_requests(self) -> list[ServerRequest]:
        return self.async_client.server_requests

    @property
    def session(self) -> Any:
        return self.async_client.session

    @property
    def user(self) -> Any:
        return self.async_client.user

    def force_authenticate(self, user: Any = None, scopes: Any = None, client_id: str = "mcp-test-client") -> None:
        self.async_client.force_authenticate(user, scopes, client_id)

    force_authenticate.__doc__ = AsyncMCPTestClient.force_authenticate.__doc__

    def logout(self) -> None:
        self.async_client.logout()

    def on_elicitation(self, answer: Answer) -> None:
        self.async_client.on_elicitation(answer)

    on_elicitation.__doc__ = AsyncMCPTestClient.on_elicitation.__doc__

    def on_sampling(self, answer: Answer) -> None:
        self.async_client.on_sampling(answer)

    on_sampling.__doc__ = AsyncMCPTestClient.on_sampling.__doc__

    def on_roots(self, roots: Answer) -> None:
        self.async_client.on_roots(roots)

    on_roots.__doc__ = AsyncMCPTestClient.on_roots.__doc__

    # Requests.
    def initialize(self) -> types.InitializeResult:
        return _sync(self.async_client.initialize)()

    def close(self) -> None:
        _sync(self.async_client.close)()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return _sync(self.async_client.request)(method, params)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        _sync(self.async_client.notify)(method, params)

    def ping(self) -> None:
        _sync(self.async_client.ping)()

    def list_tools(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListToolsResult:
        return _sync(self.async_client.list_tools)(cursor, all_pages=all_pages)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        return _sync(self.async_client.call_tool)(name, arguments)

    def list_resources(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListResourcesResult:
        return _sync(self.async_client.list_resources)(cursor, all_pages=all_pages)

    def list_resource_templates(
        self, cursor: str | None = None, *, all_pages: bool = True
    ) -> types.ListResourceTemplatesResult:
        return _sync(self.async_client.list_resource_templates)(cursor, all_pages=all_pages)

    def read_resource(self, uri: str) -> types.ReadResourceResult:
        return _sync(self.async_client.read_resource)(uri)

    def list_prompts(self, cursor: str | None = None, *, all_pages: bool = True) -> types.ListPromptsResult:
        return _sync(self.async_client.list_prompts)(cursor, all_pages=all_pages)

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        return _sync(self.async_client.get_prompt)(name, arguments)

    def complete(
        self,
        *,
        argument: str,
        value: str = "",
        prompt: str | None = None,
        resource_template: str | None = None,
        ref: Any = None,
        context: dict[str, str] | None = None,
    ) -> types.CompleteResult:
        return _sync(self.async_client.complete)(
            argument=argument, value=value, prompt=prompt, resource_template=resource_template, ref=ref, context=context
        )

    def subscribe(self, uri: str) -> None:
        _sync(self.async_client.subscribe)(uri)

    def unsubscribe(self, uri: str) -> None:
        _sync(self.async_client.unsubscribe)(uri)


__all__ = [
    "DEFAULT_CAPABILITIES",
    "AsyncMCPTestClient",
    "MCPClientError",
    "MCPTestClient",
    "ServerRequest",
    "UnansweredRequest",
]
