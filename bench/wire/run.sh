#!/usr/bin/env bash
# The on-the-wire peer comparison: builds the servers and the load generator (release),
# installs the TypeScript peer (npm ci), runs every cell against a fresh server process,
# appends one JSON line per cell to results.jsonl and writes results.md.
#
#   bash bench/wire/run.sh
#   DURATION=3 WARMUP=1 bash bench/wire/run.sh               # a quick look
#   IMPLS="mcp_http ts_sdk" CLIENTS=100 MS=0 bash bench/wire/run.sh
#
# See bench/wire/README.md for the workload and every knob. Loopback only; every process
# it starts is stopped on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CLIENTS=${CLIENTS:-"100 1000"}
MS=${MS:-"0 200"}
POLL_MS=${POLL_MS:-50}
RUNS=${RUNS:-1}
IMPLS=${IMPLS:-"mcp_http ts_sdk mcp_http_listen rmcp_http rmcp_own_tm"}
PRINCIPALS=${PRINCIPALS:-100}
WORKERS=${WORKERS:-2}
OUT=${OUT:-$HERE/results.jsonl}
REPORT=${REPORT:-${OUT%.jsonl}.md}
SKIP_BUILD=${SKIP_BUILD:-0}
KEEP=${KEEP:-0}

cd "$ROOT"
command -v node >/dev/null || { echo "run.sh: node (20+) is needed for the TypeScript peer" >&2; exit 1; }

TMP=$(mktemp -d)
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
cleanup() {
    stop_server
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Sockets: 1,000 clients (and as many listen streams) on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

TARGET=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN=$TARGET/release
if [ "$SKIP_BUILD" != 1 ]; then
    echo "== building (release)" >&2
    # Two builds, each its own feature set: the bench crate alone, and the two servers of
    # the repository together (one set of their shared dependencies, not three).
    nice -n 10 cargo build --release -p mcp-tasks-wire-bench
    nice -n 10 cargo build --release -p mcp-tasks-http --bin mcp_http -p mcp-tasks-rmcp --example rmcp_http
    echo "== npm ci (bench/wire/ts)" >&2
    (cd "$HERE/ts" && npm ci --no-audit --no-fund --loglevel=error)
fi
for exe in "$BIN/wire_load" "$BIN/rmcp_own_tm" "$BIN/mcp_http" "$BIN/examples/rmcp_http"; do
    [ -x "$exe" ] || { echo "run.sh: $exe is missing (SKIP_BUILD=1 without a build?)" >&2; exit 1; }
done

# Tokens for the servers that authenticate (mcp_http, rmcp_http): principal p<i>, token
# tok-<i>; client c uses tok-(c mod PRINCIPALS).
: > "$TMP/tokens"
RMCP_TOKENS=()
for i in $(seq 0 $((PRINCIPALS - 1))); do
    echo "p$i=tok-$i" >> "$TMP/tokens"
    RMCP_TOKENS+=(--token "tok-$i=p$i")
done

# The settings that keep the servers' protective limits out of the measurement: tasks
# per owner and in all (MCP_TASKS_MAX_TASKS_PER_OWNER / MCP_TASKS_MAX_TASKS, when the
# servers read them), connections, concurrent requests per principal (an open listen
# counts), open listens per principal.
export MCP_TASKS_MAX_TASKS_PER_OWNER=${MCP_TASKS_MAX_TASKS_PER_OWNER:-none}
export MCP_TASKS_MAX_TASKS=${MCP_TASKS_MAX_TASKS:-none}
MCP_HTTP_ENV=(
    MCP_TASKS_HTTP_ADDR=127.0.0.1:0
    MCP_TASKS_TOKENS_FILE="$TMP/tokens"
    MCP_TASKS_MAX_CONNECTIONS=${MCP_TASKS_MAX_CONNECTIONS:-20000}
    MCP_TASKS_PRINCIPAL_REQUESTS=${MCP_TASKS_PRINCIPAL_REQUESTS:-1000}
    MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL=${MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL:-1000}
    MCP_TASKS_SHUTDOWN_MS=${MCP_TASKS_SHUTDOWN_MS:-500}
)

# start_server IMPL LOG: starts a fresh server, sets SERVER_PID and URL.
start_server() {
    local impl=$1 log=$2
    case $impl in
        mcp_http|mcp_http_listen)
            env "${MCP_HTTP_ENV[@]}" "$BIN/mcp_http" > "$log.out" 2> "$log.err" &
            ;;
        rmcp_http)
            "$BIN/examples/rmcp_http" --listen 127.0.0.1:0 "${RMCP_TOKENS[@]}" > "$log.out" 2> "$log.err" &
            ;;
        rmcp_own_tm)
            "$BIN/rmcp_own_tm" --listen 127.0.0.1:0 > "$log.out" 2> "$log.err" &
            ;;
        ts_sdk)
            (cd "$HERE/ts" && exec node server.mjs --listen 127.0.0.1:0) > "$log.out" 2> "$log.err" &
            ;;
        *) echo "run.sh: unknown impl $impl" >&2; return 1 ;;
    esac
    SERVER_PID=$!
    URL=""
    for _ in $(seq 300); do
        URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$log.out" | head -1)
        [ -n "$URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$URL" ]; then
        echo "run.sh: $impl did not start:" >&2
        cat "$log.err" >&2
        return 1
    fi
}

