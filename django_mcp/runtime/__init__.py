"""The request's path through the server: dispatch (the one door), the engine, the sync pool, timers, shutdown."""
