"""Library model resources exposed over MCP (ModelResource)."""
