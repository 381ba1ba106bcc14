#!/usr/bin/env bash
# HTTP interop over a shared PostgreSQL store: the servers of the shared build (every
# feature: `postgres` included) on a throwaway PostgreSQL cluster (initdb in a temporary
# directory, a free loopback port, trust authentication, nothing kept), each part in a
# schema of its own (MCP_TASKS_POSTGRES_SCHEMA):
#   0. the stdio_server on PostgreSQL: the whole Python stdio suite (../py_client.py:
#      elicitation, status notifications), its trace validated against the schema;
#   1. two mcp_http instances on two ports sharing one schema, one pair of tokens: the
#      whole TypeScript HTTP suite (ts_client.mjs, alice and bob) through one, the whole
#      Python HTTP suite (py_client.py, alice and bob) through the other, each among the
#      tasks the other left in the store; their traces validated against the official
#      schemas;
#   2. two fresh instances (A, B) sharing another schema: py_shared_client.py creates
#      tasks through A and gets, awaits (tasks/result through B blocks until A's handler
#      finishes), lists and cancels them through B, and checks that another principal on
#      B sees none of them.
# See interop/http/README.md. Needs PostgreSQL's server binaries (Debian: apt-get install
# postgresql); without them the script fails. As root, initdb and postgres run as the
# `postgres` user (Debian's package creates it).
#
# Environment knobs:
#   INTEROP_SKIP_INSTALL=1     reuse interop/node_modules and interop/.venv as they are
#   INTEROP_KEEP_TRACES=1      keep the work directory even when everything passed
#   PYTHON=python3.11          interpreter used to create interop/.venv
#   INTEROP_HTTP_SERVER=/path  drive this HTTP server binary (built with --features postgres)
#   INTEROP_SERVER=/path       drive this stdio server binary (built with --features postgres)
#   PG_BIN=/path               the directory of initdb and postgres (default: pg_config
#                              --bindir, else the highest /usr/lib/postgresql/*/bin, else
#                              the directory of initdb on PATH)
set -euo pipefail

# shellcheck source=interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$INTEROP/http"
SERVER="${INTEROP_HTTP_SERVER:-$TARGET/debug/mcp_http}"
STDIO_SERVER="${INTEROP_SERVER:-$TARGET/debug/stdio_server}"

# give_up: the closing line for a run that could not start.
give_up() {
  echo
  echo "interop-postgres: 0 passed, 1 failed"
  exit 1
}

# pg_bin: the directory holding initdb and postgres, as test-support/src/postgres.rs finds
# it; nothing if there is none.
has_server() { [[ -x "$1/initdb" && -x "$1/postgres" ]]; }
pg_bin() {
  if [[ -n "${PG_BIN:-}" ]]; then
    has_server "$PG_BIN" && echo "$PG_BIN"
    return 0
  fi
  local dir
  dir="$(pg_config --bindir 2>/dev/null || true)"
  if [[ -n "$dir" ]] && has_server "$dir"; then echo "$dir"; return 0; fi
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [[ -n "$dir" ]] && has_server "$dir"; then echo "$dir"; return 0; fi
  dir="$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")"
  if has_server "$dir"; then echo "$dir"; fi
}

PG="$(pg_bin)"
if [[ -z "$PG" ]]; then
  echo "interop-postgres: PostgreSQL's initdb and postgres not found; install them (Debian: apt-get install postgresql)" >&2
  give_up
fi
# As root, the cluster's programs run as the postgres user (they refuse to run as root).
AS_PG=()
if [[ "$(id -u)" == 0 ]]; then
  id postgres >/dev/null 2>&1 || { echo "interop-postgres: running as root and no postgres user" >&2; give_up; }
  AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

if [[ -z "${INTEROP_SERVER:-}" || -z "${INTEROP_HTTP_SERVER:-}" ]]; then
  build_workspace
fi
need_binary "$SERVER" "$STDIO_SERVER"
install_sdks ts py

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-interop-postgres.XXXXXX")"
chmod 700 "$WORK"
OUT_DIR="$WORK"
# The cluster's own directory, which the postgres user must reach (a short path: the unix
# socket lives there too).
PGDIR="$(mktemp -d "${TMPDIR:-/tmp}/mcpt-pg.XXXXXX")"
PG_PID=""

