"""A DRF viewset whose serializer class depends on the database, as many projects' do (a feature flag, a
per-tenant field list): registered in ``mcp.py``, it must cost no query while Django starts."""
