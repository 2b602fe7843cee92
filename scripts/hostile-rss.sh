#!/usr/bin/env bash
# Peak resident memory and timing of `smoke` and `run` through the coordinator against each
# hostile upstream of the simulator's catalogue (the bound we hold: under 100 MB resident, each
# request ending within its deadline plus one second). Prints one markdown table row per case.
#
#   scripts/hostile-rss.sh [--bin PATH] [--timeout-ms N]
#
# The binary defaults to target/release/openbench-inference (build it with
# `cargo build --release`). Each case is one lane on the embedded simulator's `plain` profile with
# the quirk forced by `x-sim-quirk`, a sentinel bearer key, time scale 1: a smoke (3 requests) and
# a full run (6 requests), each measured with /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/target/release/openbench-inference"
timeout_ms=4000
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift 2 ;;
        --timeout-ms) timeout_ms="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HOSTILE_KEY="sk-hostile-sentinel-4b8e1d0c9a7f"
quirks=(endless-line endless-data-lines comment-flood huge-event endless-error-body invalid-utf8
        echo-key-split echo-key-base64 echo-key-error)
# Peak RSS as /usr/bin/time reports it (KiB) and in MB of 10^6 bytes, the unit of the issue's
# 100 MB bound.
echo "| hostile quirk | command | outcome, error type | slowest request end (ms) | peak RSS (KiB) | peak RSS (MB) | wall |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: |"
for quirk in "${quirks[@]}"; do
    spec="$work/$quirk.yaml"
    # The benchmark identity and request contract come from the bundled simulated spec, with this
    # script's deadline.
    sed -n '/^benchmark:/,/^providers:/p' "$root/workflows/micro-single-task/specs/simulated.yaml" |
        sed -e "s/^  timeout_ms: .*/  timeout_ms: $timeout_ms/" \
            -e "s/^  harness_grace_ms: .*/  harness_grace_ms: 5000/" >"$spec"
    cat >>"$spec" <<YAML
  - key: hostile
    endpoint: sim://plain
    model: m-hostile
    auth: {scheme: bearer, env: HOSTILE_KEY}
    max_tokens_field: max_tokens
    extra_headers: {x-sim-quirk: $quirk}
dataset:
  source: $root/data/micro-single-task
plans:
  full_items_per_family: 2
  smoke_items_per_family: 1
  smoke_max_attempts: 1
run_root: $work/runs-$quirk
simulator:
  time_scale: 1
  seed: 7
YAML
    for command in smoke run; do
        args=(smoke --spec "$spec")
        results="raw/results-attempt-1.jsonl"
        if [ "$command" = run ]; then
            args=(run --spec "$spec" --full --approve-full --approval-id RSS-1)
            results="raw/results.jsonl"
        fi
        /usr/bin/time -f '%M %e' -o "$work/time" "$bin" "${args[@]}" >"$work/out" 2>&1 || true
        # A failing command adds a "Command exited with non-zero status" line first.
        read -r kb wall < <(tail -n 1 "$work/time")
        dir="$(sed -n 's/^run directory: //p' "$work/out" | head -n 1)"
        if grep -rqF "$HOSTILE_KEY" "$dir" "$work/out"; then
            echo "$quirk: the sentinel key was written" >&2
            exit 1
        fi
        summary="$(python3 - "$dir/$results" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
kinds = sorted({f"{r['outcome']}, {r.get('error_type') or '-'}" for r in recs})
ends = [r.get("stream_end_ms") or r.get("e2e_ms") or 0 for r in recs]
print(f"{'; '.join(kinds)}|{max(ends):.0f}")
PY
)"
        printf '| `%s` | %s | %s | %s | %s | %.1f | %.2f s |\n' "$quirk" "$command" \
            "${summary%|*}" "${summary#*|}" "$kb" "$(echo "$kb * 1024 / 1000000" | bc -l)" "$wall"
    done
done
