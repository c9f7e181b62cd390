#!/usr/bin/env bash
# What synchronous replication costs: the same load (receiptgate-bench verify, 32 connections,
# every purchase new, then every one again as a duplicate) against ReceiptGate on one PostgreSQL 15
# node, then on the three-node Patroni cluster of up.sh. Prints one line per setup.
#
#   Deploy/ha/throughput.sh DIR [PURCHASES]    (RECEIPTGATE_BIN_DIR, default .build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[ $# -ge 1 ] || ha_fail "usage: throughput.sh DIR [PURCHASES]"
dir=$1 purchases=${2:-60000}
bin=$(cd "${RECEIPTGATE_BIN_DIR:-$here/../../.build/release}" && pwd)
mkdir -p "$dir/single"
dir=$(cd "$dir" && pwd)
service_pid=
cleanup() {
    ! ha_alive "$service_pid" || { kill -TERM "$service_pid"; wait "$service_pid" 2>/dev/null || true; }
    [ ! -d "$dir/single/data" ] || "${ha_owner[@]}" "$ha_pg_bin/pg_ctl" -D "$dir/single/data" -m fast -w stop >/dev/null 2>&1 || true
    "$here/down.sh" "$dir/ha" 2>/dev/null || true
}
trap cleanup EXIT

free_port() { "$ha_venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts the service on $1, creates a client, runs the bench, stops the service.
measure() {
    local label=$1 url=$2 port key
    port=$(free_port)
    key=$(openssl rand -base64 32)
    DATABASE_URL=$url RECEIPTGATE_MASTER_KEY=$key RECEIPTGATE_DATA_DIR=$dir/$label-data \
        RECEIPTGATE_PORT=$port RECEIPTGATE_APPLE_ROOT_CERTS=$dir/corpus/root.pem RECEIPTGATE_LOG_LEVEL=warning \
        "$bin/receiptgate" serve 2>"$dir/$label-service.log" &
    service_pid=$!
    until curl -fsS --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
        ha_alive "$service_pid" || ha_fail "receiptgate exited (see $dir/$label-service.log)"
        sleep 0.2
    done
    local client
    client=$(DATABASE_URL=$url RECEIPTGATE_MASTER_KEY=$key "$bin/receiptgate" client create --name bench \
        --bundle-id com.example.game --environments sandbox 2>/dev/null || true)
    [ -n "$client" ] || ha_fail "client create failed"
    local id secret
    id=$(echo "$client" | sed -n 's/.*"client_id":"\([^"]*\)".*/\1/p')
    secret=$(echo "$client" | sed -n 's/.*"client_secret":"\([^"]*\)".*/\1/p')
    echo "$label: $("$bin/receiptgate-bench" verify --url "http://127.0.0.1:$port" --client-id "$id" --secret "$secret" \
        --file "$dir/corpus/tokens.txt" --concurrency 32 | tr '\n' ' ')"
    kill -TERM "$service_pid"
    wait "$service_pid" 2>/dev/null || true
}

"$bin/receiptgate-bench" jws --count "$purchases" --seconds 0 --write-corpus "$dir/corpus" >/dev/null
openssl x509 -inform der -in "$dir/corpus/root.der" -out "$dir/corpus/root.pem"

# One node: the same PostgreSQL settings as a Patroni node, without replication.
[ "$(id -u)" != 0 ] || chown postgres:postgres "$dir/single"
"${ha_owner[@]}" "$ha_pg_bin/initdb" -D "$dir/single/data" -U postgres -A trust --locale=C -E UTF8 >/dev/null
port=$(free_port)
"${ha_owner[@]}" "$ha_pg_bin/pg_ctl" -D "$dir/single/data" -o "-p $port -h 127.0.0.1 -k $dir/single -c max_connections=200" \
    -l "$dir/single/log" -w start >/dev/null
"${ha_owner[@]}" "$ha_pg_bin/psql" -X -q -h "$dir/single" -p "$port" -U postgres -c "CREATE DATABASE receiptgate"
measure single "postgresql://postgres@127.0.0.1:$port/receiptgate"
"${ha_owner[@]}" "$ha_pg_bin/pg_ctl" -D "$dir/single/data" -m fast -w stop >/dev/null

mkdir -p "$dir/ha"
"$here/up.sh" "$dir/ha" >"$dir/ha-up.log"
measure ha "$(tail -n1 "$dir/ha-up.log" | "$ha_venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["database_url"])')"
