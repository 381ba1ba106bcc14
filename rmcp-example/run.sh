#!/usr/bin/env bash
# Builds the rmcp example server and drives it over stdio with the official TypeScript
# and Python clients of the interop suite (interop/ts_client.mjs, interop/py_client.py:
# the same scenarios as for examples/stdio_server), then validates every message it
# wrote against the official 2025-11-25 JSON schema (interop/validate_trace.py).
#
# Reuses interop/node_modules and interop/.venv (run interop/run.sh first, or without
# INTEROP_SKIP_INSTALL=1 this script installs them). Ends with
# "rmcp-interop: N passed, N failed"; exits non-zero if anything failed.
# Knobs: INTEROP_SKIP_INSTALL=1, INTEROP_KEEP_TRACES=1, PYTHON=python3.11,
#        RMCP_EXAMPLE_SKIP_PYTHON=1 (TypeScript client only).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
INTEROP="$REPO/interop"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
SERVER="$HERE/target/debug/mcp-tasks-rmcp-example"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

log() { printf '\n== %s\n' "$*"; }

log "building the rmcp example (cargo build --manifest-path rmcp-example/Cargo.toml)"
cargo build --manifest-path "$HERE/Cargo.toml"

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 ]]; then
  log "installing the TypeScript SDK (npm ci in interop/)"
  (cd "$INTEROP" && npm ci --no-audit --no-fund)
  if [[ "${RMCP_EXAMPLE_SKIP_PYTHON:-0}" != 1 ]]; then
    log "installing the Python SDK into $VENV"
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
  fi
fi

TRACES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-rmcp-interop.XXXXXX")"
export MCP_TASKS_PAGE_SIZE=2
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

OUT_DIR="$TRACES"
# shellcheck source=interop/lib.sh
source "$INTEROP/lib.sh"

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

if [[ $status -ne 0 || "${INTEROP_KEEP_TRACES:-0}" == 1 ]]; then
  echo
  echo "traces and outputs kept in $TRACES"
else
  rm -rf "$TRACES"
fi
echo
echo "rmcp-interop: $total_passed passed, $total_failed failed"
exit "$status"
