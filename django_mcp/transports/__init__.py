"""Transports move bytes and call the engine; they know nothing of tools or resources."""
