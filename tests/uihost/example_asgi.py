"""The example project exactly as it ships, with the test host page beside it (``tests/uihost/serve.py``)."""

from example_project.asgi import application as example

from tests.uihost.serve import with_host_page

application = with_host_page(example)
