"""Scoped and permissioned resources of every kind, for the subscriptions/listen vs resources/subscribe tests."""
