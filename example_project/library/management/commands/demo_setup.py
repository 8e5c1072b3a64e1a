"""``manage.py demo_setup``: the demo accounts, and how to connect (``make demo`` runs it).

Two roles, each with exactly the model permissions its tools need: ``reader`` is a member
(borrows and returns their own books), ``librarian`` is desk staff (sees every loan, lends
to anyone, takes any book back).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

USERNAME = "reader"
PASSWORD = "library-demo"  # a demo on loopback only; never reuse
STAFF_USERNAME = "librarian"
STAFF_PASSWORD = "library-desk"  # a demo on loopback only; never reuse
#: Permissions of each demo account ("<app_label>.<codename>").
MEMBER_PERMISSIONS = ["library.add_loan"]
STAFF_PERMISSIONS = ["library.add_loan", "library.view_loan", "library.change_loan", "library.lend_to_others"]


def account(username: str, password: str, permissions: list[str]) -> Any:
    """Create or reset a demo account with exactly ``permissions``."""
    from django.contrib.auth.models import Permission

    users = get_user_model()
    user = users.objects.filter(username=username).first() or users.objects.create_user(username)
    user.set_password(password)
    user.save()
    codenames = [p.split(".", 1)[1] for p in permissions]
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="library", codename__in=codenames))
    return user


class Command(BaseCommand):
    help = "Create the demo users (reader, librarian) and print how to connect an MCP client."

    def add_arguments(self, parser: Any) -> None:
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--port", type=int, default=8000, help="the port the demo serves on (default 8000)")
        where.add_argument("--url", help="the MCP endpoint's full URL (default http://127.0.0.1:<port>/mcp/)")

    def handle(self, *args: Any, **options: Any) -> None:
        endpoint = options["url"] or f"http://127.0.0.1:{options['port']}/mcp/"
        parts = urlsplit(endpoint)
        site_root = f"{parts.scheme}://{parts.netloc}"
        account(USERNAME, PASSWORD, MEMBER_PERMISSIONS)
        account(STAFF_USERNAME, STAFF_PASSWORD, STAFF_PERMISSIONS)
        out: list[str] = []
        call_command("mcp_token", "--user", USERNAME, "--resource", endpoint, "--expires", "12h", stdout=_Lines(out))
        token = out[0].strip()
        self.stdout.write(
            f"""
MCP endpoint  {endpoint}   (OAuth 2.1: the client registers itself, you sign in and consent)
Demo users    {USERNAME} / {PASSWORD}   (a member: borrows and returns their own books)
              {STAFF_USERNAME} / {STAFF_PASSWORD}   (loan desk: sees every loan, lends to anyone)
Admin         {site_root}/admin/  (manage.py createsuperuser first) -> MCP clients

Connect:
  SDK, full OAuth flow (opens your browser):
    .venv/bin/python example_project/demo_client.py {endpoint} --oauth
  SDK with a ready token (valid 12h):
    DJANGO_MCP_TOKEN={token} .venv/bin/python example_project/demo_client.py {endpoint}
  MCP Inspector:  npx @modelcontextprotocol/inspector -> Streamable HTTP, URL {endpoint},
                  then "Open Auth Settings" -> "Quick OAuth Flow" (sign in as {USERNAME})
"""
        )


class _Lines:
    """A stdout stand-in collecting what a command writes."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> None:
        self.lines.append(text)

    def flush(self) -> None:
        pass
