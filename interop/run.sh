#!/usr/bin/env bash
# Interop suite: drives the stdio_server of servers/ with the official TypeScript and
# Python MCP SDKs, then validates every message the server wrote against the
# official 2025-11-25 JSON schema. See interop/README.md.
#
# Needs: Rust toolchain (cargo), Node >= 20 with npm, Python >= 3.10 with venv/pip.
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1   reuse interop/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1    keep the trace directory even when everything passed
#   PYTHON=python3.11        interpreter used to create interop/.venv
#   INTEROP_SERVER=/path     drive this server binary instead of building the example
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SERVER="${INTEROP_SERVER:-$TARGET/debug/stdio_server}"

if [[ -z "${INTEROP_SERVER:-}" ]]; then
  build_workspace
fi
need_binary "$SERVER"
install_sdks ts py

TRACES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop.XXXXXX")"
export MCP_TASKS_PAGE_SIZE=2
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
OUT_DIR="$TRACES"

run ts-client env MCP_TASKS_TRACE="$TRACES/ts.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" node "$INTEROP/ts_client.mjs" "$SERVER"
run py-client env MCP_TASKS_TRACE="$TRACES/py.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/py_client.py" "$SERVER"
run schema-validation \
  "$VENV/bin/python" "$INTEROP/validate_trace.py" "$TRACES/ts.trace.jsonl" "$TRACES/py.trace.jsonl"
# The client snippets of docs/clients.md, as written there.
run readme-clients bash "$INTEROP/readme/check.sh" "$SERVER" "$VENV/bin/python"
# The 2026-07-28 tasks extension suite (interop/ext/run.sh), counted in the same total.
run ext env INTEROP_SERVER="$SERVER" INTEROP_EXT_TRACES="$TRACES/ext" bash "$INTEROP/ext/run.sh"

finish interop "traces and outputs"
