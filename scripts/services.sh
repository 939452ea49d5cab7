#!/usr/bin/env bash
# Redis (Celery's broker and result backend) and PostgreSQL (Dagster's run, event and schedule
# storage) on 127.0.0.1, for RAG_EXECUTOR=celery on this machine. Used by `make services`,
# `make worker`, .ci/run and the tests.
#
#   scripts/services.sh install   install redis-server and PostgreSQL if missing (Debian packages)
#   scripts/services.sh start     install them if missing, start both, create the database, write
#                                 $DIR/dagster_home/dagster.yaml and $DIR/celery.yaml
#   scripts/services.sh stop      stop both
#   scripts/services.sh worker N  one Celery worker named N, in the foreground (one step at a time);
#                                 $DIR/celery.yaml written again from this environment first
#
# Settings (environment): RAG_SERVICES_DIR (default data/services), RAG_REDIS_PORT (6379),
# RAG_PG_PORT (5432); celery.yaml takes RAG_CELERY_BROKER, RAG_CELERY_BACKEND (default: this Redis,
# db 0 and 1) and RAG_CELERY_TASK_TIMEOUT as the run's executor does (rag_pipeline.cli.celery_yaml).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$(mkdir -p "${RAG_SERVICES_DIR:-$ROOT/data/services}" && cd "${RAG_SERVICES_DIR:-$ROOT/data/services}" && pwd)"
REDIS_PORT="${RAG_REDIS_PORT:-6379}"
PG_PORT="${RAG_PG_PORT:-5432}"
HOME_DIR="$DIR/dagster_home"
PG_DATA="$DIR/postgres"

say() { echo "services: $*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "$* needs root (no sudo here): install the package yourself"
    exit 1
  fi
}

apt_install() {
  say "installing $* (Debian packages)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

pg_bin() {  # the newest installed PostgreSQL's programs
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# PostgreSQL refuses to run as root: then it runs as the `postgres` user, who owns its files
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_redis() {
  mkdir -p "$DIR/redis"
  if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    say "redis already answers on 127.0.0.1:$REDIS_PORT"
    return
  fi
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$DIR/redis" --daemonize yes \
    --pidfile "$DIR/redis/redis.pid" --logfile "$DIR/redis/redis.log" --save "" --appendonly no
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  say "redis on 127.0.0.1:$REDIS_PORT"
}

start_postgres() {
  local bin
  bin="$(pg_bin)"
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    mkdir -p "$PG_DATA"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$PG_DATA"
    chmod 700 "$PG_DATA"
    # only this machine connects (127.0.0.1), so no password: trust
    as_pg "$bin/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 >/dev/null
  fi
  if ! as_pg "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DATA" start >/dev/null
  fi
  if ! as_pg "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'dagster'" | grep -q 1; then
    as_pg "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres dagster
  fi
  say "postgres on 127.0.0.1:$PG_PORT, database dagster"
}

write_configs() {
  mkdir -p "$HOME_DIR"
  # dagster-postgres installs psycopg2, and SQLAlchemy 2.1 maps plain postgresql:// to psycopg 3
  cat >"$HOME_DIR/dagster.yaml" <<EOF
storage:
  postgres:
    postgres_db:
      hostname: 127.0.0.1
      port: $PG_PORT
      username: postgres
      db_name: dagster
      scheme: postgresql+psycopg2
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
EOF
  write_celery_yaml
  say "DAGSTER_HOME=$HOME_DIR (Postgres storage); workers read $DIR/celery.yaml"
}

write_celery_yaml() {
  "$ROOT/.venv/bin/python" -m rag_pipeline.cli.celery_yaml "$DIR/celery.yaml"
}

stop() {
  if [ -f "$DIR/redis/redis.pid" ]; then
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -f "$DIR/redis/redis.pid"
  fi
  if [ -f "$PG_DATA/postmaster.pid" ]; then
    as_pg "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
  fi
  say "stopped"
}

install() {
  command -v redis-server >/dev/null || apt_install redis-server
  [ -n "$(pg_bin)" ] || apt_install postgresql
}

case "${1:-}" in
  install) install ;;
  start)
    install
    start_redis
    start_postgres
    write_configs
    ;;
  stop) stop ;;
  worker)
    name="${2:?usage: $0 worker NAME}"
    write_celery_yaml
    export PATH="$ROOT/.venv/bin:$PATH" DAGSTER_HOME="${DAGSTER_HOME:-$HOME_DIR}"
    cd "$ROOT"
    exec dagster-celery worker start -A rag_pipeline.cli.celery_app -y "$DIR/celery.yaml" -n "$name" -- --concurrency=1
    ;;
  *)
    echo "usage: $0 install|start|stop|worker NAME" >&2
    exit 2
    ;;
esac
