#!/usr/bin/env bash
# Set up, on Debian or Ubuntu, the local servers that etc/sample.conf and the tests use:
# memcached, PostgreSQL and MariaDB (or an existing MySQL), with the benchmark's
# databases and users. Run it as root; running it again changes nothing.
#
#   sudo etc/provision.sh
#
# Starts memcached on the benchmark's own port, 24004 (the cold phases flush it,
# so it must not be a memcached anything else uses), listening on 127.0.0.1, or
# on MEMCACHED_LISTEN (e.g. 0.0.0.0 for etc/remote-sample.conf):
#
#   sudo MEMCACHED_LISTEN=0.0.0.0 etc/provision.sh
#
# Installs chromium, which the tests of "zodbshootout report" load its pages in.
#
# Creates (password "zodbshootout" everywhere):
#   PostgreSQL: role zodbshootout (LOGIN), databases zodbshootout_pg (etc/sample.conf)
#               and zodbshootout_pg_pcache (etc/fs-sample.conf), owned by it.
#   MariaDB:    user zodbshootout@{localhost,127.0.0.1,%},
#               databases zodbshootout_mysql and zodbshootout_mysql_mc.
# Without root or apt-get it skips the steps that need them and says so.
# Exits non-zero only when a server it should start or configure did not respond.
set -euo pipefail

HOST=127.0.0.1
PG_PORT=5432
MYSQL_PORT=3306
MEMCACHED_PORT=${MEMCACHED_PORT:-24004}
MEMCACHED_LISTEN=${MEMCACHED_LISTEN:-$HOST}
NAME=zodbshootout
PASSWORD=zodbshootout
PG_DATABASES=(zodbshootout_pg zodbshootout_pg_pcache)
MYSQL_DATABASES=(zodbshootout_mysql zodbshootout_mysql_mc)
WAIT_SECONDS=30