# stop_postgres: a fast shutdown (SIGINT), then its directory goes.
stop_postgres() {
  if [[ -n "$PG_PID" ]]; then
    kill -INT "$PG_PID" 2>/dev/null || true
    wait "$PG_PID" 2>/dev/null || true
    PG_PID=""
  fi
  rm -rf "$PGDIR"
}
# The servers first (their sessions end), then PostgreSQL.
trap 'stop_all; stop_postgres' EXIT
trap 'exit 130' INT TERM

if [[ ${#AS_PG[@]} -gt 0 ]]; then
  chown postgres: "$PGDIR"
fi
log "initdb in $PGDIR/data ($PG)"
if ! (cd "$PGDIR" && "${AS_PG[@]}" "$PG/initdb" -D "$PGDIR/data" -U postgres --auth=trust \
  -E UTF8 --no-locale --no-sync > "$WORK/initdb.log" 2>&1); then
  echo "initdb failed; its output:" >&2
  cat "$WORK/initdb.log" >&2
  give_up
fi

# start_postgres PORT: the postmaster on 127.0.0.1:PORT and a socket in $PGDIR; nothing
# needs to survive a crash here (fsync off). Returns non-zero if it is not ready in 10 s.
start_postgres() {
  local port="$1"
  (cd "$PGDIR" && exec "${AS_PG[@]}" "$PG/postgres" -D "$PGDIR/data" -p "$port" -k "$PGDIR" \
    -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 \
    -c shared_buffers=32MB >> "$WORK/postgres.log" 2>&1) &
  PG_PID=$!
  wait_for "$PG_PID" "$PG/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres
}
free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
started=""
for _ in 1 2 3; do
  PORT="$(free_port)"
  log "starting postgres on 127.0.0.1:$PORT"
  if start_postgres "$PORT"; then started=1; break; fi
  # Its port was taken meanwhile, or it failed: try another (the log says which).
  kill -INT "$PG_PID" 2>/dev/null || true
  wait "$PG_PID" 2>/dev/null || true
  PG_PID=""
done
if [[ -z "$started" ]]; then
  echo "postgres did not start; its log:" >&2
  cat "$WORK/postgres.log" >&2 || true
  give_up
fi
"$PG/postgres" --version
export MCP_TASKS_POSTGRES_URL="postgres://postgres@127.0.0.1:$PORT/postgres"

# Fresh tokens for two principals, in a private token file all instances read.
write_tokens
export MCP_TASKS_PAGE_SIZE=2

# 0. The whole Python stdio suite (elicitation, status notifications) on PostgreSQL.
MCP_TASKS_POSTGRES_SCHEMA=stdio stdio_suite postgres "$STDIO_SERVER" --postgres "$MCP_TASKS_POSTGRES_URL"

# start_server NAME SCHEMA: a fresh instance on SCHEMA (start_http_server: a free loopback
# port, traces in $WORK/NAME.traces); sets SERVER_URL and SERVER_PID.
start_server() {
  MCP_TASKS_POSTGRES_SCHEMA="$2" start_http_server "$1" --postgres "$MCP_TASKS_POSTGRES_URL"
}

# 1. Both official clients' whole HTTP suites, alice and bob each, through two instances on
#    one schema.
if start_server ts suites && URL_TS="$SERVER_URL" && start_server py suites; then
  URL_PY="$SERVER_URL"
  run postgres-http-ts-client env MCP_TASKS_URL="$URL_TS" \
    timeout "$CLIENT_TIMEOUT" node "$HERE/ts_client.mjs"
  run postgres-http-py-client env MCP_TASKS_URL="$URL_PY" \
    timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" "$HERE/py_client.py"
else
  count_failure
fi
stop_all
validate_http_traces postgres-http "$WORK/ts.traces" "$WORK/py.traces"

# 2. Tasks created through one instance, awaited, listed and cancelled through the other,
#    on another schema.
start_shared() { start_server "$1" shared; }
two_instances postgres start_shared

fail_on_panics
stop_all
stop_postgres

finish interop-postgres "traces, server and postgres logs and outputs"
