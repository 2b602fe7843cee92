#!/usr/bin/env bash
# One-time machine setup for the tests and reports. The demo itself needs nothing beyond a Rust
# toolchain.
#   - Debian: chromium (HTML report screenshots), curl, python3, tmux (the watch TUI test)
#   - PyPI: rotel, a Rust OpenTelemetry collector the OTLP trace test exports to; duckdb, the
#     independent reader the results-store test opens the CSV and Parquet exports with;
#     jsonschema, the independent validator of the site's results JSON
#   - crates.io: cargo-nextest, the runner of every test that does not judge time
#     (scripts/test.sh; machines of our kind ship it, so this only builds it where missing)
#   deploy/setup.sh        installs what is missing
#   deploy/setup.sh --ci   the same
set -euo pipefail
ROTEL_VERSION="${ROTEL_VERSION:-0.0.1a15}"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip)
# tmux: tests/watch_tui.rs drives `watch`'s terminal UI in a tmux pane and reads it back with
# capture-pane (skipped without it locally, a failure in CI).
command -v tmux >/dev/null 2>&1 || need+=(tmux)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "[setup] need root to install: ${need[*]}" >&2
    exit 1
  fi
  echo "[setup] installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! python3 -c 'import rotel' 2>/dev/null; then
  echo "[setup] installing rotel $ROTEL_VERSION (OTLP collector for the trace test)"
  python3 -m pip install --quiet --disable-pip-version-check "rotel==$ROTEL_VERSION"
fi
DUCKDB_VERSION="${DUCKDB_VERSION:-2.0.1}"
if ! python3 -c 'import duckdb' 2>/dev/null; then
  echo "[setup] installing duckdb $DUCKDB_VERSION (reads the results store's exports in its test)"
  python3 -m pip install --quiet --disable-pip-version-check "duckdb==$DUCKDB_VERSION"
fi
JSONSCHEMA_VERSION="${JSONSCHEMA_VERSION:-4.26.0}"
if ! python3 -c 'import jsonschema' 2>/dev/null; then
  echo "[setup] installing jsonschema $JSONSCHEMA_VERSION (validates the site's results JSON in its test)"
  python3 -m pip install --quiet --disable-pip-version-check "jsonschema==$JSONSCHEMA_VERSION"
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "[setup] installing cargo-nextest (runs the tests, scripts/test.sh; a few minutes to build)"
  cargo install --locked --quiet cargo-nextest
fi
echo "[setup] done"
