"""The project's own token models, in place of DOT's ``AccessToken``, ``RefreshToken`` and ``IDToken``.

DOT wants the access and refresh token models swapped together, into one app (check
``oauth2_provider.W011``: they point at each other), and the ID token alongside them.
"""

from django.db import models
from oauth2_provider.models import AbstractAccessToken, AbstractIDToken, AbstractRefreshToken


class LibraryCardToken(AbstractAccessToken):
    """DOT's access token plus a field of the project's own: proves the swapped table is the one used."""

    card_number = models.CharField(max_length=20, blank=True, default="")

    class Meta(AbstractAccessToken.Meta):
        swappable = "OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL"


class LibraryCardRefreshToken(AbstractRefreshToken):
    class Meta(AbstractRefreshToken.Meta):
        swappable = "OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL"


class LibraryCardIDToken(AbstractIDToken):
    class Meta(AbstractIDToken.Meta):
        swappable = "OAUTH2_PROVIDER_ID_TOKEN_MODEL"
