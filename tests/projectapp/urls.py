from tests.oauth.urls import urlpatterns

__all__ = ["urlpatterns"]
