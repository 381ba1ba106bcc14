# Shared by the interop runners (interop/run.sh, interop/http/run.sh,
# rmcp-example/run.sh): sourced after the runner sets OUT_DIR, the folder where each
# component's output is kept.

total_passed=0
total_failed=0
status=0

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
