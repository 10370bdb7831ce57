#!/usr/bin/env bash
# Starts, stops and reports a local Hazelcast member for the hazelcast coordinator's tests and examples.
# There is no Docker here, so the member is the plain jar from Maven Central run by Java 17; the jar is
# shared in .hazelcast/lib, and each port gets its own state directory .hazelcast/<port>/ (config, pid
# file, log), all git-ignored. Separate ports make separate one-member clusters: the fault test stops and
# restarts a private member without disturbing the shared one on 5701 that other tests may be using.
#
#   scripts/hazelcast.sh start    idempotent: exits 0 at once when the port already accepts connections
#   scripts/hazelcast.sh stop     stops the member this script started on the port (pid file); else no-op
#   scripts/hazelcast.sh status   exit 0 when the port accepts connections, 3 otherwise
#   scripts/hazelcast.sh kill     kill -9 of the member this script started on the port (a crash, for the
#                                 fault tests); exits 1 when there is none, so a fault is never silently skipped
#
# Environment: HAZELCAST_PORT (default 5701), HAZELCAST_CLUSTER (default "pawl"), HAZELCAST_VERSION
# (default 5.6.0, falling back to 5.5.0 when Central lacks it), PAWL_HAZELCAST_DIR (default
# <repo>/.hazelcast), HAZELCAST_START_TIMEOUT seconds (default 90).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HZ_DIR="${PAWL_HAZELCAST_DIR:-$ROOT/.hazelcast}"
HOST=127.0.0.1
PORT="${HAZELCAST_PORT:-5701}"
CLUSTER="${HAZELCAST_CLUSTER:-pawl}"
STATE_DIR="$HZ_DIR/$PORT"
PID_FILE="$STATE_DIR/member.pid"
LOG_FILE="$STATE_DIR/member.log"
CONFIG_FILE="$STATE_DIR/hazelcast.yaml"
TIMEOUT="${HAZELCAST_START_TIMEOUT:-90}"
COMMAND="${1:-}"

# Every line also goes to .hazelcast/script.log with a timestamp: starts and stops come from several
# processes (global setup, test files, people), and that log is how to tell who did what.
log() {
  echo "hazelcast.sh: $*" >&2
  mkdir -p "$HZ_DIR" && echo "$(date '+%F %T') [$$ $COMMAND :$PORT] $*" >>"$HZ_DIR/script.log"
}

# A bash /dev/tcp probe needs no netcat; `timeout` bounds a black-holed connect (generously: a loaded
# machine must not be mistaken for a free port, or a second JVM would be launched).
port_open() { timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null; }

