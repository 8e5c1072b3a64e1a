from tests.oauth.urls_wsgi import urlpatterns

__all__ = ["urlpatterns"]
