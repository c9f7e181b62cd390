#!/usr/bin/env bash
# The failover drill: a three-node Patroni cluster (up.sh), one ReceiptGate on it, 32 connections
# verifying fresh purchases (each one a webhook to a receiver on loopback) and 4 reading what players
# own (from the standby, DATABASE_READ_URL); the leader's Patroni
# and postmaster are killed with SIGKILL. Prints
# the figures as one JSON line (recovery_seconds, acknowledged, acknowledged_lost, ...) and exits
# 1 if any check failed. Everything is stopped at the end; DIR keeps the logs.
#
#   Deploy/ha/drill.sh DIR     (RECEIPTGATE_BIN_DIR: where receiptgate and receiptgate-bench are,
#                               default .build/release; RECEIPTGATE_HA_PORT_BASE as for up.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[ $# -eq 1 ] || ha_fail "usage: drill.sh DIR"
mkdir -p "$1"
dir=$(cd "$1" && pwd)
bin=$(cd "${RECEIPTGATE_BIN_DIR:-$here/../../.build/release}" && pwd)
[ -x "$bin/receiptgate" ] && [ -x "$bin/receiptgate-bench" ] || ha_fail "build first: swift build -c release"

service_pid=
cleanup() {
    if ha_alive "$service_pid"; then
        kill -TERM "$service_pid"
        wait "$service_pid" 2>/dev/null || true
    fi
    "$here/down.sh" "$dir"
}
trap cleanup EXIT

mkdir -p "$dir"
"$here/up.sh" "$dir" >"$dir/up.log"
summary_field() { tail -n1 "$dir/up.log" | "$ha_venv/bin/python" -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
database_url=$(summary_field database_url)

# Fresh purchases signed by a test PKI, and the service told to trust its root.
"$bin/receiptgate-bench" jws --count "${RECEIPTGATE_DRILL_PURCHASES:-60000}" --owned 16 --seconds 0 --write-corpus "$dir/corpus" >/dev/null
openssl x509 -inform der -in "$dir/corpus/root.der" -out "$dir/corpus/root.pem"
free_port() { "$ha_venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port) webhook_port=$(free_port)
export DATABASE_URL=$database_url DATABASE_READ_URL=$(summary_field database_read_url) RECEIPTGATE_MASTER_KEY=$(openssl rand -base64 32) RECEIPTGATE_DATA_DIR=$dir/service
export RECEIPTGATE_PORT=$port RECEIPTGATE_APPLE_ROOT_CERTS=$dir/corpus/root.pem RECEIPTGATE_LOG_LEVEL=warning
export RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE=on  # the webhook receiver is on loopback
"$bin/receiptgate" serve 2>"$dir/service.log" &
service_pid=$!
deadline=$((SECONDS + 60))
until curl -fsS --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    ha_alive "$service_pid" || ha_fail "receiptgate exited (see $dir/service.log)"
    [ $SECONDS -lt $deadline ] || ha_fail "receiptgate not ready within 60 s (see $dir/service.log)"
    sleep 0.2
done
(umask 077; "$bin/receiptgate" client create --name drill --bundle-id com.example.game \
    --environments production,sandbox --webhook-url "http://127.0.0.1:$webhook_port/receiptgate" --allow-insecure-url \
    >"$dir/client.json")
# The corpus's non-consumable grants `season_pass`: entitlement reads run through the drill too.
client_id=$("$ha_venv/bin/python" -c "import json, sys; print(json.load(open(sys.argv[1]))['client_id'])" "$dir/client.json")
"$bin/receiptgate" products set --client "$client_id" --store app_store --product-id pass.season --entitlement season_pass >/dev/null

"$ha_venv/bin/python" -B "$here/drill.py" --dir "$dir" --summary "$dir/up.log" --client "$dir/client.json" \
    --tokens "$dir/corpus/tokens.txt" --owned "$dir/corpus/owned.txt" --port "$port" --webhook-port "$webhook_port"
