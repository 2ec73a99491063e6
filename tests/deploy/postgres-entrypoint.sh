#!/bin/sh
# The official postgres image's contract, in short: on an empty $PGDATA create a cluster whose
# superuser is $POSTGRES_USER with $POSTGRES_PASSWORD (scram over TCP) and a database
# $POSTGRES_DB; then run the server in the foreground as user postgres, listening on all addresses.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "error: database is uninitialized and POSTGRES_PASSWORD is not set" >&2
        exit 1
    fi
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        psql -v ON_ERROR_STOP=1 -q -U "$POSTGRES_USER" -d postgres \
            -c "CREATE DATABASE \"$POSTGRES_DB\""
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    echo "PostgreSQL init process complete; ready for start up."
fi
if [ "${1:-}" = postgres ]; then
    shift
    exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
