"""Optional integrations; each module imports its third-party package only when used."""
