"""Loopback benchmarks: ``python benchmarks/run.py`` (``make bench``)."""
