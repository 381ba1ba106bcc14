#!/usr/bin/env bash
# Minimizes fuzz/corpus/<target>/ (all targets, or those named) to the inputs that reach
# new edges of the mcp-tasks crate itself: the targets are built with coverage
# instrumentation for mcp_tasks only (this script is also the RUSTC_WRAPPER that strips it
# from every other crate), and libFuzzer's merge keeps one input per new edge
# (-use_counters=0). Generic code instantiated in the fuzz binaries (serde's derived
# deserializers, serde_json's parser) is then not counted, which keeps the committed corpus
# to a few hundred small files. Stable Rust is enough (no sanitizer).
#
#   bash fuzz/minimize.sh [target...]
set -euo pipefail

if [ -n "${MCP_TASKS_FUZZ_WRAPPER:-}" ]; then
  # Called by cargo as RUSTC_WRAPPER: rustc path, then its arguments.
  rustc="$1"; shift
  name=""; prev=""
  for arg in "$@"; do
    if [ "$prev" = "--crate-name" ]; then name="$arg"; fi
    prev="$arg"
  done
  if [ "$name" = "mcp_tasks" ]; then exec "$rustc" "$@"; fi
  args=()
  for arg in "$@"; do
    case "$arg" in
      -Cpasses=sancov-module|-Cllvm-args=-sanitizer-coverage-*) ;;
      *) args+=("$arg") ;;
    esac
  done
  exec "$rustc" "${args[@]}"
fi

cd "$(dirname "$0")/.."
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(any_task messages dispatch); fi
dir=fuzz/target/crate-coverage
MCP_TASKS_FUZZ_WRAPPER=1 RUSTC_WRAPPER="$PWD/fuzz/minimize.sh" \
  cargo fuzz build -s none --target-dir "$dir"
bin="$dir/x86_64-unknown-linux-gnu/release"
for target in "${targets[@]}"; do
  fresh=$(mktemp -d)
  "$bin/$target" -merge=1 -use_counters=0 "$fresh" "fuzz/corpus/$target" "fuzz/seeds/$target" \
    2>&1 | grep -a 'MERGE-OUTER: .* new files' || true
  rm -rf "fuzz/corpus/$target"
  mv "$fresh" "fuzz/corpus/$target"
  echo "$target: $(find "fuzz/corpus/$target" -type f | wc -l) files"
done
