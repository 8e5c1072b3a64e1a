"""What the tests share that is not a fixture: clients, readers, helpers (fixtures live in conftest.py)."""
