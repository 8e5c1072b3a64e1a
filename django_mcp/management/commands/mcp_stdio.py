"""``manage.py mcp_stdio``: serve MCP over stdin/stdout for hosts that spawn a process.

Fail-closed like the HTTP endpoint: every request runs as the user named by
``--user`` or as the owner of the access token in ``DJANGO_MCP_TOKEN`` (checked
by django-oauth-toolkit: unknown, expired, revoked or disabled-client tokens are
refused, and its scopes limit what the client sees). With ``AUTH = "oauth"`` and
neither given the command refuses to start; only development mode
(``AUTH = "none"``) serves anonymously. Never an implicit superuser.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import import_string

from ...auth.bearer import Challenge, verify_token
from ...conf import mcp_settings
from ...server import MCPServer, site
from ...transports import stdio
from ..users import active_user

TOKEN_ENV = "DJANGO_MCP_TOKEN"


@dataclass(frozen=True)
class Identity:
    """Who a stdio process serves: a user, and the token's scopes and client (None: not limited by a token)."""

    user: Any
    scopes: frozenset[str] | None = None
    client_id: str = ""
    token: Any = None  # the access token's row: tasks follow its revocation


class Command(BaseCommand):
    help = (
        "Serve MCP over stdio (newline-delimited JSON-RPC): the default site, or --server. "
        f"Runs as --user or as the owner of the access token in ${TOKEN_ENV}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--server", metavar="DOTTED.PATH", help="An MCPServer instance to serve instead of django_mcp.site."
        )
        parser.add_argument(
            "--user",
            metavar="USERNAME",
            help=f"Run every request as this user (with AUTH 'oauth' this or ${TOKEN_ENV} is required).",
        )

    def execute(self, *args: Any, **options: Any) -> Any:
        # Before the system checks run: their report (and anything else) must not reach the protocol stream.
        self.protocol_fd = stdio.protect_stdout()
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        server = self.load_server(options.get("server"))
        identity = self.identity(options.get("user"), os.environ.get(TOKEN_ENV) or None)
        stdio.log_to_stderr(int(options.get("verbosity", 1)))
        stdio.serve(
            server,
            identity.user,
            output_fd=self.protocol_fd,
            scopes=identity.scopes,
            client_id=identity.client_id,
            token=identity.token,
        )

    def load_server(self, path: str | None) -> MCPServer:
        if not path:
            return site
        try:
            server = import_string(path)
        except ImportError as exc:
            raise CommandError(f"Cannot import --server {path!r}: {exc}") from exc
        if not isinstance(server, MCPServer):
            raise CommandError(f"--server {path!r} is a {type(server).__name__}, not an MCPServer instance")
        return server

    def identity(self, username: str | None, token: str | None) -> Identity:
        if username is not None and token is not None:
            raise CommandError(f"Give --user or ${TOKEN_ENV}, not both.")
        if token is not None:
            return self.token_identity(token.strip())
        if username is not None:
            return Identity(active_user(username))
        if mcp_settings.AUTH != "none":
            raise CommandError(
                f"mcp_stdio refuses to serve anonymously with DJANGO_MCP['AUTH'] = {mcp_settings.AUTH!r}: "
                f"pass --user USERNAME, or an access token in ${TOKEN_ENV} (manage.py mcp_token makes one)."
            )

        return Identity(AnonymousUser())

    def token_identity(self, token: str) -> Identity:
        """Verify ``token`` with the HTTP endpoint's own checks (DOT's validator, user, client, audience)."""
        if not apps.is_installed("oauth2_provider"):
            raise CommandError(f"${TOKEN_ENV} needs 'oauth2_provider' in INSTALLED_APPS.")
        from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once handle() found it installed

        # stdio has no URL to match a token's audience (RFC 8707) against: a token this server issued for any
        # of its resources is accepted, so the check is given the token's own first resource.
        stored = oauth2_settings.OAUTH2_VALIDATOR_CLASS()._load_access_token(token) if token else None
        url = (getattr(stored, "resource", None) or ["http://localhost/"])[0]
        try:
            info = verify_token(token, url)
        except Challenge as exc:
            raise CommandError(f"${TOKEN_ENV} is not a valid access token: {exc.description}") from None
        if not getattr(info.user, "is_authenticated", False):
            raise CommandError(f"${TOKEN_ENV} acts for no user.")
        return Identity(user=info.user, scopes=info.scopes, client_id=info.client_id, token=info.token)
