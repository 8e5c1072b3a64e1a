"""What outlives a request: sessions, the per-process hub on the Channels layer, the SSE event store, subscriptions."""
