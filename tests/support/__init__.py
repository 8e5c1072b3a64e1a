"""What test files share: live servers, clients, readers, data (the fixtures most files use live in conftest.py).

No test module imports another (tests/test_layers.py checks): a helper two files need comes here.
"""
