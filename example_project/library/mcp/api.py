"""Library DRF API views and plain views exposed as MCP tools."""
