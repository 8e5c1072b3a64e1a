"""The OAuth test project with swapped token models (``tests.swappedapp``).

Bearer tokens must be found through DOT's ``get_access_token_model()``, never
``oauth2_provider.models.AccessToken`` (which is not installed when swapped). DOT wants
the access and refresh token models swapped together (``oauth2_provider.W011``), the ID
token alongside.
"""

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.swappedapp"]  # noqa: F405
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "swappedapp.LibraryCardToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "swappedapp.LibraryCardRefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "swappedapp.LibraryCardIDToken"