# The process in the pid file is running. Used while starting: for a moment after launch the pid is
# still a forked shell that has not exec'd java yet, so its command line proves nothing then.
pid_running() { [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

# Running and really a member: a recycled pid must never be killed by `stop` or mistaken for ours.
pid_alive() { pid_running && grep -q HazelcastMemberStarter "/proc/$(cat "$PID_FILE")/cmdline" 2>/dev/null; }

# Prints the path of the member jar, fetching it once. The newest version is tried first; 5.5.0 is the
# fallback because client 5.6 talks to any 5.x member.
fetch_jar() {
  local versions=("${HAZELCAST_VERSION:-5.6.0}" 5.5.0) v jar
  mkdir -p "$HZ_DIR/lib"
  for v in "${versions[@]}"; do
    jar="$HZ_DIR/lib/hazelcast-$v.jar"
    if [[ -s "$jar" ]]; then echo "$jar"; return 0; fi
  done
  for v in "${versions[@]}"; do
    jar="$HZ_DIR/lib/hazelcast-$v.jar"
    log "fetching com.hazelcast:hazelcast:$v from Maven Central"
    if mvn -q dependency:copy "-Dartifact=com.hazelcast:hazelcast:$v" "-DoutputDirectory=$HZ_DIR/lib" >&2 \
      && [[ -s "$jar" ]]; then
      echo "$jar"
      return 0
    fi
    log "com.hazelcast:hazelcast:$v is not available"
  done
  return 1
}

# The smallest config that makes one member reachable at a fixed address: a fixed port (no
# auto-increment, so clients and the fault tests know where it is), no multicast, and a member list of
# exactly its own address, so members on other ports never find each other and merge into one cluster.
write_config() {
  cat >"$CONFIG_FILE" <<YAML
hazelcast:
  cluster-name: $CLUSTER
  network:
    port:
      port: $PORT
      auto-increment: false
    join:
      auto-detection:
        enabled: false
      multicast:
        enabled: false
      tcp-ip:
        enabled: true
        member-list:
          - $HOST:$PORT
  jet:
    enabled: false
YAML
}

start() {
  if port_open; then
    log "a member already accepts connections on $HOST:$PORT"
    return 0
  fi
  mkdir -p "$STATE_DIR"
  # Two callers starting at once (parallel test workers) must not launch two JVMs fighting for the port.
  # The JVM must not inherit fd 9 (see `9>&-` below), or it would hold the lock for its whole life.
  exec 9>"$STATE_DIR/start.lock"
  if ! flock -w "$TIMEOUT" 9; then
    log "another start did not finish within ${TIMEOUT}s"
    return 1
  fi
  if port_open; then return 0; fi
  if ! pid_alive; then
    local jar
    jar="$(fetch_jar)" || { log "could not fetch the Hazelcast jar (is Maven Central reachable?)"; return 1; }
    write_config
    log "starting $(basename "$jar") as cluster $CLUSTER (log: $LOG_FILE)"
    # The --add-* flags are the ones Hazelcast asks for on Java 9+; without them it warns at every start.
    nohup java -Xmx256m "-Dhazelcast.config=$CONFIG_FILE" -Dhazelcast.phone.home.enabled=false \
      --add-modules java.se --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
      --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
      --add-opens java.management/sun.management=ALL-UNNAMED \
      --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
      -cp "$jar" com.hazelcast.core.server.HazelcastMemberStarter >"$LOG_FILE" 2>&1 </dev/null 9>&- &
    echo $! >"$PID_FILE"
  fi
  # Ready means STARTED in the log, not just an open port: the acceptor opens first, and clients that
  # arrive before the member has started are turned away and back off.
  local deadline=$((SECONDS + TIMEOUT))
  until port_open && grep -q "is STARTED" "$LOG_FILE" 2>/dev/null; do
    if ! pid_running; then
      rm -f "$PID_FILE"
      if port_open; then
        # Something else took the port while ours was starting, and ours gave up. The port works, so
        # succeed; without a pid file, `stop` will leave that other process alone.
        log "the port is served by a process this script did not start"
        return 0
      fi
      log "the member exited during startup; last lines of $LOG_FILE:"
      tail -n 30 "$LOG_FILE" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "the member did not become ready within ${TIMEOUT}s"
      return 1
    fi
    sleep 0.25
  done
  log "member ready on $HOST:$PORT (pid $(cat "$PID_FILE"))"
}

stop() {
  if ! pid_alive; then
    rm -f "$PID_FILE"
    if port_open; then log "the member on $HOST:$PORT was not started by this script; leaving it"; fi
    return 0
  fi
  local pid
  pid="$(cat "$PID_FILE")"
  kill "$pid" 2>/dev/null || true
  # SIGTERM runs the shutdown hook; a member stuck for 20 s gets SIGKILL so stop is always bounded.
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      log "member $pid did not stop in 20s; killing it"
      kill -9 "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$PID_FILE"
  log "member stopped (pid $pid)"
}

# A crash, not a stop: no shutdown hook runs, and clients learn of it from their sockets only. Waits until
# the process is gone (SIGKILL cannot be ignored, so this is quick), so a `start` right after it launches
# a fresh JVM rather than finding the dying one's port still open.
kill_member() {
  if ! pid_alive; then
    log "no member started by this script runs on $HOST:$PORT; nothing to kill"
    return 1
  fi
  local pid
  pid="$(cat "$PID_FILE")"
  kill -9 "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  # A zombie counts as gone: its sockets are closed, and whether it is reaped depends on who adopted it.
  while kill -0 "$pid" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; do
    if ((SECONDS >= deadline)); then
      log "member $pid still exists 20s after SIGKILL"
      return 1
    fi
    sleep 0.05
  done
  rm -f "$PID_FILE"
  log "member killed (pid $pid)"
}

status() {
  if port_open; then
    echo "running on $HOST:$PORT$(pid_alive && echo " (pid $(cat "$PID_FILE"))")"
    return 0
  fi
  echo "not running"
  return 3
}

case "$COMMAND" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  kill) kill_member ;;
  *)
    echo "usage: $0 start|stop|status|kill" >&2
    exit 2
    ;;
esac
