#!/usr/bin/env bash
# Run a command and print how long it took: `scripts/timed.sh LABEL command...` (make test's per-pass times).
# A step that runs past STEP_LIMIT seconds (default 1800) is stopped and fails, so one hang costs its own step,
# not CI's whole limit (each test has its own limit too: pytest-timeout, in pyproject.toml).
label=$1
shift
start=$(date +%s)
timeout --kill-after=30 "${STEP_LIMIT:-1800}" "$@"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "[make test] ${label}: stopped after ${STEP_LIMIT:-1800} s (STEP_LIMIT)"
fi
echo "[make test] ${label}: $(( $(date +%s) - start )) s (exit ${status})" | tee -a "${TIMES_FILE:-/dev/null}"
exit $status
