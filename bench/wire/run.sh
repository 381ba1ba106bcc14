#!/usr/bin/env bash
# The on-the-wire peer comparison: builds the servers and the load generator (release),
# installs the TypeScript peer (npm ci), runs every cell against a fresh server process,
# appends one JSON line per cell to results.jsonl and writes results.md.
#
#   bash bench/wire/run.sh
#   DURATION=3 WARMUP=1 bash bench/wire/run.sh               # a quick look
#   IMPLS="mcp_http ts_sdk" CLIENTS=100 MS=0 bash bench/wire/run.sh
#   CELLS=c10k IMPLS="mcp_http reference" bash bench/wire/run.sh   # 10,000 clients
#   BASELINE_REV=main IMPLS="mcp_http reference" bash bench/wire/run.sh  # + mcp_http@baseline
#
# See bench/wire/README.md for the workload and every knob. Loopback only; every process
# it starts is stopped on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# The cell set: `normal` (100 and 1,000 clients, 0 and 200 ms tasks, polling every 50 ms)
# or `c10k` (10,000 clients, one principal each, 1 s tasks, polling every 500 ms); each
# knob below still wins when set.
CELLS=${CELLS:-normal}
case $CELLS in
    normal)
        DEF_CLIENTS="100 1000" DEF_MS="0 200" DEF_POLL=50 DEF_PRINCIPALS=100 DEF_WARMUP=2
        DEF_OUT=$HERE/results.jsonl
        ;;
    c10k)
        # Warm-up: the first tasks end after ~1.5 s (a 1 s task, polled every 500 ms).
        DEF_CLIENTS=10000 DEF_MS=1000 DEF_POLL=500 DEF_PRINCIPALS=10000 DEF_WARMUP=4
        DEF_OUT=$HERE/results-c10k.jsonl
        ;;
    *) echo "run.sh: CELLS=$CELLS: normal or c10k" >&2; exit 2 ;;
esac
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-$DEF_WARMUP}
CLIENTS=${CLIENTS:-$DEF_CLIENTS}
MS=${MS:-$DEF_MS}
POLL_MS=${POLL_MS:-$DEF_POLL}
RUNS=${RUNS:-1}
IMPLS=${IMPLS:-"mcp_http reference ts_sdk mcp_http_listen rmcp_http rmcp_own_tm"}
PRINCIPALS=${PRINCIPALS:-$DEF_PRINCIPALS}
WORKERS=${WORKERS:-2}
OUT=${OUT:-$DEF_OUT}
# A second revision of mcp_http, built in a temporary git worktree and run beside today's
# as `mcp_http@baseline` in every cell (empty: none).
BASELINE_REV=${BASELINE_REV:-}
REPORT=${REPORT:-${OUT%.jsonl}.md}
SKIP_BUILD=${SKIP_BUILD:-0}
KEEP=${KEEP:-0}
# Seconds of an unrecorded cell before the first one (0: none).
WARM_CELL=${WARM_CELL:-5}

