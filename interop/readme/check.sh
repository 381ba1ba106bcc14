#!/usr/bin/env bash
# The README's client snippets: each must be, line for line, the file beside this script
# (less the file's opening comment), and each file must run against the stdio server and
# print what the README says. Prints PASS/FAIL per check and "N passed, N failed".
# Usage: check.sh SERVER PYTHON (interop/run.sh passes them; node resolves the SDK from interop/node_modules).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SERVER="$1" PYTHON="$2"
passed=0 failed=0
verdict() { if [[ $2 -eq 0 ]]; then echo "PASS $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi; }

# 1. README blocks == files.
"$PYTHON" - "$REPO/README.md" "$HERE/client.mjs" "$HERE/client.py" <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
blocks = {lang: body for lang, body in re.findall(r"```(js|python)\n(.*?)```", readme, re.S)}
bad = 0
for path, lang in [(sys.argv[2], "js"), (sys.argv[3], "python")]:
    lines = open(path).read().splitlines(keepends=True)
    while lines and (lines[0].startswith(("//", "#")) and not lines[0].startswith("#!")):
        lines.pop(0)
    text = "".join(lines)
    if blocks.get(lang) != text:
        print(f"README's {lang} block differs from {path}", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
verdict "README snippets are interop/readme/client.{mjs,py}" $?

# 2. They run and print what the README says.
expect() {
  local out="$1"
  grep -qx 'sleep: slept 500 ms' <<<"$out" && grep -qx 'confirm: the user answered: yes' <<<"$out"
}
out="$(cd "$REPO" && STDIO_SERVER="$SERVER" timeout 120 node "$HERE/client.mjs" 2>&1)"; rc=$?
echo "$out"
[[ $rc -eq 0 ]] && expect "$out"; verdict "TypeScript README client: sleep and confirm" $?
out="$(cd "$REPO" && STDIO_SERVER="$SERVER" timeout 120 "$PYTHON" "$HERE/client.py" 2>&1)"; rc=$?
echo "$out"
[[ $rc -eq 0 ]] && expect "$out"; verdict "Python README client: sleep and confirm" $?

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
