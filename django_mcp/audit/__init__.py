"""The audit log: what a declaration says about its record, the middleware, the writer, the log line, the admin."""