cd "$ROOT"
has_impl() { case " $IMPLS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ -n "$BASELINE_REV" ] && ! has_impl mcp_http@baseline; then
    # Beside today's mcp_http when it runs, else last.
    if has_impl mcp_http; then
        IMPLS=$(echo " $IMPLS " | sed 's/ mcp_http / mcp_http mcp_http@baseline /; s/^ //; s/ $//')
    else
        IMPLS="$IMPLS mcp_http@baseline"
    fi
fi
if has_impl mcp_http@baseline && [ -z "$BASELINE_REV" ]; then
    echo "run.sh: mcp_http@baseline needs BASELINE_REV=<commit>" >&2
    exit 2
fi
if has_impl ts_sdk; then
    command -v node >/dev/null || { echo "run.sh: node (20+) is needed for the TypeScript peer" >&2; exit 1; }
fi

TMP=$(mktemp -d)
SERVER_PID=""
BASE_WT=""
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
remove_baseline_worktree() {
    if [ -n "$BASE_WT" ] && [ -d "$BASE_WT" ]; then
        git -C "$ROOT" worktree remove --force "$BASE_WT" 2>/dev/null || rm -rf "$BASE_WT"
        git -C "$ROOT" worktree prune 2>/dev/null || true
    fi
    BASE_WT=""
}
cleanup() {
    stop_server
    remove_baseline_worktree
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Sockets: every client (and as many listen streams) on each side; the server and the load
# generator each raise their own soft limit to this hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
MAX_CLIENTS=$(printf '%s\n' $CLIENTS | sort -n | tail -1)
NOFILE=$(ulimit -Hn)
if [ "$NOFILE" != unlimited ] && [ "$NOFILE" -lt $((MAX_CLIENTS + 256)) ]; then
    echo "run.sh: $MAX_CLIENTS clients need more open files than the hard limit $NOFILE (raise it: ulimit -Hn, or LimitNOFILE)" >&2
    exit 1
fi

TARGET=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN=$TARGET/release
if [ "$SKIP_BUILD" != 1 ]; then
    echo "== building (release)" >&2
    # Two builds, each its own feature set: the bench crate alone, and the two servers of
    # the repository together (one set of their shared dependencies, not three).
    nice -n 10 cargo build --release -p mcp-tasks-wire-bench
    nice -n 10 cargo build --release -p mcp-tasks-http --bin mcp_http -p mcp-tasks-rmcp --example rmcp_http
    if has_impl ts_sdk; then
        echo "== npm ci (bench/wire/ts)" >&2
        (cd "$HERE/ts" && npm ci --no-audit --no-fund --loglevel=error)
    fi
fi

# The baseline: BASELINE_REV checked out in a worktree of its own (removed once built),
# built in release into a target directory of its own that is kept between runs (its
# dependencies are not built again).
BASE_TARGET=$TARGET/baseline
BASE_BIN=$BASE_TARGET/release/mcp_http
BASE_COMMIT=""
if [ -n "$BASELINE_REV" ]; then
    BASE_COMMIT=$(git -C "$ROOT" rev-parse --verify --quiet "$BASELINE_REV^{commit}") \
        || { echo "run.sh: BASELINE_REV=$BASELINE_REV is not a commit" >&2; exit 2; }
    if [ "$SKIP_BUILD" != 1 ]; then
        echo "== building mcp_http@baseline ($BASELINE_REV = ${BASE_COMMIT:0:10}, release)" >&2
        BASE_WT=$BASE_TARGET/src
        git -C "$ROOT" worktree remove --force "$BASE_WT" 2>/dev/null || rm -rf "$BASE_WT"
        git -C "$ROOT" worktree prune
        mkdir -p "$BASE_TARGET"
        git -C "$ROOT" worktree add --detach --quiet "$BASE_WT" "$BASE_COMMIT"
        (cd "$BASE_WT" && CARGO_TARGET_DIR="$BASE_TARGET" nice -n 10 \
            cargo build --release -p mcp-tasks-http --bin mcp_http)
        echo "$BASE_COMMIT" > "$BASE_TARGET/mcp_http.rev"
        remove_baseline_worktree
    fi
    if [ "$(cat "$BASE_TARGET/mcp_http.rev" 2>/dev/null)" != "$BASE_COMMIT" ]; then
        echo "run.sh: $BASE_BIN is not built from $BASELINE_REV (SKIP_BUILD=1 without a build?)" >&2
        exit 1
    fi
fi

NEEDED=("$BIN/wire_load")
for impl in $IMPLS; do
    case $impl in
        mcp_http|mcp_http_listen) NEEDED+=("$BIN/mcp_http") ;;
        mcp_http@baseline) NEEDED+=("$BASE_BIN") ;;
        reference) NEEDED+=("$BIN/reference_server") ;;
        rmcp_http) NEEDED+=("$BIN/examples/rmcp_http") ;;
        rmcp_own_tm) NEEDED+=("$BIN/rmcp_own_tm") ;;
    esac
done
for exe in "${NEEDED[@]}"; do
    [ -x "$exe" ] || { echo "run.sh: $exe is missing (SKIP_BUILD=1 without a build?)" >&2; exit 1; }
done

