#!/usr/bin/env bash
# The interop checks of mcp-tasks-rmcp (rmcp 3.11) against its examples, as CI runs them
# (its fmt, clippy and tests are the workspace's: .ci/run):
#   1. the official Rust SDK's client (interop/v2026/rmcp-client, rmcp 3.11 in the
#      discover lifecycle) against the stdio example;
#   2. the official extension client (@modelcontextprotocol/ext-tasks 0.2.2) against the
#      stdio example, its trace validated against the schemas (the two 2025-11-25
#      scenarios are skipped: an rmcp 3.x server serves no 2025-11-25 tasks);
#   3. the official conformance suite, every server scenario on both wires, against the
#      HTTP example (interop/conformance/run.sh, the runner mcp_http's CI step uses too).
# The last line is "N passed, N failed". Builds with the shared build of interop/lib.sh;
# honours CARGO_TARGET_DIR and INTEROP_SKIP_INSTALL=1.
set -euo pipefail

RMCP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../interop/lib.sh
source "$RMCP/../interop/lib.sh"
CLIENT="$TARGET/debug/mcp-tasks-rmcp-client"
EXAMPLES="$TARGET/debug/examples"

build_workspace
need_binary "$CLIENT" "$EXAMPLES/rmcp_stdio" "$EXAMPLES/rmcp_http"

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

log "rmcp: rmcp 3.11's client (discover lifecycle) against rmcp_stdio"
"$CLIENT" "$EXAMPLES/rmcp_stdio" 2>&1 | tee "$OUT/client" || true
tally "$OUT/client"

log "rmcp: the official extension client against rmcp_stdio"
EXT_ONLY_2026=1 INTEROP_SERVER="$EXAMPLES/rmcp_stdio" \
  bash "$REPO/interop/ext/run.sh" 2>&1 | tee "$OUT/ext" || true
tally "$OUT/ext"

log "rmcp: the conformance suite (every server scenario, both wires) against rmcp_http"
bash "$REPO/interop/conformance/run.sh" "$EXAMPLES/rmcp_http" 2>&1 | tee "$OUT/conformance" || true
tally "$OUT/conformance"

echo
echo "rmcp: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
