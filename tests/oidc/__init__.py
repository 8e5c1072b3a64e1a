"""The OIDC login recipe (docs/auth.md): the test project signs its users in at a real IdP (npm oidc-provider)."""
