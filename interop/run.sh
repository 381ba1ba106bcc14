#!/usr/bin/env bash
# Interop suite: drives examples/stdio_server with the official TypeScript and
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

INTEROP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$INTEROP/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
SERVER="${INTEROP_SERVER:-$REPO/target/debug/examples/stdio_server}"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

log() { printf '\n== %s\n' "$*"; }

if [[ -z "${INTEROP_SERVER:-}" ]]; then
  log "building the server example (cargo build --example stdio_server)"
  (cd "$REPO" && cargo build --example stdio_server)
fi
[[ -x "$SERVER" ]] || { echo "server binary not found at $SERVER" >&2; exit 1; }

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 ]]; then
  log "installing the TypeScript SDK (npm ci)"
  (cd "$INTEROP" && npm ci --no-audit --no-fund)

  log "installing the Python SDK into $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
fi

TRACES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop.XXXXXX")"
export MCP_TASKS_PAGE_SIZE=2
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

OUT_DIR="$TRACES"
# shellcheck source=interop/lib.sh
source "$INTEROP/lib.sh"

run ts-client env MCP_TASKS_TRACE="$TRACES/ts.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" node "$INTEROP/ts_client.mjs" "$SERVER"
run py-client env MCP_TASKS_TRACE="$TRACES/py.trace.jsonl" \
  timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/py_client.py" "$SERVER"
run schema-validation \
  "$VENV/bin/python" "$INTEROP/validate_trace.py" "$TRACES/ts.trace.jsonl" "$TRACES/py.trace.jsonl"
# The 2026-07-28 tasks extension suite (interop/ext/run.sh), counted in the same total.
run ext env INTEROP_SERVER="$SERVER" INTEROP_EXT_TRACES="$TRACES/ext" bash "$INTEROP/ext/run.sh"

if [[ $status -ne 0 || "${INTEROP_KEEP_TRACES:-0}" == 1 ]]; then
  echo
  echo "traces and outputs kept in $TRACES"
else
  rm -rf "$TRACES"
fi
echo
echo "interop: $total_passed passed, $total_failed failed"
exit "$status"
