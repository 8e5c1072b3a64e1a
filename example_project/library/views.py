from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from django_mcp import site
from django_mcp.conf import mcp_settings

from .models import Book, Loan


def index(request: HttpRequest) -> HttpResponse:
    """A landing page: where the MCP endpoint is and what it offers."""
    return render(
        request,
        "library/index.html",
        {
            "endpoint": request.build_absolute_uri(mcp_settings.ENDPOINT),
            "server": site,
            "tools": site.tools.values(),
            "resources": [*site.resources.values(), *site.templates.values()],
            "prompts": site.prompts.values(),
            "books": Book.objects.count(),
            "active_loans": Loan.objects.active().count(),
            "has_superuser": get_user_model().objects.filter(is_superuser=True).exists(),
        },
    )
