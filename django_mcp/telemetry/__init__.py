"""OpenTelemetry spans and metrics for every request through the door (``TELEMETRY``)."""
