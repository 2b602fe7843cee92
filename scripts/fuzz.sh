#!/usr/bin/env bash
# A coverage-guided fuzz pass over every target in fuzz/ (docs/testing.md).
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]
#
# Builds the libFuzzer targets with plain `cargo build` and the instrumentation flags cargo-fuzz
# would pass (sanitizer coverage, `--cfg fuzzing`, debug assertions, overflow checks; no
# sanitizer), all of them stable `-C` flags: no cargo-fuzz to install, no nightly toolchain. Then
# runs each target N seconds (default 20) from its seed corpus (fuzz/seeds/TARGET) plus what
# earlier passes found (fuzz/corpus/TARGET). Exits non-zero when a target finds anything; the
# input is left in fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=20
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --seconds=*) seconds="${1#*=}"; shift ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' Cargo.toml | grep -v '^openbench')
fi
host="$(rustc -vV | sed -n 's/^host: //p')"
# An explicit --target keeps these flags off build scripts and proc macros (as cargo-fuzz does).
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
cargo build --release --locked --target "$host" --bins
status=0
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target"
    log="$(mktemp)"
    echo "== $target: ${seconds}s"
    "target/$host/release/$target" "corpus/$target" "seeds/$target" \
        -artifact_prefix="artifacts/$target/" -max_total_time="$seconds" -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || true
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE|panicked|SUMMARY|Test unit written' "$log" || true
    if [ -n "$(ls -A "artifacts/$target" 2>/dev/null)" ]; then
        echo "$target: finding(s) in fuzz/artifacts/$target" >&2
        tail -n 40 "$log" >&2
        status=1
    fi
    rm -f "$log"
done
exit "$status"
