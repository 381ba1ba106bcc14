#!/usr/bin/env bash
# The client snippets of docs/clients.md ("The example server's tools"): each must be,
# line for line, the file beside this script (less the file's opening comment; blocks.py),
# and each file must run against the stdio server and print what the page says. Prints
# PASS/FAIL per check and "N passed, N failed".
# Usage: check.sh SERVER PYTHON (interop/run.sh passes them; node resolves the SDK from interop/node_modules).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SERVER="$1" PYTHON="$2"
passed=0 failed=0
verdict() { if [[ $2 -eq 0 ]]; then echo "PASS $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi; }

# 1. The page's blocks == the files.
(cd "$REPO" && "$PYTHON" "$HERE/blocks.py" docs/clients.md interop/readme/client.mjs interop/readme/client.py)
verdict "docs/clients.md shows interop/readme/client.{mjs,py} as they are" $?

# 2. They run and print what the page says.
expect() {
  local out="$1"
  grep -qx 'sleep: slept 500 ms' <<<"$out" && grep -qx 'confirm: the user answered: yes' <<<"$out"
}
out="$(cd "$REPO" && STDIO_SERVER="$SERVER" timeout 120 node "$HERE/client.mjs" 2>&1)"; rc=$?
echo "$out"
[[ $rc -eq 0 ]] && expect "$out"; verdict "TypeScript client of docs/clients.md: sleep and confirm" $?
out="$(cd "$REPO" && STDIO_SERVER="$SERVER" timeout 120 "$PYTHON" "$HERE/client.py" 2>&1)"; rc=$?
echo "$out"
[[ $rc -eq 0 ]] && expect "$out"; verdict "Python client of docs/clients.md: sleep and confirm" $?

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
