#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the results-store tests: installs Debian's
# `postgresql` package when missing, creates (once) a cluster in a scratch directory owned by the
# `postgres` user, starts it on a free loopback port and creates the test database. Idempotent: a
# second call finds the server answering (its port is kept in $DATA/openbench-port) and only
# prints the URL.
#
# The port: OPENBENCH_TEST_POSTGRES_PORT when set, else the first of 25432-25531 the server can
# bind. Those lie below Linux's ephemeral range (32768-60999 by default, read from
# /proc/sys/net/ipv4/ip_local_port_range and avoided if configured lower), so no client's
# outgoing connection can be holding one; a port another listener holds makes the server fail to
# start, and the next one is tried. The chosen port is logged and is in the URL.
#
# Usage (as root):  eval "$(bash deploy/postgres/test-server.sh start)"   # exports the URL
#                   bash deploy/postgres/test-server.sh stop
# The URL goes to OPENBENCH_TEST_POSTGRES_URL; tests that need it skip without it, and fail
# without it when OPENBENCH_REQUIRE_REAL_TARGETS is set.
set -euo pipefail
DATA="${OPENBENCH_TEST_POSTGRES_DIR:-/var/tmp/openbench-postgres}"
DB=openbench_test
FIRST_PORT=25432
LAST_PORT=25531

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

# The ports to try, in order: the one asked for, or those of our range below the ephemeral one.
candidates() {
  if [[ -n "${OPENBENCH_TEST_POSTGRES_PORT:-}" ]]; then
    echo "$OPENBENCH_TEST_POSTGRES_PORT"
    return
  fi
  local low
  low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  local port
  for ((port = FIRST_PORT; port <= LAST_PORT; port++)); do
    ((port < low)) && echo "$port"
  done
}

# Starts the server on the first candidate port it can bind; prints that port.
launch() {
  local bin="$1" port
  for port in $(candidates); do
    if as_postgres "$bin/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$DATA" \
      start >/dev/null 2>&1; then
      echo "$port" >"$DATA/openbench-port"
      echo "$port"
      return
    fi
    log "127.0.0.1:$port not usable ($(grep -E 'could not|FATAL' "$DATA/server.log" 2>/dev/null | tail -n 1)); trying the next"
  done
  log "no port left to try (set OPENBENCH_TEST_POSTGRES_PORT); see $DATA/server.log"
  exit 1
}

start() {
  install
  local bin port=""
  bin="$(bindir)"
  if [[ ! -f "$DATA/PG_VERSION" ]]; then
    mkdir -p "$DATA"
    chown postgres:postgres "$DATA"
    as_postgres "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  if as_postgres "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    port="$(cat "$DATA/openbench-port" 2>/dev/null || true)"
    if [[ -z "$port" ]] || ! as_postgres "$bin/pg_isready" -h 127.0.0.1 -p "$port" -q; then
      # Running, but not where we recorded (started by an older version of this script).
      as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
      port=""
    fi
  fi
  [[ -n "$port" ]] || port="$(launch "$bin")"
  log "listening on 127.0.0.1:$port ($DATA)"
  if ! as_postgres "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB"
  fi
  # Loopback only, trust authentication: a test cluster with no secret to keep.
  echo "export OPENBENCH_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/$DB"
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
