#!/usr/bin/env bash
# HTTP interop over a shared Redis store: examples/http_server built with the `redis`
# feature, its tasks in a throwaway redis-server on a unix socket (no persistence).
#   0. examples/stdio_server on Redis: the whole Python stdio suite (../py_client.py:
#      elicitation, status notifications), its trace validated against the schema;
#   1. one instance on Redis: the whole Python HTTP suite (py_client.py), its traces
#      validated against the official 2025-11-25 schema;
#   2. two instances (A, B) on two ports sharing that Redis, one pair of tokens:
#      py_redis_client.py creates tasks through A and gets, awaits (tasks/result through B
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

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
SERVER="${INTEROP_HTTP_SERVER:-$REPO/target/debug/examples/http_server}"
STDIO_SERVER="${INTEROP_SERVER:-$REPO/target/debug/examples/stdio_server}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

log() { printf '\n== %s\n' "$*"; }

if ! command -v "$REDIS_SERVER" >/dev/null 2>&1; then
  echo "interop-redis: $REDIS_SERVER not found; install it (Debian: apt-get install redis-server)" >&2
  echo
  echo "interop-redis: 0 passed, 1 failed"
  exit 1
fi

if [[ -z "${INTEROP_HTTP_SERVER:-}" || -z "${INTEROP_SERVER:-}" ]]; then
  log "building the server examples with the shared store (cargo build --features redis --example http_server --example stdio_server)"
  (cd "$REPO" && cargo build --features redis --example http_server --example stdio_server)
fi
[[ -x "$SERVER" ]] || { echo "server binary not found at $SERVER" >&2; exit 1; }
[[ -x "$STDIO_SERVER" ]] || { echo "server binary not found at $STDIO_SERVER" >&2; exit 1; }

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 ]]; then
  log "installing the Python SDK into $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-redis.XXXXXX")"
chmod 700 "$WORK"
PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
trap stop_all EXIT

# stop PID: stops one process started here.
stop() {
  local pid="$1" kept=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do
    [[ "$p" == "$pid" ]] || kept+=("$p")
  done
  PIDS=("${kept[@]}")
}

# A throwaway Redis: unix socket only (no TCP port), nothing saved to disk.
SOCKET="$WORK/redis.sock"
log "starting $REDIS_SERVER on $SOCKET (no persistence)"
"$REDIS_SERVER" --port 0 --unixsocket "$SOCKET" --unixsocketperm 700 \
  --save '' --appendonly no --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
PIDS+=($!)
REDIS_PID=$!
for _ in $(seq 1 200); do
  [[ -S "$SOCKET" ]] && break
  kill -0 "$REDIS_PID" 2>/dev/null || break
  sleep 0.05
done
if [[ ! -S "$SOCKET" ]]; then
  echo "redis-server did not start; its log:" >&2
  cat "$WORK/redis.log" >&2 || true
  echo
  echo "interop-redis: 0 passed, 1 failed"
  exit 1
fi
if command -v redis-cli >/dev/null 2>&1; then
  redis-cli -s "$SOCKET" ping
fi
export MCP_TASKS_REDIS_URL="redis+unix://$SOCKET"

# Fresh random tokens for two principals, in a private token file both instances read.
random_token() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
ALICE_TOKEN="$(random_token)"
BOB_TOKEN="$(random_token)"
umask 077
printf '# principal=token\nalice=%s\nbob=%s\n' "$ALICE_TOKEN" "$BOB_TOKEN" > "$WORK/tokens"
umask 022

# start_server NAME: a fresh instance on Redis, on a free loopback port, tracing into
# $WORK/NAME.traces; sets SERVER_URL and SERVER_PID.
start_server() {
  local name="$1"
  mkdir -p "$WORK/$name.traces"
  : > "$WORK/$name.server.out"
  env -u MCP_TASKS_TOKENS MCP_TASKS_TOKENS_FILE="$WORK/tokens" MCP_TASKS_HTTP_ADDR=127.0.0.1:0 \
    MCP_TASKS_PAGE_SIZE=2 MCP_TASKS_TRACE_DIR="$WORK/$name.traces" RUST_BACKTRACE=1 \
    "$SERVER" --redis "$MCP_TASKS_REDIS_URL" > "$WORK/$name.server.out" 2> "$WORK/$name.server.err" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  local line="" _
  for _ in $(seq 1 200); do
    line="$(sed -n 's/^listening on //p' "$WORK/$name.server.out" || true)"
    [[ -n "$line" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -z "$line" ]]; then
    echo "the server $name did not start; its stderr:" >&2
    cat "$WORK/$name.server.err" >&2
    return 1
  fi
  SERVER_URL="$line"
  echo "instance $name at $SERVER_URL, tasks in $MCP_TASKS_REDIS_URL"
}

export MCP_TASKS_ALICE_TOKEN="$ALICE_TOKEN" MCP_TASKS_BOB_TOKEN="$BOB_TOKEN" MCP_TASKS_PAGE_SIZE=2

OUT_DIR="$WORK"
# shellcheck source=interop/lib.sh
source "$INTEROP/lib.sh"

# 0. The whole Python stdio suite (elicitation, status notifications) on Redis.
run redis-stdio-py-client env MCP_TASKS_TRACE="$WORK/stdio.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/py_client.py" \
  "$STDIO_SERVER" --redis "$MCP_TASKS_REDIS_URL"
run redis-stdio-schema-validation "$VENV/bin/python" "$INTEROP/validate_trace.py" "$WORK/stdio.trace.jsonl"

# 1. The whole Python HTTP suite against one instance on Redis.
if start_server suite; then
  run redis-py-client env MCP_TASKS_URL="$SERVER_URL" \
    timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_client.py"
  stop "$SERVER_PID"
  shopt -s nullglob
  traces=("$WORK"/suite.traces/*.jsonl)
  shopt -u nullglob
  run redis-schema-validation "$VENV/bin/python" "$INTEROP/validate_trace.py" "${traces[@]}"
else
  total_failed=$((total_failed + 1)); status=1
fi

# 2. Two instances sharing the store.
if start_server A; then
  URL_A="$SERVER_URL"
  if start_server B; then
    URL_B="$SERVER_URL"
    run redis-two-instances env MCP_TASKS_URL_A="$URL_A" MCP_TASKS_URL_B="$URL_B" \
      MCP_TASKS_TRACE_DIR_A="$WORK/A.traces" MCP_TASKS_TRACE_DIR_B="$WORK/B.traces" \
      timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_redis_client.py"
  else
    total_failed=$((total_failed + 1)); status=1
  fi
else
  total_failed=$((total_failed + 1)); status=1
fi

# A server that logged a panic failed, whatever its clients saw.
if grep -l 'panicked' "$WORK"/*.server.err >/dev/null 2>&1; then
  echo "-- a server panicked:"
  grep -H -A5 'panicked' "$WORK"/*.server.err || true
  total_failed=$((total_failed + 1)); status=1
fi
stop_all

if [[ $status -ne 0 || "${INTEROP_KEEP_TRACES:-0}" == 1 ]]; then
  echo
  echo "traces, server and redis logs and outputs kept in $WORK"
else
  rm -rf "$WORK"
fi
echo
echo "interop-redis: $total_passed passed, $total_failed failed"
exit "$status"
