"""A plain Django view run as a task through ``register_view``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def shout(request: HttpRequest) -> HttpResponse:
    """The ``text`` argument in capitals, for the user the view sees."""
    return HttpResponse(f"{request.GET.get('text', '').upper()} ({request.user.get_username() or 'anonymous'})")