# The wire, mode, label and authentication of each implementation.
wire_of() { case $1 in ts_sdk) echo 2025-11-25 ;; mcp_http) echo "2025-11-25 2026-07-28" ;; *) echo 2026-07-28 ;; esac; }
label_of() {
    case $1 in
        mcp_http) echo mcp_http ;;
        mcp_http_listen) echo "mcp_http (listen)" ;;
        rmcp_http) echo "rmcp_http (mcp-tasks-rmcp)" ;;
        rmcp_own_tm) echo "rmcp 3.11 own TaskManager" ;;
        ts_sdk) echo "TS SDK 1.32.2" ;;
    esac
}

if [ "$KEEP" != 1 ]; then
    : > "$OUT"
fi
COMMAND="DURATION=$DURATION WARMUP=$WARMUP CLIENTS=\"$CLIENTS\" MS=\"$MS\" POLL_MS=$POLL_MS RUNS=$RUNS PRINCIPALS=$PRINCIPALS bash bench/wire/run.sh"
python3 "$HERE/report.py" --meta "$COMMAND" >> "$OUT"

FAILED=0
for run in $(seq "$RUNS"); do
    for n in $CLIENTS; do
        for ms in $MS; do
            for impl in $IMPLS; do
                for wire in $(wire_of "$impl"); do
                    mode=poll
                    [ "$impl" = mcp_http_listen ] && mode=listen
                    label=$(label_of "$impl")
                    auth=()
                    case $impl in mcp_http|mcp_http_listen|rmcp_http) auth=(--token-prefix tok- --principals "$PRINCIPALS") ;; esac
                    log="$TMP/$impl-$wire-$n-$ms-$run"
                    echo "== run $run: $label, $wire, $mode, $n clients, ms=$ms" >&2
                    start_server "$impl" "$log" || { FAILED=1; continue; }
                    rc=0
                    line=$("$BIN/wire_load" --url "$URL" --wire "$wire" --mode "$mode" \
                        --clients "$n" --ms "$ms" --duration "$DURATION" --warmup "$WARMUP" \
                        --poll-ms "$POLL_MS" --pid "$SERVER_PID" --label "$label" \
                        --workers "$WORKERS" "${auth[@]}" 2> "$log.load") || rc=$?
                    stop_server
                    if [ -n "$line" ]; then
                        echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["run"]=int(sys.argv[1]); print(json.dumps(d))' "$run" >> "$OUT"
                        echo "$line" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("   %(tasks_per_s)s tasks/s, tasks/get p50 %(get_p50_ms)s ms p99 %(get_p99_ms)s ms, CPU %(cpu_s_per_1k_tasks)s s/1k tasks, peak RSS %(peak_rss_mib)s MiB, %(threads_end)s threads, %(errors)s errors" % d)' >&2
                    fi
                    if [ "$rc" != 0 ]; then
                        FAILED=1
                        echo "!! FAILED: $label $wire $mode n=$n ms=$ms (exit $rc):" >&2
                        tail -5 "$log.load" >&2
                        tail -5 "$log.err" >&2
                    fi
                done
            done
        done
    done
done

python3 "$HERE/report.py" "$OUT" > "$REPORT"
echo "== wrote $OUT and $REPORT" >&2
if [ "$FAILED" != 0 ]; then
    echo "run.sh: some cells FAILED (errors, or a server that did not start): see above and the report" >&2
    exit 1
fi