# Tokens for the servers that authenticate (mcp_http, the reference, rmcp_http): principal
# p<i>, token tok-<i>; client c uses tok-(c mod PRINCIPALS).
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
        mcp_http@baseline)
            env "${MCP_HTTP_ENV[@]}" "$BASE_BIN" > "$log.out" 2> "$log.err" &
            ;;
        reference)
            "$BIN/reference_server" --listen 127.0.0.1:0 --tokens "$TMP/tokens" > "$log.out" 2> "$log.err" &
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
        URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$log.out" 2>/dev/null | head -1)
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
wire_of() {
    case $1 in
        ts_sdk) echo 2025-11-25 ;;
        mcp_http|mcp_http@baseline|reference) echo "2025-11-25 2026-07-28" ;;
        *) echo 2026-07-28 ;;
    esac
}
label_of() {
    case $1 in
        mcp_http) echo mcp_http ;;
        mcp_http@baseline) echo mcp_http@baseline ;;
        reference) echo reference ;;
        mcp_http_listen) echo "mcp_http (listen)" ;;
        rmcp_http) echo "rmcp_http (mcp-tasks-rmcp)" ;;
        rmcp_own_tm) echo "rmcp 3.11 own TaskManager" ;;
        ts_sdk) echo "TS SDK 1.32.2" ;;
    esac
}

# set_auth IMPL: the load generator's bearer-token arguments for IMPL, in `auth`.
set_auth() {
    auth=()
    case $1 in
        mcp_http|mcp_http@baseline|mcp_http_listen|reference|rmcp_http)
            auth=(--token-prefix tok- --principals "$PRINCIPALS")
            ;;
    esac
}

if [ "$KEEP" != 1 ]; then
    : > "$OUT"
fi
COMMAND="CELLS=$CELLS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=\"$CLIENTS\" MS=\"$MS\" POLL_MS=$POLL_MS RUNS=$RUNS PRINCIPALS=$PRINCIPALS IMPLS=\"$IMPLS\"${BASELINE_REV:+ BASELINE_REV=$BASELINE_REV} bash bench/wire/run.sh"
python3 "$HERE/report.py" --meta "$COMMAND" --baseline "$BASE_COMMIT" >> "$OUT"

# One cell that is not recorded first: the first server measured after a build (or on a
# machine that was idle) came out slower than the same binary later in the run.
if [ "$WARM_CELL" != 0 ]; then
    first=${IMPLS%% *}
    first_wire=$(wire_of "$first")
    echo "== warm-up: $(label_of "$first"), ${WARM_CELL} s, not recorded" >&2
    if start_server "$first" "$TMP/warm"; then
        set_auth "$first"
        "$BIN/wire_load" --url "$URL" --wire "${first_wire%% *}" \
            --clients "${CLIENTS%% *}" --ms "${MS%% *}" --duration "$WARM_CELL" --warmup 1 \
            --poll-ms "$POLL_MS" --pid "$SERVER_PID" --label warm-up --workers "$WORKERS" \
            "${auth[@]}" > /dev/null 2> "$TMP/warm.load" \
            || { echo "run.sh: the warm-up cell failed (it is not recorded):" >&2; tail -3 "$TMP/warm.load" >&2; }
        stop_server
    fi
fi

FAILED=0
for run in $(seq "$RUNS"); do
    # Every other run takes the servers in the reverse order, so that none is always the
    # one measured first in a cell, or always right after a given other.
    order=$IMPLS
    if [ $((run % 2)) = 0 ]; then
        order=$(printf '%s\n' $IMPLS | tac | tr '\n' ' ')
    fi
    for n in $CLIENTS; do
        for ms in $MS; do
            for impl in $order; do
                for wire in $(wire_of "$impl"); do
                    mode=poll
                    [ "$impl" = mcp_http_listen ] && mode=listen
                    label=$(label_of "$impl")
                    set_auth "$impl"
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
                        echo "$line" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("   %(tasks_per_s)s tasks/s, tasks/get p50 %(get_p50_ms)s ms p99 %(get_p99_ms)s ms, task p50 %(task_p50_ms)s ms p99 %(task_p99_ms)s ms, CPU %(cpu_s_per_1k_tasks)s s/1k tasks (server %(server_cpu_s)s s, load generator %(load_cpu_s)s s), peak RSS %(peak_rss_mib)s MiB, %(threads_end)s threads, %(errors)s errors, others %(others_pct)s%%" % d)' >&2
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