failed=0
say() { printf 'provision: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; failed=1; }
have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
# systemd only manages services when it is PID 1 (not in most containers).
under_systemd() { [ -d /run/systemd/system ]; }

listening() {
    # A subshell, so the descriptor closes; timeout, so a filtered port can't hang us.
    timeout 2 bash -c "exec 3<>/dev/tcp/${2:-$HOST}/$1" 2>/dev/null
}

wait_for_port() {
    local port=$1 host=${2:-$HOST} i
    for ((i = 0; i < WAIT_SECONDS; i++)); do
        listening "$port" "$host" && return 0
        sleep 1
    done
    return 1
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
postgres_server_installed() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }
mysql_server_binary() {
    local b
    for b in /usr/sbin/mariadbd /usr/sbin/mysqld; do
        [ -x "$b" ] && { echo "$b"; return 0; }
    done
    return 1
}
mysql_client() {
    if have mariadb; then echo mariadb; elif have mysql; then echo mysql; else return 1; fi
}

# --- packages ---------------------------------------------------------------

install_packages() {
    local wanted=(memcached libmemcached-dev libmariadb-dev pkg-config iproute2 chromium) missing=() p
    if ! postgres_server_installed && ! listening "$PG_PORT"; then
        wanted+=(postgresql)
    elif ! have psql; then
        wanted+=(postgresql-client)
    fi
    if ! mysql_server_binary >/dev/null && ! listening "$MYSQL_PORT"; then
        wanted+=(mariadb-server)
    elif ! mysql_client >/dev/null; then
        wanted+=(mariadb-client)
    fi
    if have dpkg-query; then
        for p in "${wanted[@]}"; do installed "$p" || missing+=("$p"); done
    else
        missing=("${wanted[@]}")
    fi
    if [ ${#missing[@]} -eq 0 ]; then
        say "packages: all present"
        return
    fi
    if ! have apt-get; then
        say "packages: no apt-get; install these yourself: ${missing[*]}"
        return
    fi
    if ! is_root; then
        say "packages: not root; skipped installing: ${missing[*]}"
        return
    fi
    say "packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        >/dev/null; then
        say "packages: installed ${missing[*]}"
    else
        fail "apt-get could not install ${missing[*]}"
    fi
}

# --- servers ----------------------------------------------------------------

# The addresses something listens on at TCP *port*, one a line (ss prints 0.0.0.0 as *).
listen_addresses() {
    have ss || return 0
    ss -Hltn "sport = :$1" 2>/dev/null | awk '{ sub(/:[0-9]+$/, "", $4); print $4 }'
}

# Stop the memcached listening on TCP *port* (by its PID); false if none or not memcached.
stop_memcached_on() {
    have ss || return 1
    local pid
    pid=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = memcached ] || return 1
    kill "$pid" || return 1
    for _ in $(seq 50); do
        [ -z "$(listen_addresses "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

start_memcached() {
    # Where to reach it: 0.0.0.0 means every address, 127.0.0.1 among them.
    local probe=$MEMCACHED_LISTEN
    [ "$probe" = 0.0.0.0 ] && probe=$HOST
    if listening "$MEMCACHED_PORT" "$probe"; then
        local bound
        bound=$(listen_addresses "$MEMCACHED_PORT" | tr '\n' ' ')
        if [ "$MEMCACHED_LISTEN" != "$HOST" ] && [ -n "$bound" ] \
            && ! grep -qwF -e "$MEMCACHED_LISTEN" -e '*' -e '0.0.0.0' <<<"$bound"; then
            # The benchmark's own port: a memcached there is one this script started.
            if ! stop_memcached_on "$MEMCACHED_PORT"; then
                fail "memcached on port $MEMCACHED_PORT listens on ${bound% } only, not on" \
                    "$MEMCACHED_LISTEN: stop it (kill its PID) and run this again"
                return
            fi
            say "memcached: stopped the one on ${bound% }:$MEMCACHED_PORT, to listen on" \
                "$MEMCACHED_LISTEN"
        else
            say "memcached: already listening on port $MEMCACHED_PORT"
            return
        fi
    fi
    if ! have memcached; then
        say "memcached: not installed; skipped"
        return
    fi
    local as_user=()
    # memcached refuses to run as root unless told which user to become.
    if is_root; then
        if id memcache >/dev/null 2>&1; then as_user=(-u memcache); else as_user=(-u nobody); fi
    fi
    if memcached -d "${as_user[@]}" -l "$MEMCACHED_LISTEN" -p "$MEMCACHED_PORT" -m 256 \
        && wait_for_port "$MEMCACHED_PORT" "$probe"; then
        say "memcached: started on $MEMCACHED_LISTEN:$MEMCACHED_PORT"
    else
        fail "memcached did not start on $MEMCACHED_LISTEN:$MEMCACHED_PORT"
    fi
}

start_postgresql() {
    if listening "$PG_PORT"; then
        say "postgresql: already running on $HOST:$PG_PORT"
        return
    fi
    if ! postgres_server_installed; then
        say "postgresql: server not installed; skipped"
        return
    fi
    if ! is_root; then
        say "postgresql: not running, and starting it needs root; skipped"
        return
    fi
    local version
    version=$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null \
        | sort -V | tail -n 1) || true
    if under_systemd; then
        systemctl start postgresql || true
    elif [ -n "$version" ] && [ -d "/etc/postgresql/$version/main" ]; then
        pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    else
        version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V \
            | tail -n 1) || true
        pg_createcluster --start "$version" main >/dev/null || true
    fi
    if wait_for_port "$PG_PORT"; then
        say "postgresql: started ${version:+$version/main }on $HOST:$PG_PORT"
    else
        fail "postgresql did not answer on $HOST:$PG_PORT within ${WAIT_SECONDS}s"
    fi
}

start_mysql() {
    if listening "$MYSQL_PORT"; then
        say "mariadb: already running on $HOST:$MYSQL_PORT"
        return
    fi
    local server
    if ! server=$(mysql_server_binary); then
        say "mariadb: server not installed; skipped"
        return
    fi
    if ! is_root; then
        say "mariadb: not running, and starting it needs root; skipped"
        return
    fi
    if under_systemd; then
        systemctl start mariadb 2>/dev/null || systemctl start mysql || true
    else
        # /run is a tmpfs: after a container restart the socket directory is gone.
        install -d -o mysql -g mysql /run/mysqld
        if [ ! -d /var/lib/mysql/mysql ] && have mariadb-install-db; then
            mariadb-install-db --user=mysql >/dev/null || true
        fi
        start-stop-daemon --start --oknodo --background --chuid mysql --exec "$server" || true
    fi
    if wait_for_port "$MYSQL_PORT"; then
        say "mariadb: started $server on $HOST:$MYSQL_PORT"
    else
        fail "$server did not answer on $HOST:$MYSQL_PORT within ${WAIT_SECONDS}s"
    fi
}

# --- databases and users ----------------------------------------------------

# Runs SQL as the PostgreSQL superuser: over TCP where trust (or PGPASSWORD) allows it,
# else through the postgres account's peer authentication.
pg_sql() {
    if psql -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -w -Atqc 'SELECT 1' \
        >/dev/null 2>&1; then
        psql -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -w -v ON_ERROR_STOP=1 -Atqc "$1"
    elif is_root && have runuser; then
        runuser -u postgres -- psql -p "$PG_PORT" -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"
    else
        return 1
    fi
}

provision_postgresql() {
    if ! listening "$PG_PORT"; then
        say "postgresql databases: server not running; skipped"
        return
    fi
    if ! have psql; then
        say "postgresql databases: no psql client; skipped"
        return
    fi
    if ! pg_sql 'SELECT 1' >/dev/null 2>&1; then
        fail "postgresql: cannot connect as superuser postgres (set PGPASSWORD?)"
        return
    fi
    local db
    if [ "$(pg_sql "SELECT 1 FROM pg_roles WHERE rolname = '$NAME'")" = 1 ]; then
        say "postgresql: role $NAME exists"
    elif pg_sql "CREATE ROLE $NAME LOGIN PASSWORD '$PASSWORD'" >/dev/null; then
        say "postgresql: created role $NAME"
    else
        fail "postgresql: could not create role $NAME"
        return
    fi
    for db in "${PG_DATABASES[@]}"; do
        if [ "$(pg_sql "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ]; then
            say "postgresql: database $db exists"
        elif pg_sql "CREATE DATABASE $db OWNER $NAME" >/dev/null; then
            say "postgresql: created database $db owned by $NAME"
        else
            fail "postgresql: could not create database $db"
        fi
    done
}

# Runs SQL as MariaDB's root: by unix socket (Debian's default for root), else over TCP;
# MYSQL_PWD in the environment supplies a root password where one is set.
mysql_sql() {
    local client
    client=$(mysql_client) || return 1
    if "$client" -uroot -Nse 'SELECT 1' >/dev/null 2>&1; then
        "$client" -uroot -Nse "$1"
    else
        "$client" -uroot -h "$HOST" -P "$MYSQL_PORT" -Nse "$1"
    fi
}

provision_mysql() {
    if ! listening "$MYSQL_PORT"; then
        say "mariadb databases: server not running; skipped"
        return
    fi
    if ! mysql_client >/dev/null; then
        say "mariadb databases: no mariadb/mysql client; skipped"
        return
    fi
    if ! mysql_sql 'SELECT 1' >/dev/null 2>&1; then
        fail "mariadb: cannot connect as root (set MYSQL_PWD?)"
        return
    fi
    local host db
    for host in localhost 127.0.0.1 %; do
        if [ "$(mysql_sql "SELECT COUNT(*) FROM mysql.user
                           WHERE user = '$NAME' AND host = '$host'")" != 0 ]; then
            say "mariadb: user '$NAME'@'$host' exists"
        elif mysql_sql "CREATE USER '$NAME'@'$host' IDENTIFIED BY '$PASSWORD'"; then
            say "mariadb: created user '$NAME'@'$host'"
        else
            fail "mariadb: could not create user '$NAME'@'$host'"
        fi
    done
    for db in "${MYSQL_DATABASES[@]}"; do
        local state=exists
        if [ "$(mysql_sql "SELECT COUNT(*) FROM information_schema.schemata
                           WHERE schema_name = '$db'")" = 0 ]; then
            if ! mysql_sql "CREATE DATABASE $db"; then
                fail "mariadb: could not create database $db"
                continue
            fi
            state=created
        fi
        # GRANT is idempotent; repeating it repairs privileges someone revoked.
        for host in localhost 127.0.0.1 %; do
            mysql_sql "GRANT ALL PRIVILEGES ON $db.* TO '$NAME'@'$host'" \
                || fail "mariadb: could not grant $db to '$NAME'@'$host'"
        done
        say "mariadb: database $db $state, all privileges granted to $NAME"
    done
}

install_packages
start_memcached
start_postgresql
start_mysql
provision_postgresql
provision_mysql

if [ "$failed" -ne 0 ]; then
    say "done, with failures (see above)"
    exit 1
fi
say "done"
