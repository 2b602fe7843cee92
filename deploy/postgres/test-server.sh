#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the results-store tests: installs Debian's
# `postgresql` package when missing, creates (once) a cluster in a scratch directory owned by the
# `postgres` user, starts it on 127.0.0.1:$PORT and creates the test database. Idempotent: a
# second call finds the server answering and only prints the URL.
#
# Usage (as root):  eval "$(bash deploy/postgres/test-server.sh start)"   # exports the URL
#                   bash deploy/postgres/test-server.sh stop
# The URL goes to OPENBENCH_TEST_POSTGRES_URL; tests that need it skip without it, and fail
# without it when OPENBENCH_REQUIRE_REAL_TARGETS is set.
set -euo pipefail
PORT="${OPENBENCH_TEST_POSTGRES_PORT:-55432}"
DATA="${OPENBENCH_TEST_POSTGRES_DIR:-/var/tmp/openbench-postgres}"
DB=openbench_test
# Loopback only, trust authentication: a test cluster with no secret to keep.
URL="postgres://postgres@127.0.0.1:$PORT/$DB"

log() { echo "[postgres] $*" >&2; }

bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [[ -n "$dir" ]] || return 1
  echo "$dir"
}

as_postgres() { runuser -u postgres -- "$@"; }

install() {
  if ! bindir >/dev/null; then
    [[ "$(id -u)" == 0 ]] || { log "need root to install Debian's postgresql"; exit 1; }
    log "installing Debian's postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
}

start() {
  install
  local bin
  bin="$(bindir)"
  if [[ ! -f "$DATA/PG_VERSION" ]]; then
    mkdir -p "$DATA"
    chown postgres:postgres "$DATA"
    as_postgres "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  if ! as_postgres "$bin/pg_isready" -h 127.0.0.1 -p "$PORT" -q; then
    log "starting on 127.0.0.1:$PORT ($DATA)"
    as_postgres "$bin/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DATA" start >/dev/null
  fi
  if ! as_postgres "$bin/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    as_postgres "$bin/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB"
  fi
  echo "export OPENBENCH_TEST_POSTGRES_URL=$URL"
}

stop() {
  local bin
  bin="$(bindir)" || exit 0
  [[ -f "$DATA/PG_VERSION" ]] || exit 0
  as_postgres "$bin/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) log "usage: $0 start|stop"; exit 2 ;;
esac
