#!/usr/bin/env bash
# The operator's console (mcp_tasks_server::http::admin) in a real headless Chromium:
# mcp_http built with the `redis` feature on a throwaway redis-server (unix socket, no
# persistence), its console on a second loopback port, driven by test_page.py (Playwright's
# Python package, the system's Chromium: nothing is downloaded). See test_page.py for the
# checks. ADMIN_PAGE_SCREENSHOTS=docs/images takes the screenshots docs/operations-console.md
# shows (desktop and phone).
#
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1     reuse interop/.venv as it is
#   INTEROP_KEEP_TRACES=1      keep the work directory even when everything passed
#   INTEROP_HTTP_SERVER=/path  drive this HTTP server binary (built with --features redis)
#   REDIS_SERVER=/path         the redis-server binary (default: redis-server on PATH)
#   CHROMIUM=/path             the browser (default: /usr/bin/chromium)
#   ADMIN_PAGE_SCREENSHOTS=DIR take the screenshots into DIR (docs/images for the docs)
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$INTEROP/admin-page"
SERVER="${INTEROP_HTTP_SERVER:-$TARGET/debug/mcp_http}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

give_up() {
  echo
  echo "admin-page: 0 passed, 1 failed"
  exit 1
}

command -v "$REDIS_SERVER" >/dev/null 2>&1 \
  || { echo "admin-page: $REDIS_SERVER not found (Debian: apt-get install redis-server)" >&2; give_up; }
[[ -x "$CHROMIUM" ]] \
  || { echo "admin-page: no browser at $CHROMIUM (Debian: apt-get install chromium)" >&2; give_up; }

if [[ -z "${INTEROP_HTTP_SERVER:-}" ]]; then
  build_workspace
fi
need_binary "$SERVER"
if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 || ! -x "$VENV/bin/python" ]]; then
  log "installing Playwright's Python package into $VENV (no browser download)"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-admin-page.XXXXXX")"
chmod 700 "$WORK"
OUT_DIR="$WORK"
trap stop_all EXIT

SOCKET="$WORK/redis.sock"
log "starting $REDIS_SERVER on $SOCKET (no persistence)"
"$REDIS_SERVER" --port 0 --unixsocket "$SOCKET" --unixsocketperm 700 \
  --save '' --appendonly no --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
wait_for "$REDIS_PID" test -S "$SOCKET" || { cat "$WORK/redis.log" >&2 || true; give_up; }

# MCP principals (one named like markup, to see it rendered as text) and one admin.
ALICE_TOKEN="$(random_token)"; BOB_TOKEN="$(random_token)"; MARKUP_TOKEN="$(random_token)"
ADMIN_TOKEN="$(random_token)"
export ALICE_TOKEN BOB_TOKEN MARKUP_TOKEN ADMIN_TOKEN
(umask 077 && printf 'alice=%s\nbob=%s\n<script>x</script>=%s\n' \
  "$ALICE_TOKEN" "$BOB_TOKEN" "$MARKUP_TOKEN" > "$WORK/tokens"
 printf 'ops=%s\n' "$ADMIN_TOKEN" > "$WORK/admin-tokens")

log "starting $SERVER with the operator's console"
env -u MCP_TASKS_TOKENS -u MCP_TASKS_ADMIN_TOKENS MCP_TASKS_TOKENS_FILE="$WORK/tokens" \
  MCP_TASKS_HTTP_ADDR=127.0.0.1:0 MCP_TASKS_ADMIN_ADDR=127.0.0.1:0 \
  MCP_TASKS_ADMIN_TOKENS_FILE="$WORK/admin-tokens" MCP_TASKS_MAX_TASKS_PER_OWNER=none \
  MCP_TASKS_LEASE_MS=4000 MCP_TASKS_LEASE_RENEW_MS=1000 \
  RUST_BACKTRACE=1 "$SERVER" --redis "redis+unix://$SOCKET" \
  > "$WORK/console.server.out" 2> "$WORK/console.server.err" &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
if ! wait_for "$SERVER_PID" grep -q "^operator's console on " "$WORK/console.server.out"; then
  echo "the server did not start; its stderr:" >&2
  cat "$WORK/console.server.err" >&2
  give_up
fi
MCP_URL="$(sed -n 's/^listening on //p' "$WORK/console.server.out")"
ADMIN_URL="$(sed -n "s/^operator's console on //p" "$WORK/console.server.out")"
export MCP_URL ADMIN_URL
export ADMIN_PAGE_SCREENSHOTS="${ADMIN_PAGE_SCREENSHOTS:-}"
echo "MCP at $MCP_URL, console at $ADMIN_URL"

run admin-page timeout 150 "$VENV/bin/python" "$HERE/test_page.py"

stop_all
fail_on_panics
finish admin-page "server and redis logs and outputs"
