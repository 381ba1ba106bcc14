#!/usr/bin/env bash
# HTTP interop suite: drives examples/http_server (Streamable HTTP, bearer tokens) with the
# official TypeScript and Python MCP SDKs, two principals each, then validates every
# message the server wrote against the official 2025-11-25 JSON schema.
# See interop/http/README.md.
#
# Reuses interop/node_modules and interop/.venv (the same pinned SDKs as the stdio suite).
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1     reuse interop/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1      keep the trace directory even when everything passed
#   PYTHON=python3.11          interpreter used to create interop/.venv
#   INTEROP_HTTP_SERVER=/path  drive this server binary instead of building the example
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
SERVER="${INTEROP_HTTP_SERVER:-$REPO/target/debug/examples/http_server}"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

log() { printf '\n== %s\n' "$*"; }

if [[ -z "${INTEROP_HTTP_SERVER:-}" ]]; then
  log "building the server example (cargo build --example http_server)"
  (cd "$REPO" && cargo build --example http_server)
fi
[[ -x "$SERVER" ]] || { echo "server binary not found at $SERVER" >&2; exit 1; }

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 ]]; then
  log "installing the TypeScript SDK (npm ci in interop/)"
  (cd "$INTEROP" && npm ci --no-audit --no-fund)
  log "installing the Python SDK into $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-http.XXXXXX")"
SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

# Fresh random tokens for two principals, in a private token file.
random_token() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
ALICE_TOKEN="$(random_token)"
BOB_TOKEN="$(random_token)"
umask 077
printf '# principal=token\nalice=%s\nbob=%s\n' "$ALICE_TOKEN" "$BOB_TOKEN" > "$WORK/tokens"
umask 022

# start_server NAME: a fresh server on a free loopback port, tracing into $WORK/NAME.traces;
# sets MCP_TASKS_URL.
start_server() {
  local name="$1"
  mkdir -p "$WORK/$name.traces"
  : > "$WORK/$name.server.out"
  env -u MCP_TASKS_TOKENS MCP_TASKS_TOKENS_FILE="$WORK/tokens" MCP_TASKS_HTTP_ADDR=127.0.0.1:0 \
    MCP_TASKS_PAGE_SIZE=2 MCP_TASKS_TRACE_DIR="$WORK/$name.traces" RUST_BACKTRACE=1 \
    "$SERVER" > "$WORK/$name.server.out" 2> "$WORK/$name.server.err" &
  SERVER_PID=$!
  local line="" _
  for _ in $(seq 1 200); do
    line="$(sed -n 's/^listening on //p' "$WORK/$name.server.out" || true)"
    [[ -n "$line" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -z "$line" ]]; then
    echo "the server did not start; its stderr:" >&2
    cat "$WORK/$name.server.err" >&2
    return 1
  fi
  export MCP_TASKS_URL="$line"
  echo "server for $name at $MCP_TASKS_URL"
}

export MCP_TASKS_ALICE_TOKEN="$ALICE_TOKEN" MCP_TASKS_BOB_TOKEN="$BOB_TOKEN" MCP_TASKS_PAGE_SIZE=2

OUT_DIR="$WORK"
# shellcheck source=interop/lib.sh
source "$INTEROP/lib.sh"

start_server ts
run http-ts-client timeout "$CLIENT_TIMEOUT" node "$HERE/ts_client.mjs"
stop_server
start_server py
run http-py-client timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_client.py"
stop_server

# One trace per 2025-11-25 session; ext-<principal>.jsonl holds the 2026-07-28 requests.
shopt -s nullglob
traces=()
ext_traces=()
for trace in "$WORK"/ts.traces/*.jsonl "$WORK"/py.traces/*.jsonl; do
  case "$(basename "$trace")" in
    ext-*) ext_traces+=("$trace") ;;
    *) traces+=("$trace") ;;
  esac
done
run http-schema-validation "$VENV/bin/python" "$INTEROP/validate_trace.py" "${traces[@]}"
if [[ ${#ext_traces[@]} -gt 0 && -f "$INTEROP/ext/validate_ext_trace.py" ]]; then
  run http-ext-schema-validation "$VENV/bin/python" "$INTEROP/ext/validate_ext_trace.py" "${ext_traces[@]}"
fi

if [[ $status -ne 0 || "${INTEROP_KEEP_TRACES:-0}" == 1 ]]; then
  echo
  echo "traces, server logs and outputs kept in $WORK"
else
  rm -rf "$WORK"
fi
echo
echo "interop-http: $total_passed passed, $total_failed failed"
exit "$status"
