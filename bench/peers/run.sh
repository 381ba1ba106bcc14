#!/usr/bin/env bash
# Side-by-side peer comparison of task stores: the same workload run against
#   - rust-floor and mcp-tasks  (cargo example peer_workload, if present)
#   - mcp-tasks-redis: RedisTaskStore on a private redis-server (feature `redis`), with
#     the in-memory registry at the same n, and the wake latency of both
#   - the official TypeScript SDK's InMemoryTaskStore (bench/peers/ts)
#   - the official Python SDK's InMemoryTaskStore     (bench/peers/py)
# then a Markdown report of the medians (bench/peers/report.py).
#
# Env: N (default 100000), RUNS (3), PY_N (5000: the Python store's create and
# get are O(N) per call), LIST_MAX_PAGES (100: cap on the TypeScript list walk, whose
# pages cost O(N) each; 0 = full walk), PY_LIST_MAX_PAGES (0: the same for
# Python, whose full walk at PY_N is affordable), PY_MEM_N (2000), REDIS_N (5000: every
# Redis operation is a round trip), WAKE_SAMPLES (200), REDIS_SERVER (redis-server),
# OUT (results file, default bench/peers/results.jsonl; the report goes next to it as
# .md), SKIP (space-separated subset of: rust redis ts py; the lines of a skipped ts or
# py are carried over from the previous results file, marked as such).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

N="${N:-100000}"
RUNS="${RUNS:-3}"
PY_N="${PY_N:-5000}"
LIST_MAX_PAGES="${LIST_MAX_PAGES:-100}"
PY_LIST_MAX_PAGES="${PY_LIST_MAX_PAGES:-0}"
PY_MEM_N="${PY_MEM_N:-2000}"
REDIS_N="${REDIS_N:-5000}"
WAKE_SAMPLES="${WAKE_SAMPLES:-200}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
OUT="${OUT:-$HERE/results.jsonl}"
SKIP="${SKIP:-}"
REPORT="${OUT%.jsonl}.md"

log() { printf '== %s\n' "$*" >&2; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }

# Keep only the JSON result lines of an implementation's stdout.
collect() { grep '^{' | tee -a "$OUT"; }

# Python for the venv: 3.11 if present, else python3 (the mcp package needs >= 3.10).
PY_BOOT="$(command -v python3.11 || command -v python3)"

: "${TMPDIR:=/tmp}"
PREV="$(mktemp "$TMPDIR/peers-prev.XXXXXX")"
REDIS_DIR=""
REDIS_PID=""
cleanup() {
  if [[ -n "$REDIS_PID" ]]; then
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
  fi
  if [[ -n "$REDIS_DIR" ]]; then rm -rf "$REDIS_DIR"; fi
  rm -f "$PREV"
}
trap cleanup EXIT

# The previous results, for the peers skipped this time.
if [[ -f "$OUT" ]]; then cp "$OUT" "$PREV"; fi
: >"$OUT"

HAVE_EXAMPLE=""
if [[ -f "$ROOT/suites/examples/peer_workload.rs" ]]; then
  HAVE_EXAMPLE=1
fi

# Does the Redis part run? It also measures the in-memory registry at REDIS_N.
RUN_REDIS=""
if skipped redis; then
  log "redis: skipped (SKIP)"
elif [[ -z "$HAVE_EXAMPLE" ]]; then
  log "redis: suites/examples/peer_workload.rs not found, skipping mcp-tasks-redis"
elif ! command -v "$REDIS_SERVER" >/dev/null; then
  log "redis: $REDIS_SERVER not found, skipping mcp-tasks-redis and the wake latency"
else
  RUN_REDIS=1
fi

# --- Rust (lead's example; optional) ---------------------------------------
if skipped rust; then
  log "rust: skipped (SKIP)"
elif [[ -n "$HAVE_EXAMPLE" ]]; then
  log "rust: cargo run --release -p mcp-tasks-suites --example peer_workload -- --n $N --runs $RUNS"
  (cd "$ROOT" && cargo run --quiet --release -p mcp-tasks-suites --example peer_workload -- --n "$N" --runs "$RUNS") | collect
  # The registry again at the Python store's n, so the Python ratio compares like with like
  # (the Redis part below does it at REDIS_N; no need twice).
  if [[ -n "$RUN_REDIS" && "$REDIS_N" == "$PY_N" ]]; then
    log "rust: n=$PY_N comes with the Redis part"
  else
    log "rust: the same at n=$PY_N (for the Python ratio)"
    (cd "$ROOT" && cargo run --quiet --release -p mcp-tasks-suites --example peer_workload -- --n "$PY_N" --runs "$RUNS" \
      --only mcp-tasks --suffix "@$PY_N") | collect
  fi
