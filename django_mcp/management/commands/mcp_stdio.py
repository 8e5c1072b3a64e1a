"""``manage.py mcp_stdio``: serve MCP over stdin/stdout for hosts that spawn a process."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import import_string

from ...server import MCPServer
from ...transports import stdio


class Command(BaseCommand):
    help = "Serve MCP over stdio (newline-delimited JSON-RPC): the default site, or --server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--server", metavar="DOTTED.PATH", help="An MCPServer instance to serve instead of django_mcp.site."
        )
        parser.add_argument("--user", metavar="USERNAME", help="Run every request as this user (default: anonymous).")

    def execute(self, *args: Any, **options: Any) -> Any:
        # Before the system checks run: their report (and anything else) must not reach the protocol stream.
        self.protocol_fd = stdio.protect_stdout()
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        server = self.load_server(options.get("server"))
        user = self.load_user(options.get("user"))
        stdio.log_to_stderr(int(options.get("verbosity", 1)))
        stdio.serve(server, user, output_fd=self.protocol_fd)

    def load_server(self, path: str | None) -> MCPServer:
        if not path:
            from ... import site

            return site
        try:
            server = import_string(path)
        except ImportError as exc:
            raise CommandError(f"Cannot import --server {path!r}: {exc}") from exc
        if not isinstance(server, MCPServer):
            raise CommandError(f"--server {path!r} is a {type(server).__name__}, not an MCPServer instance")
        return server

    def load_user(self, username: str | None) -> Any:
        if username is None:
            return None  # the transport uses AnonymousUser
        from django.contrib.auth import get_user_model

        model = get_user_model()
        try:
            user = model._default_manager.get_by_natural_key(username)
        except model.DoesNotExist:
            raise CommandError(f"No user named {username!r}") from None
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive")
        return user
