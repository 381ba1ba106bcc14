#!/usr/bin/env bash
# Every check of mcp-tasks-rmcp (rmcp 3.11), as CI runs them:
#   1. fmt and clippy, without and with the `redis` feature;
#   2. its tests (rmcp's own client over stdio and Streamable HTTP, owners, fixtures), and
#      with `redis` two HTTP instances on one throwaway redis-server;
#   3. the official Rust SDK's client (interop/v2026/rmcp-client, rmcp 3.11 in the
#      discover lifecycle) against the stdio example;
#   4. the official extension client (@modelcontextprotocol/ext-tasks 0.2.2) against the
#      stdio example, its trace validated against the schemas (the two 2025-11-25
#      scenarios are skipped: an rmcp 3.x server serves no 2025-11-25 tasks);
#   5. the official conformance suite's tasks-* scenarios against the HTTP example.
# The last line is "N passed, N failed" over parts 3-5. Honours CARGO_TARGET_DIR (one
# target directory for this workspace then) and INTEROP_SKIP_INSTALL=1.
set -euo pipefail

RMCP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$RMCP/.." && pwd)"
MANIFEST="$RMCP/Cargo.toml"
TARGET="${CARGO_TARGET_DIR:-$RMCP/target}"
CLIENT_MANIFEST="$REPO/interop/v2026/rmcp-client/Cargo.toml"
CLIENT="${CARGO_TARGET_DIR:-$REPO/interop/v2026/rmcp-client/target}/debug/mcp-tasks-rmcp-client"

log() { printf '\n== rmcp: %s\n' "$*"; }

log "fmt and clippy"
cargo fmt --manifest-path "$MANIFEST" -- --check
cargo clippy --manifest-path "$MANIFEST" --all-targets -- -D warnings
cargo clippy --manifest-path "$MANIFEST" --all-targets --features redis -- -D warnings

log "tests (the examples are built with them)"
cargo test --manifest-path "$MANIFEST"
log "tests with the redis feature (needs redis-server)"
cargo test --manifest-path "$MANIFEST" --features redis
# The redis run rebuilt the examples with the feature; the parts below use the plain ones.
cargo build --manifest-path "$MANIFEST" --examples

passed=0
failed=0
# tally OUT: adds the last "N passed, N failed" line of a part's output.
tally() {
  local line
  line="$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1 || true)"
  if [[ -z "$line" ]]; then failed=$((failed + 1)); return; fi
  passed=$((passed + ${line%% passed*}))
  local f="${line#*, }"
  failed=$((failed + ${f%% failed*}))
}
OUT="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-rmcp.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

log "rmcp 3.11's client (discover lifecycle) against rmcp_stdio"
cargo build --manifest-path "$CLIENT_MANIFEST"
"$CLIENT" "$TARGET/debug/examples/rmcp_stdio" 2>&1 | tee "$OUT/client" || true
tally "$OUT/client"

log "the official extension client against rmcp_stdio"
EXT_ONLY_2026=1 INTEROP_SERVER="$TARGET/debug/examples/rmcp_stdio" \
  bash "$REPO/interop/ext/run.sh" 2>&1 | tee "$OUT/ext" || true
tally "$OUT/ext"

log "the conformance suite's tasks-* scenarios against rmcp_http"
CONFORMANCE_SET=tasks CONFORMANCE_SERVER="$TARGET/debug/examples/rmcp_http" \
  bash "$REPO/interop/conformance/run.sh" 2>&1 | tee "$OUT/conformance" || true
tally "$OUT/conformance"

echo
echo "rmcp: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