else
  log "rust: suites/examples/peer_workload.rs not found, skipping rust-floor and mcp-tasks"
fi

# --- Redis (RedisTaskStore, feature `redis`) ---------------------------------
if [[ -n "$RUN_REDIS" ]]; then
  REDIS_DIR="$(mktemp -d "$TMPDIR/peers-redis.XXXXXX")"
  SOCK="$REDIS_DIR/redis.sock"
  log "redis: $("$REDIS_SERVER" --version | cut -d' ' -f1-3) on $SOCK (no persistence)"
  "$REDIS_SERVER" --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --dir "$REDIS_DIR" \
    --save '' --appendonly no --logfile "$REDIS_DIR/redis.log" >&2 &
  REDIS_PID=$!
  for _ in $(seq 100); do
    [[ -S "$SOCK" ]] && break
    kill -0 "$REDIS_PID" 2>/dev/null || { log "redis: server exited (see above)"; exit 1; }
    sleep 0.05
  done
  [[ -S "$SOCK" ]] || { log "redis: no socket after 5 s"; exit 1; }
  URL="redis+unix://$SOCK"
  log "redis: cargo build --release -p mcp-tasks-suites --features redis --example peer_workload"
  (cd "$ROOT" && cargo build --quiet --release -p mcp-tasks-suites --features redis --example peer_workload)
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/peer_workload"
  # Both stores in one process, run after run, at the same n.
  log "redis: mcp-tasks and mcp-tasks-redis at n=$REDIS_N, runs=$RUNS"
  "$BIN" --redis "$URL" --n "$REDIS_N" --runs "$RUNS" --only mcp-tasks,mcp-tasks-redis \
    --suffix "@$REDIS_N" | collect
  log "redis: wake latency, $WAKE_SAMPLES samples each"
  "$BIN" --redis "$URL" --wake "$WAKE_SAMPLES" --only mcp-tasks,mcp-tasks-redis | collect
fi

# --- TypeScript SDK ----------------------------------------------------------
if skipped ts; then
  log "ts: skipped (SKIP)"
else
  command -v node >/dev/null || { log "ts: node not found"; exit 1; }
  log "ts: npm ci ($(node --version))"
  (cd "$HERE/ts" && npm ci --no-audit --no-fund --loglevel=error >&2)
  log "ts: n=$N runs=$RUNS list_max_pages=$LIST_MAX_PAGES"
  (cd "$HERE/ts" && node --expose-gc workload.mjs --n "$N" --runs "$RUNS" \
    --list-max-pages "$LIST_MAX_PAGES") | collect
fi

# --- Python SDK --------------------------------------------------------------
if skipped py; then
  log "py: skipped (SKIP)"
else
  VENV="$HERE/py/.venv"
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "py: creating venv with $("$PY_BOOT" --version)"
    "$PY_BOOT" -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "1.30.0")' 2>/dev/null; then
    log "py: pip install mcp==1.30.0 (transitive versions pinned by requirements.lock)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$HERE/py/requirements.txt" -c "$HERE/py/requirements.lock" >&2
  fi
  log "py: n=$PY_N runs=$RUNS list_max_pages=$PY_LIST_MAX_PAGES mem_n=$PY_MEM_N"
  "$VENV/bin/python" "$HERE/py/workload.py" --n "$PY_N" --runs "$RUNS" \
    --list-max-pages "$PY_LIST_MAX_PAGES" --mem-n "$PY_MEM_N" | collect
fi

# Skipped peers: their lines from the previous results file, marked "carried": true.
for peer in ts py; do
  if skipped "$peer" && [[ -s "$PREV" ]]; then
    log "$peer: carrying over its lines from the previous $OUT"
    "$PY_BOOT" "$HERE/report.py" --carry "$PREV" "$peer" >>"$OUT"
  fi
done

# Machine and tool versions, as one {"meta": ...} line.
"$PY_BOOT" "$HERE/report.py" --meta >>"$OUT"
log "results: $OUT"
"$PY_BOOT" "$HERE/report.py" "$OUT" | tee "$REPORT"
log "report: $REPORT"
