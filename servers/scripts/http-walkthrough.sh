#!/usr/bin/env bash
# The curl session of docs/serving.md against the Streamable HTTP server (`mcp_http`, the
# http/ crate), run as it is shown there: start the server with two principals, then as alice:
# initialize, call `sleep` as a task, poll it with tasks/get, wait on tasks/result (an SSE
# stream while the task runs, ending with the answer), list; bob cannot
# see alice's task; a 2026-07-28 request needs no session; DELETE ends the session.
# Prints each exchange; exits non-zero if an answer is not what the page says.
set -euo pipefail
cd "$(dirname "$0")/../.."

ADDR="${MCP_TASKS_HTTP_ADDR:-127.0.0.1:8818}"
URL="http://$ADDR/mcp"
if [[ -n "${HTTP_SERVER:-}" ]]; then
  BIN="$HTTP_SERVER"
else
  # `cargo run -p mcp-tasks-http`, built first (the shared build of interop/lib.sh) so the
  # start-up wait below does not include the build.
  # shellcheck source=../../interop/lib.sh
  source interop/lib.sh
  build_workspace >&2
  BIN="$TARGET/debug/mcp_http"
fi

MCP_TASKS_TOKENS='alice=token-a,bob=token-b' MCP_TASKS_HTTP_ADDR="$ADDR" "$BIN" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "$URL" && break; sleep 0.05; done

fail() { echo "walkthrough: $*" >&2; exit 1; }
# post TOKEN BODY [SESSION]: one JSON-RPC message, the answer (JSON or an SSE stream) on
# stdout.
post() {
  local session=()
  [[ -n "${3:-}" ]] && session=(-H "Mcp-Session-Id: $3" -H 'MCP-Protocol-Version: 2025-11-25')
  local answer
  answer=$(curl -s "$URL" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "${session[@]}" -d "$2")
  printf '> %s\n< %s\n' "$2" "$answer" >&2
  printf '%s' "$answer"
}
# field PATH: a member of the JSON-RPC response on stdin; an SSE stream's response is its
# last `data:` message that has an id (the notifications before it have none).
field() { python3 -c 'import json,sys
text=sys.stdin.read()
if text.lstrip().startswith("{"):
    v=json.loads(text)
else:
    msgs=[json.loads(l[5:].strip()) for l in text.splitlines() if l.startswith("data:") and l[5:].strip()]
    v=[m for m in msgs if "id" in m and "method" not in m][-1]
for k in sys.argv[1].split("."): v=v[int(k)] if k.isdigit() else v[k]
print(v)' "$1"; }
# session_of TOKEN: initialize as TOKEN; prints the Mcp-Session-Id the answer names.
session_of() {
  curl -s -D - -o /dev/null "$URL" -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}

# 1. initialize: the session id comes back in a header.
session=$(session_of token-a)
[[ -n "$session" ]] || fail "initialize gave no Mcp-Session-Id"
post token-a '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$session" >/dev/null

# 2. sleep as a task: the answer is a CreateTaskResult, at once.
created=$(post token-a '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":4000},"task":{"ttl":60000}}}' "$session")
task=$(field result.task.taskId <<<"$created")
[[ "$(field result.task.status <<<"$created")" == working ]] || fail "the new task is not working"

# 3. tasks/get while it runs, 4. tasks/result waits until it is done (an event stream).
[[ "$(post token-a '{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"'"$task"'"}}' "$session" | field result.status)" == working ]] \
  || fail "tasks/get does not say working"
waited=$(post token-a '{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"'"$task"'"}}' "$session")
[[ "$(field result.content.0.text <<<"$waited")" == "slept 4000 ms" ]] \
  || fail "tasks/result is not the tool's result"

# 5. tasks/list shows it completed; bob gets the unknown-id error for alice's task.
[[ "$(post token-a '{"jsonrpc":"2.0","id":5,"method":"tasks/list"}' "$session" | field result.tasks.0.status)" == completed ]] \
  || fail "tasks/list does not show the completed task"
bob=$(session_of token-b)
[[ "$(post token-b '{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"'"$task"'"}}' "$bob" | field error.code)" == -32602 ]] \
  || fail "bob could see alice's task"

# 6. 2026-07-28 (the tasks extension): no session, the version in a header and in _meta.
listed=$(curl -s "$URL" -H 'Authorization: Bearer token-a' -H 'Content-Type: application/json' \
  -H 'Accept: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
  -d '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}')
printf '> tools/list (2026-07-28)\n< %s\n' "$listed" >&2
[[ "$(field result.cacheScope <<<"$listed")" =~ ^[a-z]+$ ]] \
  || fail "a 2026-07-28 tools/list has no cacheScope"

# 7. DELETE ends the session; it is then unknown (404).
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$URL" \
  -H 'Authorization: Bearer token-a' -H "Mcp-Session-Id: $session")
[[ "$status" == 204 ]] || fail "DELETE answered $status"
status=$(curl -s -o /dev/null -w '%{http_code}' "$URL" -H 'Authorization: Bearer token-a' \
  -H 'Content-Type: application/json' -H 'Accept: application/json' \
  -H "Mcp-Session-Id: $session" -d '{"jsonrpc":"2.0","id":8,"method":"tasks/list"}')
[[ "$status" == 404 ]] || fail "a request in the ended session answered $status"
echo "walkthrough: 1 passed, 0 failed"
