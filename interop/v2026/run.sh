#!/usr/bin/env bash
# Interop suite: 2026-07-28 clients of other SDKs against the stdio example, through the
# tasks extension io.modelcontextprotocol/tasks. See interop/v2026/README.md.
#
#   rmcp-client       the official Rust SDK's client, rmcp 3.11.0, in the discover lifecycle
#   py-ext-client     fastmcp-tasks 4.1.4 on mcp 2.3.0, FastMCP's default ("auto") mode
#   ext-schema-validation
#                     interop/ext/validate_ext_trace.py over both clients' server traces
#
# Each client spawns its own server (target/debug/stdio_server) with MCP_TASKS_TRACE set.
# The last line is "interop-2026: N passed, N failed" (the sum); the exit status is 1 if
# anything failed.
#
# Needs: the Rust toolchain, Python >= 3.11 with venv/pip; the network for crates.io and
# PyPI the first time. Environment knobs (the same as the other interop runners):
#   INTEROP_SKIP_INSTALL=1   reuse interop/v2026/.venv as it is (when it exists)
#   INTEROP_KEEP_TRACES=1    keep the trace directory even when everything passed
#   INTEROP_SERVER=/path     drive this server binary instead of building the example
#   INTEROP_CLIENT_TIMEOUT=N seconds each client may take (default 300)
#   CARGO_TARGET_DIR=DIR     where cargo builds the server and the rmcp client
#   PYTHON=python3.12        interpreter used to create interop/v2026/.venv
set -euo pipefail

V2026="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$V2026/../lib.sh"
# This suite's own venv: interop/.venv pins mcp 1.30 for the 2025-11-25 clients.
VENV="$V2026/.venv"
SERVER="${INTEROP_SERVER:-$TARGET/debug/stdio_server}"
RMCP_CLIENT="$TARGET/debug/mcp-tasks-rmcp-client"

# The stdio server and the rmcp client (a workspace member) in the shared build.
build_workspace
need_binary "$SERVER" "$RMCP_CLIENT"

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 || ! -x "$VENV/bin/python" ]]; then
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  # --no-deps: requirements.txt is the whole resolved set (see the note at its top).
  log "installing fastmcp-tasks, mcp and jsonschema into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    -r "$V2026/requirements.txt"
fi

OUT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-2026.XXXXXX")"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

# `timeout` runs each client in a process group of its own and signals the whole group,
# so a client that overruns takes its server with it.
run rmcp-client env MCP_TASKS_TRACE="$OUT_DIR/rmcp.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" "$RMCP_CLIENT" "$SERVER"
run py-ext-client env MCP_TASKS_TRACE="$OUT_DIR/py.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$V2026/py_ext_client.py" "$SERVER"

traces=()
for trace in "$OUT_DIR/rmcp.trace.jsonl" "$OUT_DIR/py.trace.jsonl"; do
  if [[ -s "$trace" ]]; then
    traces+=("$trace")
  else
    echo "no server trace at $trace" >&2
    count_failure
  fi
done
if [[ ${#traces[@]} -gt 0 ]]; then
  run ext-schema-validation "$VENV/bin/python" "$INTEROP/ext/validate_ext_trace.py" "${traces[@]}"
fi

finish interop-2026 "traces and outputs"
