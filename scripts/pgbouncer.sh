#!/usr/bin/env bash
# Starts, stops and reports a local PgBouncer in transaction mode, in front of the PostgreSQL the tests
# use, for the pooler tests (test/integration/db/pgbouncer-*.test.ts) and the bench. Debian's `pgbouncer`
# (1.18, which cannot carry named prepared statements) runs as the `postgres` user with its own ini in a
# state directory (default /tmp/pawl-pgbouncer-<port>): pool_mode = transaction, auth_type = trust (every
# role the tests log in as is in the auth file), listening on 127.0.0.1 only.
#
#   scripts/pgbouncer.sh start    idempotent: exits 0 at once when the port already accepts connections
#   scripts/pgbouncer.sh stop     stops the PgBouncer this script started on the port (pid file); else no-op
#   scripts/pgbouncer.sh status   exit 0 when the port accepts connections, 3 otherwise
#   scripts/pgbouncer.sh url      prints the URL of database `test` through the pooler
#
# Environment: PGBOUNCER_PORT (default 6432), PGBOUNCER_UPSTREAM_PORT (default 5432),
# PAWL_PGBOUNCER_DIR (the state directory), PGBOUNCER_POOL_SIZE (server connections per database and
# user, default 20).
set -euo pipefail

HOST=127.0.0.1
PORT="${PGBOUNCER_PORT:-6432}"
UPSTREAM_PORT="${PGBOUNCER_UPSTREAM_PORT:-5432}"
DIR="${PAWL_PGBOUNCER_DIR:-/tmp/pawl-pgbouncer-$PORT}"
POOL_SIZE="${PGBOUNCER_POOL_SIZE:-20}"
PID_FILE="$DIR/pgbouncer.pid"
COMMAND="${1:-}"

log() { echo "pgbouncer.sh: $*" >&2; }

port_open() { timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null; }

pid_alive() { [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

binary() {
  if command -v pgbouncer >/dev/null 2>&1; then command -v pgbouncer; return 0; fi
  [[ -x /usr/sbin/pgbouncer ]] && { echo /usr/sbin/pgbouncer; return 0; }
  return 1
}

# Runs a command as `postgres` when we are root (PgBouncer refuses to run as root), else as ourselves.
as_postgres() {
  if [[ "$(id -u)" = 0 ]]; then
    su postgres -s /bin/bash -c "$*"
  else
    bash -c "$*"
  fi
}

start() {
  if port_open; then
    log "port $PORT already accepts connections"
    return 0
  fi
  local bin
  bin="$(binary)" || { log "pgbouncer is not installed (apt-get install pgbouncer)"; return 1; }
  mkdir -p "$DIR"
  # Roles the tests log in as; with auth_type = trust the password is not checked, but the name must be here.
  cat >"$DIR/userlist.txt" <<EOF
"postgres" ""
"pawl_app" ""
"pawl_reader" ""
"pawl_owner" ""
EOF
  cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
* = host=$HOST port=$UPSTREAM_PORT

[pgbouncer]
listen_addr = $HOST
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
pool_mode = transaction
default_pool_size = $POOL_SIZE
max_client_conn = 1000
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = $DIR/pgbouncer.log
pidfile = $PID_FILE
admin_users = postgres
EOF
  if [[ "$(id -u)" = 0 ]]; then chown -R postgres "$DIR"; fi
  as_postgres "$bin -d $DIR/pgbouncer.ini"
  for _ in $(seq 30); do
    if port_open; then
      log "PgBouncer (transaction mode) on $HOST:$PORT, state in $DIR"
      return 0
    fi
    sleep 0.5
  done
  log "PgBouncer did not come up; see $DIR/pgbouncer.log"
  return 1
}

stop() {
  if pid_alive; then
    kill "$(cat "$PID_FILE")" || true
    for _ in $(seq 20); do pid_alive || break; sleep 0.25; done
    log "stopped PgBouncer on port $PORT"
  fi
}

case "$COMMAND" in
  start) start ;;
  stop) stop ;;
  status) if port_open; then exit 0; else exit 3; fi ;;
  url) echo "postgres://postgres@$HOST:$PORT/test" ;;
  *)
    log "usage: scripts/pgbouncer.sh start|stop|status|url"
    exit 2
    ;;
esac
