"""The package version (read by hatch at build time; importing it needs no settings)."""

__version__ = "0.1.0"
