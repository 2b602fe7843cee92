#!/usr/bin/env bash
# A short coverage-guided fuzz pass over every target in fuzz/ (docs/testing.md).
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [TARGET...]
#
# Each target runs N seconds (default 20) from its seed corpus (fuzz/seeds/TARGET) plus what
# earlier passes found (fuzz/corpus/TARGET). cargo-fuzz needs a nightly compiler flag: the stable
# toolchain is told to allow it with RUSTC_BOOTSTRAP=1. Installs cargo-fuzz from crates.io when it
# is missing. Exits non-zero on the first crash; the input is left in fuzz/artifacts/TARGET.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=20
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --seconds=*) seconds="${1#*=}"; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
# No sanitizer: the code under test forbids `unsafe`, so ASan adds build time and no findings.
cargo fuzz build --sanitizer none
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    echo "== $target: ${seconds}s"
    cargo fuzz run --sanitizer none "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 2>&1 | grep -E '^stat::(number_of_executed_units|peak_rss_mb)|panicked|SUMMARY|Test unit written' || true
    if [ -n "$(ls -A "artifacts/$target" 2>/dev/null)" ]; then
        echo "$target: finding(s) in fuzz/artifacts/$target" >&2
        exit 1
    fi
done
