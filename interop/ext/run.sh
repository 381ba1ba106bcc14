#!/usr/bin/env bash
# Interop suite for the 2026-07-28 tasks extension (io.modelcontextprotocol/tasks):
# drives the stdio_server of servers/ with the official extension client
# @modelcontextprotocol/ext-tasks 0.2.2 (ext_client.mjs), then validates every extension
# message the server wrote against schema/ext-tasks-schema.json
# (validate_ext_trace.py). See interop/ext/README.md.
#
# Needs: Node >= 20 with npm, Python >= 3.10 with venv/pip, and (unless INTEROP_SERVER is
# set) the Rust toolchain. interop/run.sh calls this script at its end; it also runs alone.
# Environment knobs (the same as interop/run.sh):
#   INTEROP_SKIP_INSTALL=1   reuse interop/ext/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1    keep the trace directory even when everything passed
#   INTEROP_SERVER=/path     drive this server binary instead of building the example
#   INTEROP_CLIENT_TIMEOUT=N seconds the client may take (default 300)
#   INTEROP_EXT_TRACES=DIR   write the trace and outputs into DIR (kept; interop/run.sh
#                            passes its own trace directory)
#   PYTHON=python3.11        interpreter used to create interop/.venv if it is missing
#   EXT_ONLY_2026=1          the server speaks 2026-07-28 only (rmcp/'s rmcp_stdio): the
#                            two 2025-11-25 scenarios are skipped, the client writes the trace
set -euo pipefail

EXT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$EXT/.." && pwd)"
REPO="$(cd "$INTEROP/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
SERVER="${INTEROP_SERVER:-${CARGO_TARGET_DIR:-$REPO/target}/debug/stdio_server}"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

log() { printf '\n== %s\n' "$*"; }

if [[ -z "${INTEROP_SERVER:-}" ]]; then
  # shellcheck source=../lib.sh
  source "$INTEROP/lib.sh"
  build_workspace
fi
[[ -x "$SERVER" ]] || { echo "server binary not found at $SERVER" >&2; exit 1; }

if [[ "${INTEROP_SKIP_INSTALL:-0}" != 1 ]]; then
  log "ext: installing @modelcontextprotocol/ext-tasks (npm ci)"
  (cd "$EXT" && npm ci --no-audit --no-fund)
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "ext: creating $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
  fi
fi

if [[ -n "${INTEROP_EXT_TRACES:-}" ]]; then
  TRACES="$INTEROP_EXT_TRACES"
  mkdir -p "$TRACES"
  keep=1
else
  TRACES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-ext.XXXXXX")"
  keep="${INTEROP_KEEP_TRACES:-0}"
fi
TRACE="$TRACES/ext.trace.jsonl"
rm -f "$TRACE"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

total_passed=0
total_failed=0
total_skipped=0
status=0

# part NAME COMMAND...: runs one part, echoing its output, and adds up its closing
# "N passed, N failed[, N skipped]" line (a part that exits non-zero without failing any
# check counts as one failure).
part() {
  local name="$1"; shift
  local out="$TRACES/$name.out" rc=0
  log "$name"
  "$@" 2>&1 | tee "$out" || rc=$?
  local line p=0 f=0 s=0
  line="$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -n 1 || true)"
  if [[ -n "$line" ]]; then
    p="${line%% passed*}"; f="${line#*, }"; f="${f%% failed*}"
    if [[ "$line" == *skipped ]]; then s="${line##*, }"; s="${s%% skipped}"; fi
  fi
  if [[ $rc -ne 0 && $f -eq 0 ]]; then f=1; fi
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  total_skipped=$((total_skipped + s))
  if [[ $rc -ne 0 ]]; then
    echo "-- $name exited with status $rc"
    status=1
  fi
}

# A server that speaks 2026-07-28 only (EXT_ONLY_2026=1, an rmcp 3.x server) writes no
# trace of its own: the client writes it.
if [[ "${EXT_ONLY_2026:-0}" == 1 ]]; then trace_var=EXT_CLIENT_TRACE; else trace_var=MCP_TASKS_TRACE; fi
part ext-client env "$trace_var=$TRACE" \
  timeout "$CLIENT_TIMEOUT" node "$EXT/ext_client.mjs" "$SERVER"
part ext-schema-validation "$VENV/bin/python" "$EXT/validate_ext_trace.py" "$TRACE"

if [[ $status -ne 0 || "$keep" == 1 ]]; then
  echo
  echo "ext traces and outputs kept in $TRACES"
else
  rm -rf "$TRACES"
fi
echo
if [[ $total_skipped -gt 0 ]]; then echo "ext: $total_skipped skipped"; fi
# The last line is the total, in the format interop/run.sh adds up.
echo "$total_passed passed, $total_failed failed"
exit "$status"
