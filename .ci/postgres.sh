# Sourced by .ci/run: a throwaway PostgreSQL cluster for the tests of the
# durable queue (jobq, internal/queuee2e). It installs PostgreSQL from the
# Debian packages when it is missing, starts a cluster in a temporary
# directory on a free port, exports BAZINGA_TEST_DATABASE_URL and stops the
# cluster (and removes it) when the calling shell exits.
# Usage: . .ci/postgres.sh   (it sets an EXIT trap)

pg_bin=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && pg_bin="$d"
done
if [ -z "$pg_bin" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "== installing PostgreSQL (Debian packages) for the durable-queue tests"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql
    for d in /usr/lib/postgresql/*/bin; do
      [ -x "$d/initdb" ] && pg_bin="$d"
    done
  fi
fi
if [ -z "$pg_bin" ]; then
  echo "PostgreSQL not found and apt-get unavailable: the durable-queue tests need it (apt-get install postgresql)" >&2
  exit 1
fi

# PostgreSQL refuses to run as root: as root the cluster belongs to an
# unprivileged user (the packages' postgres user, else nobody).
pg_user=""
if [ "$(id -u)" = 0 ]; then
  pg_user=postgres
  id "$pg_user" >/dev/null 2>&1 || pg_user=nobody
fi
pg_as() {
  if [ -n "$pg_user" ]; then
    su -s /bin/sh "$pg_user" -c "$*"
  else
    sh -c "$*"
  fi
}

pg_dir=$(mktemp -d /tmp/bazinga-pg.XXXXXX)
chmod 755 "$pg_dir"
[ -n "$pg_user" ] && chown "$pg_user" "$pg_dir"
pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55432)
pg_as "'$pg_bin/initdb' -D '$pg_dir/data' -U bazinga --auth=trust -E UTF8 >'$pg_dir/initdb.log' 2>&1" || {
  cat "$pg_dir/initdb.log" >&2
  exit 1
}
# The queue tests open many short connections (several servers and replicas).
pg_as "'$pg_bin/pg_ctl' -D '$pg_dir/data' -l '$pg_dir/server.log' -w \
  -o \"-p $pg_port -k '$pg_dir' -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on\" start >/dev/null" || {
  cat "$pg_dir/server.log" >&2
  exit 1
}
pg_stop() {
  pg_as "'$pg_bin/pg_ctl' -D '$pg_dir/data' -m immediate stop >/dev/null 2>&1" || true
  rm -rf "$pg_dir"
}
trap pg_stop EXIT
export BAZINGA_TEST_DATABASE_URL="postgres://bazinga@127.0.0.1:$pg_port/postgres?sslmode=disable"
echo "== PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') for the tests at $BAZINGA_TEST_DATABASE_URL"
