#!/usr/bin/env bash
# The test command: formatting, lints, then every test in the workspace, closing with one
# summary line over all test binaries ("N passed, N failed").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$log" || status=$?
# Sum the per-binary "test result:" lines into one closing line.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i; if ($(i+1) ~ /^ignored;?$/) s += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s; if (p == 0) exit 1 }' "$log" || status=1
exit "$status"
