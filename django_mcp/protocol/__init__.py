"""The MCP wire protocol, free of Django and of I/O.

Everything here is pure: parsing and classifying JSON-RPC messages, version
negotiation, per-revision validation (through the official ``mcp-types``
package) and per-revision result shaping. Transports and the server build on it.
"""
