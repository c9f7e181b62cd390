#!/usr/bin/env bash
# Starts a three-node PostgreSQL 15 cluster under Patroni, with etcd as its consensus store, all
# on loopback, everything kept under DIR. Waits until a leader and a synchronous standby are up,
# creates the `receiptgate` role and database, and prints as its last line one JSON object:
#   {"database_url": "<libpq multi-host URL>", "database_read_url": "<the same, preferring a standby>",
#    "nodes": [{"name", "patroni_url", "data_dir", "patroni_pid", "postmaster_pid"}, ...]}
# The URLs name a passfile under DIR, so they carry no password.
#
#   Deploy/ha/up.sh DIR            (RECEIPTGATE_HA_PORT_BASE, default 15400, picks the ports)
#   Deploy/ha/down.sh DIR          stops everything up.sh started
#
# Installs what is missing: Debian's etcd-server and PostgreSQL 15, and Patroni into a virtual
# environment made from Debian's /usr/bin/python3 (the `postgres` user runs it, so it cannot live
# under root's home).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[ $# -eq 1 ] || ha_fail "usage: up.sh DIR"
dir=$1

install_prerequisites() {
    local missing=() package
    for package in etcd-server postgresql-15 python3-venv curl; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        [ "$(id -u)" = 0 ] || ha_fail "missing Debian packages: ${missing[*]}; install them or run as root"
        echo "ha: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    fi
    if ! "$ha_venv/bin/patroni" --version >/dev/null 2>&1; then
        echo "ha: installing Patroni into $ha_venv" >&2
        /usr/bin/python3 -m venv "$ha_venv"
        "$ha_venv/bin/pip" install --quiet --disable-pip-version-check "patroni[etcd3,psycopg3]==4.0.7" >&2
    fi
}

random_password() { head -c 24 /dev/urandom | base64 | tr -d '/+='; }

write_node_config() {
    local index=$1 name=${ha_nodes[$(($1 - 1))]}
    mkdir -p "$dir/$name"
    sed -e "s|@NAME@|$name|g" -e "s|@DIR@|$dir|g" -e "s|@PG_BIN@|$ha_pg_bin|g" \
        -e "s|@REST_PORT@|$(rest_port "$index")|g" -e "s|@PG_PORT@|$(pg_port "$index")|g" \
        -e "s|@ETCD_PORT@|$etcd_port|g" -e "s|@SUPERUSER_PASSWORD@|$superuser_password|g" \
        -e "s|@REPLICATION_PASSWORD@|$replication_password|g" "$here/patroni.yml.in" >"$dir/$name/patroni.yml"
    chmod 0600 "$dir/$name/patroni.yml"
}

start_etcd() {
    "${ha_owner[@]}" setsid etcd --name receiptgate-ha --data-dir "$dir/etcd/data" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster "receiptgate-ha=http://127.0.0.1:$etcd_peer_port" >>"$dir/etcd/etcd.log" 2>&1 </dev/null &
    echo $! >"$dir/etcd/etcd.pid"
    local deadline=$((SECONDS + 30))
    until curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || ha_fail "etcd did not answer within 30 s (see $dir/etcd/etcd.log)"
        sleep 0.2
    done
}

# The application's role and database, created once on the leader over its socket.
create_application_database() {
    local leader=$1 socket=$dir/$1 port
    port=$(pg_port "${leader#node}")
    "${ha_owner[@]}" "$ha_pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$socket" -p "$port" -U postgres -d postgres \
        -v password="$application_password" >/dev/null <<'SQL'
SELECT format('CREATE ROLE receiptgate LOGIN PASSWORD %L', :'password') \gexec
CREATE DATABASE receiptgate OWNER receiptgate;
SQL
}

print_summary() {
    local hosts="" index name nodes=""
    for index in 1 2 3; do
        name=${ha_nodes[$((index - 1))]}
        hosts+="${hosts:+,}127.0.0.1:$(pg_port "$index")"
        nodes+="${nodes:+, }{\"name\": \"$name\", \"patroni_url\": \"http://127.0.0.1:$(rest_port "$index")\", \"data_dir\": \"$dir/$name/data\", \"patroni_pid\": $(cat "$dir/$name/patroni.pid"), \"postmaster_pid\": $(ha_postmaster_pid "$dir/$name")}"
    done
    local base="postgresql://receiptgate@$hosts/receiptgate?passfile=$dir/client.pgpass&connect_timeout=2"
    echo "{\"database_url\": \"$base&target_session_attrs=read-write\", \"database_read_url\": \"$base&target_session_attrs=prefer-standby\", \"nodes\": [$nodes]}"
}

install_prerequisites
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ ! -e "$dir/ports" ] || ha_fail "$dir already holds a cluster; run down.sh and remove it first"
ha_ports "${RECEIPTGATE_HA_PORT_BASE:-15400}"
echo "$ha_base" >"$dir/ports"
superuser_password=$(random_password)
replication_password=$(random_password)
application_password=$(random_password)
(umask 077; echo "127.0.0.1:*:*:receiptgate:$application_password" >"$dir/client.pgpass")
for index in 1 2 3; do write_node_config "$index"; done
mkdir -p "$dir/etcd"
[ "$(id -u)" != 0 ] || chown -R postgres:postgres "$dir"
chown "$(id -u):$(id -g)" "$dir/client.pgpass"

start_etcd
ha_start_node "$dir" 1
# The first node bootstraps the cluster; the others clone it once it leads.
deadline=$((SECONDS + 90))
until [ "$(ha_leader "$dir")" = node1 ]; do
    [ $SECONDS -lt $deadline ] || ha_fail "no leader within 90 s (see $dir/node1/patroni.log)"
    sleep 0.5
done
ha_start_node "$dir" 2
ha_start_node "$dir" 3
ha_wait_leader_and_sync "$dir" 120 || ha_fail "no synchronous standby within 120 s (see $dir/node*/patroni.log)"
create_application_database node1
for index in 2 3; do
    name=${ha_nodes[$((index - 1))]}
    deadline=$((SECONDS + 60))
    until [ -n "$(ha_postmaster_pid "$dir/$name")" ]; do
        [ $SECONDS -lt $deadline ] || ha_fail "$name has no postmaster"
        sleep 0.2
    done
done
print_summary
