# Shared by the interop runners (interop/run.sh, interop/http/run.sh,
# interop/http/redis.sh, interop/http/postgres.sh, rmcp-example/run.sh). Sourcing it sets
# INTEROP, REPO, PYTHON, VENV and CLIENT_TIMEOUT and the totals; the runner sets OUT_DIR,
# the folder where each component's output is kept, before its first `run`.

INTEROP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$INTEROP/.." && pwd)"
# Where cargo puts what it builds (CARGO_TARGET_DIR is honoured, as cargo does).
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
PYTHON="${PYTHON:-python3}"
VENV="$INTEROP/.venv"
CLIENT_TIMEOUT="${INTEROP_CLIENT_TIMEOUT:-300}"

total_passed=0
total_failed=0
status=0

log() { printf '\n== %s\n' "$*"; }

# The one build every runner and CI step shares: the whole workspace, every feature, every
# target. Cargo unifies features over what one invocation selects, so any other selection
# (`-p mcp-tasks-http`, a feature less) would compile tokio, hyper and rmcp again; this one
# is a no-op after CI's build. The binaries: $TARGET/debug/{stdio_server,mcp_http,
# mcp-tasks-rmcp-example,mcp-tasks-rmcp-client} and $TARGET/debug/examples/{rmcp_stdio,
# rmcp_http}, each with the `redis` and `postgres` features (a shared store only when
# given a URL).
BUILD_ARGS=(--locked --workspace --all-features --all-targets)
build_workspace() {
  log "building the workspace (cargo build ${BUILD_ARGS[*]})"
  (cd "$REPO" && cargo build "${BUILD_ARGS[@]}")
}

# need_binary PATH...: exits unless each PATH is an executable.
need_binary() {
  local path
  for path in "$@"; do
    [[ -x "$path" ]] || { echo "server binary not found at $path" >&2; exit 1; }
  done
}

# install_sdks PART...: unless INTEROP_SKIP_INSTALL=1, installs the pinned SDKs the
# clients use: ts (npm ci in interop/), py (interop/.venv from requirements.txt).
install_sdks() {
  [[ "${INTEROP_SKIP_INSTALL:-0}" == 1 ]] && return 0
  local part
  for part in "$@"; do
    case "$part" in
      ts)
        log "installing the TypeScript SDK (npm ci in interop/)"
        (cd "$INTEROP" && npm ci --no-audit --no-fund)
        ;;
      py)
        log "installing the Python SDK into $VENV"
        [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt"
        ;;
      *) echo "install_sdks: unknown part $part" >&2; exit 2 ;;
    esac
  done
}

# run NAME COMMAND...: runs one component, echoing its output, and adds up the
# "N passed, N failed" closing line it printed (a component that exits non-zero
# without failing any check is counted as one failure).
run() {
  local name="$1"; shift
  local out="$OUT_DIR/$name.out" rc=0
  log "$name"
  "$@" 2>&1 | tee "$out" || rc=$?
  local line p f
  line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
  if [[ -n "$line" ]]; then
    p="${line%% passed*}"; f="${line#*, }"; f="${f%% failed*}"
  else
    p=0; f=0
  fi
  if [[ $rc -ne 0 && $f -eq 0 ]]; then f=1; fi
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  if [[ $rc -ne 0 ]]; then
    echo "-- $name exited with status $rc"
    status=1
  fi
}

# count_failure: one failure outside any component (a server that did not start, ...).
count_failure() {
  total_failed=$((total_failed + 1))
  status=1
}

# finish LABEL WHAT: keeps OUT_DIR (saying "WHAT kept in ...") if anything failed or
# INTEROP_KEEP_TRACES=1, removes it otherwise, prints "LABEL: N passed, N failed" and
# exits with the status.
finish() {
  local label="$1" what="$2"
  if [[ $status -ne 0 || "${INTEROP_KEEP_TRACES:-0}" == 1 ]]; then
    echo
    echo "$what kept in $OUT_DIR"
  else
    rm -rf "$OUT_DIR"
  fi
  echo
  echo "$label: $total_passed passed, $total_failed failed"
  exit "$status"
}

# wait_for PID TEST...: waits (at most 10 s) until the command TEST succeeds, giving up
# early if process PID exits; returns TEST's last status.
wait_for() {
  local pid="$1" _; shift
  for _ in $(seq 1 200); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  "$@"
}

# Processes started in the background (servers), stopped by stop_all (the HTTP runners
# call it on EXIT).
PIDS=()

# stop PID: stops one process started here.
stop() {
  local pid="$1" kept=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do
    [[ "$p" == "$pid" ]] || kept+=("$p")
  done
  PIDS=("${kept[@]}")
}

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

# write_tokens: fresh random bearer tokens for two principals, alice and bob, in the
# private token file $OUT_DIR/tokens; exports MCP_TASKS_ALICE_TOKEN and MCP_TASKS_BOB_TOKEN.
random_token() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
write_tokens() {
  MCP_TASKS_ALICE_TOKEN="$(random_token)"
  MCP_TASKS_BOB_TOKEN="$(random_token)"
  export MCP_TASKS_ALICE_TOKEN MCP_TASKS_BOB_TOKEN
  (umask 077 && printf '# principal=token\nalice=%s\nbob=%s\n' \
    "$MCP_TASKS_ALICE_TOKEN" "$MCP_TASKS_BOB_TOKEN" > "$OUT_DIR/tokens")
}

