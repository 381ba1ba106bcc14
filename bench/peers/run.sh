#!/usr/bin/env bash
# Side-by-side peer comparison of task stores: the same workload run against
#   - rust-floor and mcp-tasks  (cargo example peer_workload, if present)
#   - the official TypeScript SDK's InMemoryTaskStore (bench/peers/ts)
#   - the official Python SDK's InMemoryTaskStore     (bench/peers/py)
# then a Markdown report of the medians (bench/peers/report.py).
#
# Env: N (default 100000), RUNS (3), PY_N (5000: the Python store's create and
# get are O(N) per call), LIST_MAX_PAGES (100: cap on the TypeScript list walk, whose
# pages cost O(N) each; 0 = full walk), PY_LIST_MAX_PAGES (0: the same for
# Python, whose full walk at PY_N is affordable), PY_MEM_N (2000), OUT (results file,
# default bench/peers/results.jsonl; the report goes next to it as .md),
# SKIP (space-separated subset of: rust ts py).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

N="${N:-100000}"
RUNS="${RUNS:-3}"
PY_N="${PY_N:-5000}"
LIST_MAX_PAGES="${LIST_MAX_PAGES:-100}"
PY_LIST_MAX_PAGES="${PY_LIST_MAX_PAGES:-0}"
PY_MEM_N="${PY_MEM_N:-2000}"
OUT="${OUT:-$HERE/results.jsonl}"
SKIP="${SKIP:-}"
REPORT="${OUT%.jsonl}.md"

log() { printf '== %s\n' "$*" >&2; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }

# Keep only the JSON result lines of an implementation's stdout.
collect() { grep '^{' | tee -a "$OUT"; }

# Python for the venv: 3.11 if present, else python3 (the mcp package needs >= 3.10).
PY_BOOT="$(command -v python3.11 || command -v python3)"

: >"$OUT"

# --- Rust (lead's example; optional) ---------------------------------------
if skipped rust; then
  log "rust: skipped (SKIP)"
elif [[ -f "$ROOT/examples/peer_workload.rs" || -f "$ROOT/examples/peer_workload/main.rs" ]]; then
  log "rust: cargo run --release --example peer_workload -- --n $N --runs $RUNS"
  (cd "$ROOT" && cargo run --quiet --release --example peer_workload -- --n "$N" --runs "$RUNS") | collect
  # The registry again at the Python store's n, so the Python ratio compares like with like.
  log "rust: the same at n=$PY_N (for the Python ratio)"
  (cd "$ROOT" && cargo run --quiet --release --example peer_workload -- --n "$PY_N" --runs "$RUNS" \
    --only mcp-tasks --suffix "@$PY_N") | collect
else
  log "rust: examples/peer_workload.rs not found, skipping rust-floor and mcp-tasks"
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

# Machine and tool versions, as one {"meta": ...} line.
"$PY_BOOT" "$HERE/report.py" --meta >>"$OUT"
log "results: $OUT"
"$PY_BOOT" "$HERE/report.py" "$OUT" | tee "$REPORT"
log "report: $REPORT"
