from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from library.api import book_card, router
from library.views import index

urlpatterns = [
    path("", index, name="index"),
    path("api/", include(router.urls)),
    path("books/<int:pk>/card/", book_card, name="book-card"),
    path("admin/", admin.site.urls),
    # OAuth for MCP clients: the login page users see during consent, then the well-known
    # metadata, /oauth/authorize/, /oauth/token/, /oauth/register/ ... from django_mcp.urls.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("", include("django_mcp.urls")),
    # WSGI mode (`make demo-wsgi`, gunicorn): the MCP endpoint at /mcp/ as a plain Django view.
    # Under daphne the Channels router answers /mcp/ first and this route is never reached.
    path("", include("django_mcp.urls_wsgi")),
]
