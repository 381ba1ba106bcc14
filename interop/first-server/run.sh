#!/usr/bin/env bash
# The README's first task server (server/examples/first_server.rs) and the official
# clients: the TypeScript SDK (client.mjs) and the Python SDK (client.py), the two clients
# the docs show, each call `deploy` as a task, approve it when asked, and read
# "checkout deployed"; over stdio and over Streamable HTTP (a bearer token), with the tasks
# in the process and in a throwaway redis-server; and redelivery: two HTTP instances on
# that Redis, the one running the task stopped with SIGTERM, the other finishing it
# (handover.py). Also checks that the README and docs/clients.md show the program and
# the clients as they are (../readme/blocks.py). Prints PASS/FAIL per check and ends with
# "interop-first-server: N passed, N failed". See interop/first-server/README.md.
#
# Needs: cargo, Node >= 20 with npm, Python >= 3.10 with venv/pip, redis-server on PATH.
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1      reuse interop/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1       keep the work directory even when everything passed
#   PYTHON=python3.11           interpreter used to create interop/.venv
#   INTEROP_FIRST_SERVER=/path  drive this binary (built with the features http and redis)
#                               instead of building it
#   REDIS_SERVER=/path          the redis-server binary (default: redis-server on PATH)
#   INTEROP_FIRST_SERVER_HANDOVER=0  leave the redelivery check out
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$INTEROP/first-server"
SERVER="${INTEROP_FIRST_SERVER:-$TARGET/debug/examples/first_server}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"

give_up() {
  echo
  echo "interop-first-server: 0 passed, 1 failed"
  exit 1
}

if ! command -v "$REDIS_SERVER" >/dev/null 2>&1; then
  echo "interop-first-server: $REDIS_SERVER not found; install it (Debian: apt-get install redis-server)" >&2
  give_up
fi

if [[ -z "${INTEROP_FIRST_SERVER:-}" ]]; then
  log "building first_server (cargo build -p mcp-tasks-server --example first_server --features http,redis)"
  (cd "$REPO" && cargo build --locked -p mcp-tasks-server --example first_server --features http,redis)
fi
need_binary "$SERVER"
install_sdks ts py

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-first-server.XXXXXX")"
chmod 700 "$WORK"
OUT_DIR="$WORK"
trap stop_all EXIT
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

# verdict NAME STATUS: one PASS or FAIL line, counted in the totals.
verdict() {
  if [[ "$2" -eq 0 ]]; then
    echo "PASS $1"
    total_passed=$((total_passed + 1))
  else
    echo "FAIL $1"
    total_failed=$((total_failed + 1))
    status=1
  fi
}

# client NAME COMMAND...: runs one client (its output in $WORK/NAME.out) and passes if it
# exits 0 having printed the question and the result the docs say it prints.
client() {
  local name="$1" rc=0; shift
  timeout "$CLIENT_TIMEOUT" "$@" > "$WORK/$name.out" 2>&1 || rc=$?
  sed 's/^/    /' "$WORK/$name.out"
  if [[ $rc -eq 0 ]] && grep -qx 'asked: Deploy checkout?' "$WORK/$name.out" \
    && grep -qx 'checkout deployed' "$WORK/$name.out"; then rc=0; else rc=1; fi
  verdict "$name: deploy asked for approval, then 'checkout deployed'" $rc
}

