"""A small DRF API (items on shelves) that the suite exposes as MCP tools."""
