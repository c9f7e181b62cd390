# Shared by up.sh, down.sh and drill.sh: where everything of one drill cluster lives, and how a
# node is started. Sourced, not run. Everything is on loopback; DIR holds all state.
#
#   DIR/ports            the port base this cluster was started with
#   DIR/etcd/            etcd's data, etcd.pid, etcd.log
#   DIR/nodeN/           patroni.yml, patroni.pid, patroni.log, data/ (PostgreSQL), socket
#   DIR/client.pgpass    the application role's password (libpq passfile, mode 0600)

ha_venv=${RECEIPTGATE_HA_VENV:-/opt/receiptgate-patroni}
ha_pg_bin=${RECEIPTGATE_HA_PG_BIN:-/usr/lib/postgresql/15/bin}
ha_nodes=(node1 node2 node3)

ha_fail() { echo "ha: $*" >&2; exit 1; }

# Ports from a base: PostgreSQL base+1..3, Patroni REST base+11..13, etcd client base+20, peer base+21.
ha_ports() {
    ha_base=$1
    etcd_port=$((ha_base + 20))
    etcd_peer_port=$((ha_base + 21))
}
pg_port() { echo $((ha_base + $1)); }
rest_port() { echo $((ha_base + 10 + $1)); }

# Patroni and initdb refuse to run as root: as root, everything runs as `postgres`, from `/`
# (the caller's directory may be root's home, which `postgres` cannot enter, and Patroni's
# worker processes start by changing into it). A prefix, not a function, so that
# `"${ha_owner[@]}" command &` leaves the command's own pid in $!. Paths given to it are absolute.
ha_owner=()
[ "$(id -u)" != 0 ] || ha_owner=(setpriv --reuid postgres --regid postgres --init-groups -- env --chdir=/)

ha_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Starts node N's Patroni in the background (it starts, or creates, its PostgreSQL).
ha_start_node() {
    local dir=$1 index=$2 name=${ha_nodes[$(($2 - 1))]}
    "${ha_owner[@]}" setsid "$ha_venv/bin/patroni" "$dir/$name/patroni.yml" >>"$dir/$name/patroni.log" 2>&1 </dev/null &
    echo $! >"$dir/$name/patroni.pid"
}

ha_postmaster_pid() {
    local file=$1/data/postmaster.pid
    [ -r "$file" ] && head -n1 "$file" || true
}

# The cluster as Patroni's REST API of any answering node reports it (JSON), or nothing.
ha_cluster_json() {
    local dir=$1 index
    for index in 1 2 3; do
        if curl -fsS --max-time 2 "http://127.0.0.1:$(rest_port "$index")/cluster" 2>/dev/null; then return 0; fi
    done
    return 1
}

# Waits (up to $2 seconds) until a running leader has a streaming synchronous standby.
ha_wait_leader_and_sync() {
    local dir=$1 deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        if ha_cluster_json "$dir" | "$ha_venv/bin/python" -c '
import json, sys
members = json.load(sys.stdin)["members"]
roles = {(m["role"], m["state"]) for m in members}
ok = ("leader", "running") in roles and ("sync_standby", "streaming") in roles
sys.exit(0 if ok else 1)' 2>/dev/null; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# The leader's node name, or nothing.
ha_leader() {
    ha_cluster_json "$1" | "$ha_venv/bin/python" -c '
import json, sys
print(next((m["name"] for m in json.load(sys.stdin)["members"] if m["role"] == "leader"), ""))' 2>/dev/null || true
}