# both_clients LABEL: the TypeScript and the Python client, with the environment as set.
both_clients() {
  client "$1-ts" node "$HERE/client.mjs"
  client "$1-py" "$VENV/bin/python" -W ignore::DeprecationWarning "$HERE/client.py"
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_http NAME: first_server on a free loopback port, with the tokens of write_tokens;
# waits until it accepts connections, sets SERVER_URL and SERVER_PID. Its stderr is
# $WORK/NAME.server.err.
start_http() {
  local name="$1" port
  port="$(free_port)"
  MCP_TASKS_TOKENS_FILE="$WORK/tokens" "$SERVER" "127.0.0.1:$port" \
    > "$WORK/$name.server.out" 2> "$WORK/$name.server.err" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  SERVER_URL="http://127.0.0.1:$port/mcp"
  if ! wait_for "$SERVER_PID" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    echo "first_server $name did not start; its stderr:" >&2
    cat "$WORK/$name.server.err" >&2
    return 1
  fi
  echo "first_server $name at $SERVER_URL"
}

# stdio_and_http STORE: both clients over stdio, then over HTTP (alice's token), and a
# request without a token refused.
stdio_and_http() {
  local store="$1"
  log "$store: stdio"
  FIRST_SERVER="$SERVER" both_clients "$store-stdio"
  log "$store: Streamable HTTP"
  if start_http "$store-http"; then
    MCP_URL="$SERVER_URL" MCP_TOKEN="$MCP_TASKS_ALICE_TOKEN" both_clients "$store-http"
    local code
    code="$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL" -H 'Content-Type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"ping"}')"
    [[ "$code" == 401 ]] && rc=0 || rc=1
    verdict "$store-http: a request without a bearer token is refused (HTTP $code)" $rc
    stop "$SERVER_PID"
  else
    verdict "$store-http: first_server serves HTTP" 1
  fi
}

log "the README and docs/clients.md show the program and its clients as they are"
rc=0
(cd "$REPO" && "$PYTHON" "$INTEROP/readme/blocks.py" \
  README.md server/examples/first_server.rs interop/first-server/client.py \
  -- docs/clients.md interop/first-server/client.mjs interop/first-server/client.py) || rc=$?
verdict "the shown program and clients are the files" $rc

write_tokens

# 1. The tasks in the process (the default store).
unset MCP_TASKS_STORE MCP_TASKS_REDIS_URL MCP_TASKS_POSTGRES_URL
stdio_and_http memory

# 2. The tasks in a throwaway Redis: unix socket only, nothing saved to disk.
SOCKET="$WORK/redis.sock"
log "starting $REDIS_SERVER on $SOCKET (no persistence)"
"$REDIS_SERVER" --port 0 --unixsocket "$SOCKET" --unixsocketperm 700 \
  --save '' --appendonly no --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
if wait_for "$REDIS_PID" test -S "$SOCKET"; then
  export MCP_TASKS_STORE="redis+unix://$SOCKET"
  stdio_and_http redis
  # Each client's task is in Redis (the store keeps a key per task).
  tasks="$(redis-cli -s "$SOCKET" --scan --pattern '*:t:*' | wc -l)"
  [[ "$tasks" -ge 4 ]] && rc=0 || rc=1
  verdict "redis: the four clients' tasks are kept in Redis ($tasks found)" $rc

  # 3. Redelivery: A runs the task and stops (SIGTERM, a short grace: it hands the task
  # over through its handler's handle); B claims it and finishes it from its checkpoint,
  # although A's runtime, with the handler's future, is dropped when its `main` returns.
  if [[ "${INTEROP_FIRST_SERVER_HANDOVER:-1}" != 1 ]]; then
    echo "(redelivery across two instances left out: INTEROP_FIRST_SERVER_HANDOVER=0)"
  elif MCP_TASKS_SHUTDOWN_MS=1 start_http A && url_a="$SERVER_URL" && pid_a="$SERVER_PID" \
    && start_http B; then
    run redis-handover env MCP_URL_A="$url_a" MCP_URL_B="$SERVER_URL" FIRST_SERVER_A_PID="$pid_a" \
      MCP_TOKEN="$MCP_TASKS_ALICE_TOKEN" timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/handover.py"
  else
    verdict "redis: two first_server instances start" 1
  fi
else
  echo "redis-server did not start; its log:" >&2
  cat "$WORK/redis.log" >&2 || true
  verdict "redis: a throwaway redis-server starts" 1
fi

fail_on_panics
stop_all

finish interop-first-server "outputs, server and redis logs"
