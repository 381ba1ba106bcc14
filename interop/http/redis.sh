#!/usr/bin/env bash
# HTTP interop over a shared Redis store: mcp_http (the server of http/) built with the
# `redis` feature, its tasks in a throwaway redis-server on a unix socket (no persistence).
#   0. the stdio_server on Redis: the whole Python stdio suite (../py_client.py:
#      elicitation, status notifications), its trace validated against the schema;
#   1. one instance on Redis: the whole Python HTTP suite (py_client.py), its traces
#      validated against the official 2025-11-25 schema;
#   2. two instances (A, B) on two ports sharing that Redis, one pair of tokens:
#      py_shared_client.py creates tasks through A and gets, awaits (tasks/result through B
#      blocks until A's handler finishes), lists and cancels them through B, and checks
#      that another principal on B sees none of them.
# See interop/http/README.md. Needs redis-server on PATH (Debian: apt-get install
# redis-server); without it the script fails.
#
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1     reuse interop/.venv as it is
#   INTEROP_KEEP_TRACES=1      keep the work directory even when everything passed
#   PYTHON=python3.11          interpreter used to create interop/.venv
#   INTEROP_HTTP_SERVER=/path  drive this HTTP server binary (built with --features redis)
#   INTEROP_SERVER=/path       drive this stdio server binary (built with --features redis)
#   REDIS_SERVER=/path         the redis-server binary (default: redis-server on PATH)
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$INTEROP/http"
SERVER="${INTEROP_HTTP_SERVER:-$TARGET/debug/mcp_http}"
STDIO_SERVER="${INTEROP_SERVER:-$TARGET/debug/stdio_server}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"

# give_up: the closing line for a run that could not start.
give_up() {
  echo
  echo "interop-redis: 0 passed, 1 failed"
  exit 1
}

if ! command -v "$REDIS_SERVER" >/dev/null 2>&1; then
  echo "interop-redis: $REDIS_SERVER not found; install it (Debian: apt-get install redis-server)" >&2
  give_up
fi

if [[ -z "${INTEROP_SERVER:-}" || -z "${INTEROP_HTTP_SERVER:-}" ]]; then
  build_workspace
fi
need_binary "$SERVER" "$STDIO_SERVER"
install_sdks py

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-redis.XXXXXX")"
chmod 700 "$WORK"
OUT_DIR="$WORK"
trap stop_all EXIT

# A throwaway Redis: unix socket only (no TCP port), nothing saved to disk.
SOCKET="$WORK/redis.sock"
log "starting $REDIS_SERVER on $SOCKET (no persistence)"
"$REDIS_SERVER" --port 0 --unixsocket "$SOCKET" --unixsocketperm 700 \
  --save '' --appendonly no --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
if ! wait_for "$REDIS_PID" test -S "$SOCKET"; then
  echo "redis-server did not start; its log:" >&2
  cat "$WORK/redis.log" >&2 || true
  give_up
fi
if command -v redis-cli >/dev/null 2>&1; then
  redis-cli -s "$SOCKET" ping
fi
export MCP_TASKS_REDIS_URL="redis+unix://$SOCKET"

# Fresh tokens for two principals, in a private token file all instances read.
write_tokens
export MCP_TASKS_PAGE_SIZE=2

# start_server NAME: a fresh instance on Redis (start_http_server: a free loopback port,
# traces in $WORK/NAME.traces); sets SERVER_URL and SERVER_PID.
start_server() {
  start_http_server "$1" --redis "$MCP_TASKS_REDIS_URL"
}

# 0. The whole Python stdio suite (elicitation, status notifications) on Redis.
stdio_suite redis "$STDIO_SERVER" --redis "$MCP_TASKS_REDIS_URL"

# 1. The whole Python HTTP suite against one instance on Redis.
if start_server suite; then
  run redis-py-client env MCP_TASKS_URL="$SERVER_URL" \
    timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_client.py"
  stop "$SERVER_PID"
  validate_http_traces redis "$WORK/suite.traces"
else
  count_failure
fi

# 2. Two instances sharing the store.
two_instances redis start_server

fail_on_panics
stop_all

finish interop-redis "traces, server and redis logs and outputs"
