#!/usr/bin/env bash
# HTTP interop suite: drives mcp_http, the server of http/ (Streamable HTTP on hyper, bearer
# tokens, SSE), with the official TypeScript and Python MCP SDKs, two principals each
# (elicitation round trips and status notifications included), then validates every
# message the server wrote against the official 2025-11-25 JSON schema.
# See interop/http/README.md.
#
# Reuses interop/node_modules and interop/.venv (the same pinned SDKs as the stdio suite).
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1     reuse interop/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1      keep the trace directory even when everything passed
#   PYTHON=python3.11          interpreter used to create interop/.venv
#   INTEROP_HTTP_SERVER=/path  drive this server binary instead of building mcp_http
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$INTEROP/http"
SERVER="${INTEROP_HTTP_SERVER:-$TARGET/debug/mcp_http}"

if [[ -z "${INTEROP_HTTP_SERVER:-}" ]]; then
  build_workspace
fi
need_binary "$SERVER"
install_sdks ts py

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-http.XXXXXX")"
OUT_DIR="$WORK"
trap stop_all EXIT
write_tokens
export MCP_TASKS_PAGE_SIZE=2

# One fresh server per client (start_http_server: a free loopback port, traces in
# $WORK/NAME.traces).
start_http_server ts
run http-ts-client env MCP_TASKS_URL="$SERVER_URL" timeout "$CLIENT_TIMEOUT" node "$HERE/ts_client.mjs"
stop "$SERVER_PID"
start_http_server py
run http-py-client env MCP_TASKS_URL="$SERVER_URL" \
  timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_client.py"
stop "$SERVER_PID"

validate_http_traces http "$WORK/ts.traces" "$WORK/py.traces"

finish interop-http "traces, server logs and outputs"
