#!/bin/sh
# Serve the example project with its task worker: `make demo` and `make demo-wsgi` run this.
#
#   PYTHON=../.venv/bin/python ./run_demo.sh ../.venv/bin/daphne -b 127.0.0.1 -p 8000 example_project.asgi:application
#
# Starts `manage.py db_worker` (it runs the MCP tasks, e.g. export_catalogue) and the server given as arguments;
# Ctrl-C (or SIGTERM to this script) stops both, and when either exits the other is stopped too.
# In production run the two under your process manager (systemd, supervisord...) instead.
set -u
cd "$(dirname "$0")"
"${PYTHON:-python}" manage.py db_worker --no-reload &
worker=$!
"$@" &
server=$!
stop() {
    kill "$server" "$worker" 2>/dev/null
    wait "$server" "$worker" 2>/dev/null
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
# Wait for the first of the two to exit (POSIX sh has no `wait -n`): poll both every second.
while kill -0 "$server" 2>/dev/null && kill -0 "$worker" 2>/dev/null; do
    sleep 1 &
    wait $!
done
stop
wait "$server" 2>/dev/null