# start_http_server NAME [ARGS...]: a fresh $SERVER ARGS (mcp_http, the server of http/, or
# INTEROP_HTTP_SERVER) on a free loopback port (MCP_TASKS_HTTP_ADDR=127.0.0.1:0), with the
# tokens of write_tokens (MCP_TASKS_TOKENS_FILE), MCP_TASKS_PAGE_SIZE=2, tracing one file per
# session into $OUT_DIR/NAME.traces (MCP_TASKS_TRACE_DIR), its stdout and stderr in
# $OUT_DIR/NAME.server.{out,err}; waits for its first stdout line,
# `listening on http://ADDR/mcp`, and sets SERVER_URL and SERVER_PID (also kept in PIDS).
start_http_server() {
  local name="$1"; shift
  local base="$OUT_DIR/$name"
  mkdir -p "$base.traces"
  : > "$base.server.out"
  env -u MCP_TASKS_TOKENS MCP_TASKS_TOKENS_FILE="$OUT_DIR/tokens" MCP_TASKS_HTTP_ADDR=127.0.0.1:0 \
    MCP_TASKS_PAGE_SIZE=2 MCP_TASKS_TRACE_DIR="$base.traces" RUST_BACKTRACE=1 \
    "$SERVER" "$@" > "$base.server.out" 2> "$base.server.err" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  if ! wait_for "$SERVER_PID" grep -q '^listening on ' "$base.server.out"; then
    echo "the server $name did not start; its stderr:" >&2
    cat "$base.server.err" >&2
    return 1
  fi
  SERVER_URL="$(sed -n 's/^listening on //p' "$base.server.out")"
  echo "server $name at $SERVER_URL"
}

# The steps the runners over a shared store (interop/http/redis.sh, postgres.sh) share.

# stdio_suite LABEL SERVER ARGS...: the whole Python stdio suite (../py_client.py:
# elicitation, status notifications) against SERVER ARGS (the environment chooses the
# rest), its trace validated against the official 2025-11-25 schema.
stdio_suite() {
  local label="$1"; shift
  run "$label-stdio-py-client" env MCP_TASKS_TRACE="$OUT_DIR/$label-stdio.trace.jsonl" \
    timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/py_client.py" "$@"
  run "$label-stdio-schema-validation" "$VENV/bin/python" "$INTEROP/validate_trace.py" \
    "$OUT_DIR/$label-stdio.trace.jsonl"
}

# validate_http_traces LABEL DIR...: validates the traces mcp_http wrote into each DIR
# (MCP_TASKS_TRACE_DIR): one file per 2025-11-25 session against the 2025-11-25 schema,
# ext-<principal>.jsonl (the 2026-07-28 requests) against the extension's.
validate_http_traces() {
  local label="$1" dir trace; shift
  local traces=() ext_traces=()
  for dir in "$@"; do
    for trace in "$dir"/*.jsonl; do
      [[ -e "$trace" ]] || continue
      case "$(basename "$trace")" in
        ext-*) ext_traces+=("$trace") ;;
        *) traces+=("$trace") ;;
      esac
    done
  done
  run "$label-schema-validation" "$VENV/bin/python" "$INTEROP/validate_trace.py" "${traces[@]}"
  if [[ ${#ext_traces[@]} -gt 0 && -f "$INTEROP/ext/validate_ext_trace.py" ]]; then
    run "$label-ext-schema-validation" "$VENV/bin/python" "$INTEROP/ext/validate_ext_trace.py" \
      "${ext_traces[@]}"
  fi
}

# two_instances LABEL START: two fresh instances, A and B (`START NAME` starts one as
# start_http_server does, on the shared store), and interop/http/py_shared_client.py
# through them: tasks created through A are awaited, listed and cancelled through B.
two_instances() {
  local label="$1" start="$2" url_a
  if "$start" A && url_a="$SERVER_URL" && "$start" B; then
    run "$label-two-instances" env MCP_TASKS_URL_A="$url_a" MCP_TASKS_URL_B="$SERVER_URL" \
      MCP_TASKS_TRACE_DIR_A="$OUT_DIR/A.traces" MCP_TASKS_TRACE_DIR_B="$OUT_DIR/B.traces" \
      timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$INTEROP/http/py_shared_client.py"
  else
    count_failure
  fi
}

# fail_on_panics: a server that logged a panic ($OUT_DIR/*.server.err) failed, whatever
# its clients saw.
fail_on_panics() {
  if grep -l 'panicked' "$OUT_DIR"/*.server.err >/dev/null 2>&1; then
    echo "-- a server panicked:"
    grep -H -A5 'panicked' "$OUT_DIR"/*.server.err || true
    count_failure
  fi
}
