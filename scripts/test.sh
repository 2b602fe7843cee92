#!/usr/bin/env bash
# The test command: formatting, lints, then every test in the workspace, closing with one
# summary line over all of them ("tests: N passed, N failed, N skipped").
#
# How the tests run (docs/testing.md#how-the-tests-run): the tests that judge wall-clock time or
# CPU (below, `timed`) run first, with `cargo test`, one binary at a time and nothing else
# beside them; every other test then runs under cargo-nextest (.config/nextest.toml), each in its
# own process, three at a time across binaries: most of those wait on real servers, browsers and
# containers rather than compute.
#
# A test that needs a real target (chromium, rotel, llama-server) and finds it missing returns
# early, which counts as passed; it also leaves a marker file in $OPENBENCH_SKIP_DIR
# (tests/real_targets/skip.rs), and each marker moves one test from "passed" to "skipped".
# With OPENBENCH_REQUIRE_REAL_TARGETS set, a missing target fails its test instead.
set -euo pipefail
cd "$(dirname "$0")/.."

# Test binaries whose assertions read a clock or a CPU figure: a send lag or launch skew, a stall
# canary's lateness, a detection delay, a rate against a server's own count, a real model's
# decode speed on these cores, a latency shift across the compose topology (multi_host: CI's
# nextest part once ran it beside a browser test, and a 12-request median moved 173 ms against
# its 100 ms tolerance). A binary added here must exist (cargo refuses an unknown name).
timed=(
  timing_accuracy load_itl_truth validity_stall link_monitor_starvation results_store_load
  bench_fidelity bench_load_generator load_arrivals load_user_ramp load_truth
  coordinator_faults fault_soak watch_tui
  llama_server_e2e llama_server_dialects llama_server_load llama_server_cache
  link_starvation timed_release capacity multi_host
)

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# fuzz/ is its own workspace with its own lock file; a workspace dependency change must update it
# too (CI's fuzz pass builds it with --locked).
cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml > /dev/null
if ! cargo nextest --version > /dev/null 2>&1; then
  echo "cargo-nextest is missing: deploy/setup.sh installs it (cargo install --locked cargo-nextest)" >&2
  exit 1
fi

timed_log="$(mktemp)"
rest_log="$(mktemp)"
skip_dir="$(mktemp -d)"
trap 'rm -rf "$timed_log" "$rest_log" "$skip_dir"' EXIT
export OPENBENCH_SKIP_DIR="$skip_dir"
status=0

timed_args=()
filter=""
for name in "${timed[@]}"; do
  timed_args+=(--test "$name")
  filter="${filter:+$filter | }binary(=$name)"
done
cargo test --workspace --no-fail-fast "${timed_args[@]}" 2>&1 | tee "$timed_log" || status=$?
cargo nextest run --workspace --no-fail-fast --run-ignored default -E "not ($filter)" 2>&1 \
  | tee "$rest_log" || status=$?

skipped_here="$(find "$skip_dir" -type f | wc -l)"
for marker in "$skip_dir"/*; do
  if [ -f "$marker" ]; then echo "skipped: $(basename "$marker"): $(cat "$marker")"; fi
done
# One closing line over both runners. cargo test: the per-binary "test result:" lines (ignored
# counts as skipped). nextest: its "Summary" line (its "skipped" are the ignored tests; the timed
# binaries its filter leaves to cargo test are not listed at all). The marked skips move from
# passed to skipped.
awk -v marked="$skipped_here" -v timed_file="$timed_log" -v rest_file="$rest_log" '
  function count(word,    i) { for (i = 1; i <= NF; i++) if ($(i+1) ~ "^" word "[;,]?$") return $i + 0; return 0 }
  FILENAME == timed_file && /^test result:/ { p += count("passed"); f += count("failed"); s += count("ignored") }
  FILENAME == rest_file && /^ *Summary \[/ { p += count("passed"); f += count("failed") + count("timed"); s += count("skipped"); seen = 1 }
  END {
    p -= marked; s += marked
    if (!seen) { print "tests: nextest gave no summary line"; exit 1 }
    printf "tests: %d passed, %d failed, %d skipped\n", p, f, s; if (p <= 0 || f > 0) exit 1
  }' "$timed_log" "$rest_log" || status=1
exit "$status"
