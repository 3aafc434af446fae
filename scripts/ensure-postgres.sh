#!/usr/bin/env bash
# Make sure a PostgreSQL server answers on 127.0.0.1:5432 and print an admin URL for the tests.
#
# Order of attempts: a server that already answers; a Debian cluster that only needs starting
# (pg_ctlcluster); installing the Debian `postgresql` package, then starting its cluster.
# Trust authentication for local TCP connections is what the dev and CI machines use; when we
# create the cluster ourselves we configure exactly that, for 127.0.0.1 only.
set -euo pipefail

HOST=127.0.0.1
PORT=${PGPORT:-5432}
USER_NAME=${PGUSER:-postgres}

log() { echo "ensure-postgres: $*" >&2; }

answers() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h "$HOST" -p "$PORT"
  else
    (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
  fi
}

can_login() {
  command -v psql >/dev/null 2>&1 || return 0
  psql -h "$HOST" -p "$PORT" -U "$USER_NAME" -d postgres -Atqc 'select 1' >/dev/null 2>&1
}

start_clusters() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 1
  local started=1
  while read -r ver name _rest; do
    [ -n "$ver" ] || continue
    log "starting cluster $ver/$name"
    pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start >/dev/null 2>&1 || true
    started=0
  done < <(pg_lsclusters -h 2>/dev/null)
  return $started
}

wait_ready() {
  for _ in $(seq 1 60); do
    answers && return 0
    sleep 0.5
  done
  return 1
}

if ! answers; then
  if ! start_clusters || ! wait_ready; then
    log "no PostgreSQL running; installing the Debian package"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    $SUDO apt-get install -y -qq postgresql >&2
    if ! pg_lsclusters -h 2>/dev/null | grep -q .; then
      ver=$(ls /usr/lib/postgresql | sort -V | tail -n1)
      $SUDO pg_createcluster "$ver" main >&2
    fi
    # Trust local TCP connections from this machine only (test server, loopback only).
    for hba in /etc/postgresql/*/main/pg_hba.conf; do
      grep -q 'gleaner-tests' "$hba" || $SUDO sed -i '1i host all all 127.0.0.1/32 trust # gleaner-tests' "$hba"
    done
    start_clusters || true
    wait_ready || { log "PostgreSQL did not come up on $HOST:$PORT"; exit 1; }
  fi
fi

if ! can_login; then
  log "cannot log in as $USER_NAME on $HOST:$PORT without a password"
  exit 1
fi
log "PostgreSQL answers on $HOST:$PORT"
echo "postgres://$USER_NAME@$HOST:$PORT/postgres"
