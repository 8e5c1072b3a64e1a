"""Telemetry tests' project files: settings with ``TELEMETRY`` on, the OTel SDK exporting to files.

``settings`` (daphne, stdio, db_worker) and ``settings_wsgi`` with ``wsgi`` (gunicorn, under
``opentelemetry-instrumentation-django``) configure the OpenTelemetry SDK of each server process
(``export.configure``) to write its finished spans and its metrics, as the SDK's own JSON, to files
of ``TELEMETRY_TEST_DIR`` named after the process id; ``read`` gives them to the test.
"""
