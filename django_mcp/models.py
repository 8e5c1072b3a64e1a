"""Database state: handshake-era sessions (stateless 2026-07-28 requests need none) and OAuth client state."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class MCPSession(models.Model):
    """A handshake-era MCP session, created by ``initialize`` and named by ``Mcp-Session-Id``."""

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    protocol_version = models.CharField(_("protocol revision"), max_length=16)
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_sessions"
    )
    oauth_client = models.CharField(
        _("OAuth client"), max_length=255, blank=True, default="", help_text=_("client_id of the token that opened it")
    )
    log_level = models.CharField(_("log level"), max_length=16, blank=True, default="")
    subscriptions = models.JSONField(_("resource subscriptions"), default=list, blank=True)
    initialized = models.BooleanField(_("initialized"), default=False)
    created = models.DateTimeField(_("created"), auto_now_add=True, db_index=True)
    last_seen = models.DateTimeField(_("last seen"), db_index=True)
    ended = models.DateTimeField(_("ended"), null=True, blank=True, db_index=True)

    class Meta:
        verbose_name = _("MCP session")
        verbose_name_plural = _("MCP sessions")
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        name = (self.client_info or {}).get("name", "client")
        return f"{name} ({self.protocol_version}) {self.id[:8]}…"

    @property
    def is_active(self) -> bool:
        return self.ended is None


class MCPClient(models.Model):
    """django_mcp's record of one OAuth client (a django-oauth-toolkit Application, by ``client_id``).

    Keyed by ``client_id`` rather than a foreign key so that django_mcp needs no
    OAuth app installed (development mode) and works with a swapped application
    model. DOT itself records how and when the application was registered; this
    adds what MCP needs on top: whether an administrator disabled the client.
    """

    client_id = models.CharField(_("client ID"), max_length=255, unique=True)
    disabled = models.BooleanField(_("disabled"), default=False, db_index=True)
    disabled_at = models.DateTimeField(_("disabled at"), null=True, blank=True)
    created = models.DateTimeField(_("first seen"), auto_now_add=True)
    allowed_scopes = models.TextField(
        _("allowed scopes"),
        blank=True,
        default="",
        help_text=_(
            "Space-separated scopes this client may request at the token endpoint. Empty: any of the site's "
            "scopes for a client acting for a consenting user, none for a client credentials (machine) client."
        ),
    )
    service_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="mcp_service_clients",
        verbose_name=_("service user"),
        help_text=_(
            "The account a client credentials token of this client acts as, with that account's permissions. "
            "A machine token of a client naming none is refused."
        ),
    )

    class Meta:
        verbose_name = _("MCP client")
        verbose_name_plural = _("MCP clients")
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.client_id


class InitialAccessToken(models.Model):
    """An RFC 7591 initial access token: staff's permission for one trusted dynamic registration.

    Only the SHA-256 of the token is stored; ``manage.py mcp_client initial-token``
    prints the token once. A registration presenting it may ask for the
    ``client_credentials`` grant, and the client it creates gets this record's
    scopes and service user.
    """

    token_checksum = models.CharField(_("token checksum"), max_length=64, unique=True, editable=False)
    description = models.CharField(_("description"), max_length=255, blank=True, default="")
    scopes = models.TextField(_("scopes"), blank=True, default="", help_text=_("Space-separated; given to the client."))
    service_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("service user"),
    )
    uses_left = models.PositiveIntegerField(_("uses left"), null=True, blank=True, help_text=_("Empty: unlimited."))
    expires = models.DateTimeField(_("expires"), null=True, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    objects: ClassVar[models.Manager[InitialAccessToken]] = models.Manager()

    class Meta:
        verbose_name = _("initial access token")
        verbose_name_plural = _("initial access tokens")
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.description or f"token {self.token_checksum[:8]}…"


class SpentAuthorizationCode(models.Model):
    """An authorization code already exchanged, and what it yielded: a replay revokes those tokens.

    RFC 9700 §4.2.2 / OAuth 2.1 §4.1.3. Only checksums are kept, never a code or a token.
    """

    code_checksum = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=255)
    access_token_checksum = models.CharField(max_length=64, blank=True, default="")
    refresh_token_checksum = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    objects: ClassVar[models.Manager[SpentAuthorizationCode]] = models.Manager()

    class Meta:
        verbose_name = _("spent authorization code")
        verbose_name_plural = _("spent authorization codes")


class SpentAssertion(models.Model):
    """An identity assertion (ID-JAG) already exchanged for a token: its ``jti`` is refused until it expires.

    draft-ietf-oauth-identity-assertion-authz-grant, RFC 7523 §3: a ``jti`` is used once. Kept in the
    database, which every worker shares (a per-process cache would let a replay through another
    worker); only a checksum of issuer and ``jti``, and the row goes once the assertion has expired.
    """

    checksum = models.CharField(max_length=64, unique=True)
    expires = models.DateTimeField(db_index=True)

    objects: ClassVar[models.Manager[SpentAssertion]] = models.Manager()

    class Meta:
        verbose_name = _("spent identity assertion")
        verbose_name_plural = _("spent identity assertions")


class MCPTask(models.Model):
    """A task-augmented ``tools/call``: its caller, its state and, once ended, its result or error.

    The row is the task's truth: any web worker answers ``tasks/get`` from it, and the
    Tasks framework worker that runs the tool writes to it. ``id`` is an unguessable
    token, and a task is found only together with the user and OAuth client that
    created it (an anonymous caller's: its session), so another caller's lookup is
    not-found. ``oauth_token`` ties the run to the token that created it: revoked,
    the task stops.
    """

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STATUS_CHOICES: ClassVar[list[tuple[str, Any]]] = [
        (WORKING, _("working")),
        (INPUT_REQUIRED, _("input required")),
        (COMPLETED, _("completed")),
        (FAILED, _("failed")),
        (CANCELLED, _("cancelled")),
    ]
    TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    server = models.CharField(_("MCP server"), max_length=200, blank=True, default="")
    tool = models.CharField(_("tool"), max_length=200, db_index=True)
    arguments = models.JSONField(_("arguments"), default=dict, blank=True)
    protocol_version = models.CharField(_("protocol revision"), max_length=16)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_tasks"
    )
    oauth_client = models.CharField(_("OAuth client"), max_length=255, blank=True, default="")
    scopes = models.JSONField(
        _("token scopes"), null=True, blank=True, help_text=_("Scopes of the token that created it; empty: no token")
    )
    oauth_token = models.CharField(
        _("access token"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("Primary key of the OAuth access token that created it: each run checks it is not revoked"),
    )
    oauth_token_family = models.CharField(
        _("refresh token family"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("The token's refresh token family: its refreshed successors keep the task's grant"),
    )
    session = models.CharField(_("session"), max_length=64, blank=True, default="")
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    locale = models.CharField(_("locale"), max_length=64, blank=True, default="")
    status = models.CharField(_("status"), max_length=16, choices=STATUS_CHOICES, default=WORKING, db_index=True)
    status_message = models.TextField(_("status message"), blank=True, default="")
    result = models.JSONField(_("result"), null=True, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    input_requests = models.JSONField(_("input requests"), default=dict, blank=True)
    answers = models.JSONField(_("answers"), default=dict, blank=True)
    cancel_requested = models.BooleanField(_("cancel requested"), default=False)
    ttl_ms = models.PositiveBigIntegerField(_("TTL (ms)"), null=True, blank=True)
    poll_interval_ms = models.PositiveIntegerField(_("poll interval (ms)"), default=1000)
    attempts = models.PositiveIntegerField(_("runs"), default=0)
    backend_id = models.CharField(_("Tasks framework id"), max_length=64, blank=True, default="")
    created = models.DateTimeField(_("created"), db_index=True)
    updated = models.DateTimeField(_("last updated"))
    started = models.DateTimeField(_("started"), null=True, blank=True)
    finished = models.DateTimeField(_("finished"), null=True, blank=True)
    heartbeat = models.DateTimeField(_("worker heartbeat"), null=True, blank=True)
    expires = models.DateTimeField(_("expires"), null=True, blank=True, db_index=True)
    trace_context = models.JSONField(
        _("trace context"),
        default=dict,
        blank=True,
        help_text=_("W3C trace context of the call that created it (telemetry): its runs link to that span"),
    )

    objects: ClassVar[models.Manager[MCPTask]] = models.Manager()

    class Meta:
        verbose_name = _("MCP task")
        verbose_name_plural = _("MCP tasks")
        ordering = ["-created"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "oauth_client", "created"], name="django_mcp_task_owner_idx"),
            # The health endpoint's newest worker heartbeat: a max over an index, not a table scan per probe.
            models.Index(fields=["heartbeat"], name="django_mcp_task_heartbeat_idx"),
        ]
        permissions = (("view_mcptask_result", "Can view task results and errors"),)

    def __str__(self) -> str:
        return f"{self.tool} ({self.status}) {self.id[:8]}…"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class MCPSwitch(models.Model):
    """An operator's kill switch for one tool, resource, resource template or prompt.

    Keyed by kind and name (a tool's or prompt's name, a resource's URI, a template's URI
    template), so it applies on every ``MCPServer`` that registers that name. Rows are made
    for every registered object when staff open the admin list; only ``enabled=False``
    matters. Each worker keeps the switched-off set in memory (``django_mcp.switches``).
    """

    TOOL = "tool"
    RESOURCE = "resource"
    TEMPLATE = "template"
    PROMPT = "prompt"
    KIND_CHOICES: ClassVar[list[tuple[str, Any]]] = [
        (TOOL, _("tool")),
        (RESOURCE, _("resource")),
        (TEMPLATE, _("resource template")),
        (PROMPT, _("prompt")),
    ]

    kind = models.CharField(_("kind"), max_length=16, choices=KIND_CHOICES)
    name = models.CharField(
        _("name"),
        max_length=500,
        help_text=_("The tool's or prompt's name, the resource's URI, or the resource template's URI template."),
    )
    enabled = models.BooleanField(
        _("enabled"),
        default=True,
        db_index=True,
        help_text=_("Off: hidden from every list and refused to every caller, on every worker within a second."),
    )
    reason = models.TextField(
        _("reason"), blank=True, default="", help_text=_("Why it was switched off: for staff, never shown to clients.")
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("changed by"),
    )
    changed_at = models.DateTimeField(_("changed at"), null=True, blank=True)

    objects: ClassVar[models.Manager[MCPSwitch]] = models.Manager()

    class Meta:
        verbose_name = _("MCP kill switch")
        verbose_name_plural = _("MCP kill switches")
        ordering = ["kind", "name"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["kind", "name"], name="django_mcp_switch_unique")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name} ({'on' if self.enabled else 'off'})"


class MCPCallRecord(models.Model):
    """One audited request: a ``tools/call``, ``resources/read``, ``prompts/get`` or a task's run.

    Written in batches by the audit middleware's background writer
    (``django_mcp.audit.middleware``), pruned by ``manage.py mcp_cleanup`` after
    ``AUDIT_RETENTION``. The user is kept by id *and* by name: a record outlives the
    account (``SET_NULL``, no database constraint, so a batch never fails on a user
    deleted since the call). Only a session's prefix is stored: a live id is a credential.
    """

    OK = "ok"
    TOOL_ERROR = "tool_error"
    ERROR = "error"
    REFUSED = "refused"
    TASK = "task"
    INPUT_REQUIRED = "input_required"
    CANCELLED = "cancelled"
    OUTCOME_CHOICES: ClassVar[list[tuple[str, Any]]] = [
        (OK, _("result")),
        (TOOL_ERROR, _("tool error (isError)")),
        (ERROR, _("JSON-RPC error")),
        (REFUSED, _("refused (HTTP status)")),
        (TASK, _("task created")),
        (INPUT_REQUIRED, _("input required")),
        (CANCELLED, _("cancelled")),
    ]
    #: Outcomes the usage page counts as failures.
    FAILURES = frozenset({TOOL_ERROR, ERROR, REFUSED})

    at = models.DateTimeField(_("when"), db_index=True, help_text=_("When the request entered the server"))
    method = models.CharField(_("method"), max_length=32)
    target = models.CharField(_("tool, resource or prompt"), max_length=255, blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_constraint=False,
        db_index=False,  # the (user, at) index below serves it
        related_name="+",
        verbose_name=_("user"),
    )
    username = models.CharField(_("user name"), max_length=150, blank=True, default="")
    oauth_client = models.CharField(_("OAuth client"), max_length=255, blank=True, default="")
    session = models.CharField(_("session prefix"), max_length=8, blank=True, default="")
    revision = models.CharField(_("protocol revision"), max_length=16, blank=True, default="")
    transport = models.CharField(_("transport"), max_length=8)
    duration_ms = models.FloatField(_("duration (ms)"))
    outcome = models.CharField(_("outcome"), max_length=16, choices=OUTCOME_CHOICES)
    error_code = models.IntegerField(_("JSON-RPC error code"), null=True, blank=True)
    http_status = models.PositiveSmallIntegerField(_("HTTP status of a refusal"), null=True, blank=True)
    request_bytes = models.PositiveIntegerField(_("params (bytes)"), default=0)
    response_bytes = models.PositiveIntegerField(_("response (bytes)"), default=0)
    task_id = models.CharField(
        _("MCP task"), max_length=64, blank=True, default="", help_text=_("The task this call ran or created")
    )
    arguments = models.JSONField(_("arguments"), null=True, blank=True, help_text=_("Empty: hidden by the tool"))
    result = models.JSONField(
        _("result"), null=True, blank=True, help_text=_("Kept only for tools declared audit='full'")
    )

    objects: ClassVar[models.Manager[MCPCallRecord]] = models.Manager()

    class Meta:
        verbose_name = _("MCP call")
        verbose_name_plural = _("MCP calls")
        ordering = ["-at"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["target", "at"], name="django_mcp_call_target_idx"),
            models.Index(fields=["user", "at"], name="django_mcp_call_user_idx"),
            models.Index(fields=["oauth_client", "at"], name="django_mcp_call_client_idx"),
        ]  # each index costs every insert (~0.7 µs a row on SQLite): outcome filters scan by time instead
        permissions = (("view_mcpcallrecord_payload", "Can view audited arguments and results"),)

    def __str__(self) -> str:
        return f"{self.method} {self.target} ({self.outcome})"


class MCPTaskWorker(models.Model):
    """A task worker process (``manage.py db_worker``) that is alive: it beats while it runs, busy or idle.

    The health endpoint reads the newest beat: an idle worker and no worker at all look the same in
    the tasks' own heartbeats, which only a running task writes (``django_mcp.tasks.beat``). A worker
    deletes its row when it stops; ``mcp_cleanup`` deletes the rows of workers that died.
    """

    id = models.CharField(_("worker"), max_length=200, primary_key=True)
    host = models.CharField(_("host"), max_length=255)
    pid = models.PositiveIntegerField(_("process id"))
    started = models.DateTimeField(_("started"))
    beat = models.DateTimeField(_("last beat"), db_index=True)

    objects: ClassVar[models.Manager[MCPTaskWorker]] = models.Manager()

    class Meta:
        verbose_name = _("MCP task worker")
        verbose_name_plural = _("MCP task workers")
        ordering = ["-beat"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"
