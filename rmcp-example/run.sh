#!/usr/bin/env bash
# Builds the rmcp example server and drives it over stdio with the official TypeScript
# and Python clients of the interop suite (interop/ts_client.mjs, interop/py_client.py:
# the same scenarios as for the stdio_server of servers/), then validates every message it
# wrote against the official 2025-11-25 JSON schema (interop/validate_trace.py).
#
# Reuses interop/node_modules and interop/.venv (run interop/run.sh first, or without
# INTEROP_SKIP_INSTALL=1 this script installs them). Ends with
# "rmcp-interop: N passed, N failed"; exits non-zero if anything failed.
# Knobs: INTEROP_SKIP_INSTALL=1, INTEROP_KEEP_TRACES=1, PYTHON=python3.11,
#        RMCP_EXAMPLE_SKIP_PYTHON=1 (TypeScript client only).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=interop/lib.sh
source "$HERE/../interop/lib.sh"
SERVER="$TARGET/debug/mcp-tasks-rmcp-example"

build_workspace

install_sdks ts
[[ "${RMCP_EXAMPLE_SKIP_PYTHON:-0}" == 1 ]] || install_sdks py

TRACES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-rmcp-interop.XXXXXX")"
OUT_DIR="$TRACES"
export MCP_TASKS_PAGE_SIZE=2
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

traces=("$TRACES/ts.trace.jsonl")
run rmcp-ts-client env MCP_TASKS_TRACE="$TRACES/ts.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" node "$INTEROP/ts_client.mjs" "$SERVER"
if [[ "${RMCP_EXAMPLE_SKIP_PYTHON:-0}" != 1 ]]; then
  traces+=("$TRACES/py.trace.jsonl")
  run rmcp-py-client env MCP_TASKS_TRACE="$TRACES/py.trace.jsonl" \
    timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/py_client.py" "$SERVER"
fi
if [[ -x "$VENV/bin/python" ]]; then
  run rmcp-schema-validation "$VENV/bin/python" "$INTEROP/validate_trace.py" "${traces[@]}"
fi

finish rmcp-interop "traces and outputs"
