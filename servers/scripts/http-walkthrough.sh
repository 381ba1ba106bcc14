#!/usr/bin/env bash
# The README's curl session against the Streamable HTTP example, run as it is shown there:
# start the server with two principals, then as alice: initialize, call `sleep` as a task,
# poll it with tasks/get, block on tasks/result, list; bob cannot see alice's task.
# Prints each exchange; exits non-zero if an answer is not what the README says.
set -euo pipefail
cd "$(dirname "$0")/../.."

ADDR="${MCP_TASKS_HTTP_ADDR:-127.0.0.1:8818}"
URL="http://$ADDR/mcp"
BIN="${HTTP_SERVER:-${CARGO_TARGET_DIR:-target}/debug/http_server}"
[[ -x "$BIN" ]] || cargo build --quiet -p mcp-tasks-servers --bin http_server

MCP_TASKS_TOKENS='alice=token-a,bob=token-b' MCP_TASKS_HTTP_ADDR="$ADDR" "$BIN" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "$URL" && break; sleep 0.05; done

fail() { echo "walkthrough: $*" >&2; exit 1; }
# post TOKEN BODY [SESSION]: one JSON-RPC message, the answer on stdout.
post() {
  local session=()
  [[ -n "${3:-}" ]] && session=(-H "Mcp-Session-Id: $3" -H 'MCP-Protocol-Version: 2025-11-25')
  local answer
  answer=$(curl -s "$URL" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "${session[@]}" -d "$2")
  printf '> %s\n< %s\n' "$2" "$answer" >&2
  printf '%s' "$answer"
}
field() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if k.isdigit() else v[k]
print(v)' "$1"; }

# 1. initialize: the session id comes back in a header.
session=$(curl -s -D - -o /dev/null "$URL" -H 'Authorization: Bearer token-a' \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[[ -n "$session" ]] || fail "initialize gave no Mcp-Session-Id"
post token-a '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$session" >/dev/null

# 2. sleep as a task: the answer is a CreateTaskResult, at once.
created=$(post token-a '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":4000},"task":{"ttl":60000}}}' "$session")
task=$(field result.task.taskId <<<"$created")
[[ "$(field result.task.status <<<"$created")" == working ]] || fail "the new task is not working"

# 3. tasks/get while it runs, 4. tasks/result blocks until it is done.
[[ "$(post token-a '{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"'"$task"'"}}' "$session" | field result.status)" == working ]] \
  || fail "tasks/get does not say working"
[[ "$(post token-a '{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"'"$task"'"}}' "$session" | field result.content.0.text)" == "slept 4000 ms" ]] \
  || fail "tasks/result is not the tool's result"

# 5. tasks/list shows it completed; bob gets the unknown-id error for alice's task.
[[ "$(post token-a '{"jsonrpc":"2.0","id":5,"method":"tasks/list"}' "$session" | field result.tasks.0.status)" == completed ]] \
  || fail "tasks/list does not show the completed task"
bob=$(curl -s -D - -o /dev/null "$URL" -H 'Authorization: Bearer token-b' \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[[ "$(post token-b '{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"'"$task"'"}}' "$bob" | field error.code)" == -32602 ]] \
  || fail "bob could see alice's task"
echo "walkthrough: 1 passed, 0 failed"
