"""``manage.py demo_setup``: the demo reader account, and how to connect (``make demo`` runs it)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

USERNAME = "reader"
PASSWORD = "library-demo"  # a demo on loopback only; never reuse
ENDPOINT = "http://127.0.0.1:8000/mcp/"


class Command(BaseCommand):
    help = "Create the demo user (reader / library-demo) and print how to connect an MCP client."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        user = users.objects.filter(username=USERNAME).first()
        if user is None:
            user = users.objects.create_user(USERNAME, password=PASSWORD)
        user.set_password(PASSWORD)
        user.save()
        out = []
        call_command("mcp_token", "--user", USERNAME, "--resource", ENDPOINT, "--expires", "12h", stdout=_Lines(out))
        token = out[0].strip()
        self.stdout.write(
            f"""
MCP endpoint  {ENDPOINT}   (OAuth 2.1: the client registers itself, you sign in and consent)
Demo user     {USERNAME} / {PASSWORD}
Admin         http://127.0.0.1:8000/admin/  (manage.py createsuperuser first) -> MCP clients

Connect:
  SDK, full OAuth flow (opens your browser):  .venv/bin/python example_project/demo_client.py --oauth
  SDK with a ready token (valid 12h):         DJANGO_MCP_TOKEN={token} .venv/bin/python example_project/demo_client.py
  MCP Inspector:  npx @modelcontextprotocol/inspector -> Streamable HTTP, URL {ENDPOINT},
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
