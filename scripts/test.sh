#!/usr/bin/env bash
# The test command: formatting, lints, then every test in the workspace, closing with one
# summary line over all test binaries ("tests: N passed, N failed, N skipped").
#
# A test that needs a real target (chromium, rotel, llama-server) and finds it missing returns
# early, which cargo counts as passed; it also leaves a marker file in $OPENBENCH_SKIP_DIR
# (tests/real_targets/skip.rs), and each marker moves one test from "passed" to "skipped".
# With OPENBENCH_REQUIRE_REAL_TARGETS set, a missing target fails its test instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# fuzz/ is its own workspace with its own lock file; a workspace dependency change must update it
# too (CI's fuzz pass builds it with --locked).
cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml > /dev/null
log="$(mktemp)"
skip_dir="$(mktemp -d)"
trap 'rm -rf "$log" "$skip_dir"' EXIT
export OPENBENCH_SKIP_DIR="$skip_dir"
status=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$log" || status=$?
skipped_here="$(find "$skip_dir" -type f | wc -l)"
for marker in "$skip_dir"/*; do
  if [ -f "$marker" ]; then echo "skipped: $(basename "$marker"): $(cat "$marker")"; fi
done
# Sum the per-binary "test result:" lines into one closing line; ignored tests and the marked
# skips count as skipped.
awk -v marked="$skipped_here" '
  /^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i; if ($(i+1) ~ /^ignored;?$/) s += $i } }
  END { p -= marked; s += marked; printf "tests: %d passed, %d failed, %d skipped\n", p, f, s; if (p <= 0) exit 1 }' "$log" || status=1
exit "$status"
