"""An app holding a swapped-in access token model (``OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL``)."""
