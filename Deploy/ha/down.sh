#!/usr/bin/env bash
# Stops everything Deploy/ha/up.sh DIR started (Patroni, PostgreSQL, etcd), whatever state the
# drill left it in. Leaves DIR in place (remove it yourself). Safe to run twice.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[ $# -eq 1 ] || ha_fail "usage: down.sh DIR"
dir=$1
[ -d "$dir" ] || exit 0

# Sends SIGTERM to each pid, then waits up to $1 seconds, then SIGKILLs what is left.
stop_pids() {
    local grace=$1 pid deadline
    shift
    for pid in "$@"; do ha_alive "$pid" && kill -TERM "$pid" 2>/dev/null || true; done
    deadline=$((SECONDS + grace))
    for pid in "$@"; do
        while ha_alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
        ha_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    done
}

patroni_pids=() postmaster_pids=()
for name in "${ha_nodes[@]}"; do
    [ -d "$dir/$name" ] || continue
    patroni_pids+=("$(cat "$dir/$name/patroni.pid" 2>/dev/null || true)")
done
# Patroni stops its PostgreSQL on SIGTERM; a postmaster left behind (its Patroni killed) is stopped next.
stop_pids 30 "${patroni_pids[@]}"
for name in "${ha_nodes[@]}"; do
    [ -d "$dir/$name" ] || continue
    postmaster_pids+=("$(ha_postmaster_pid "$dir/$name")")
done
stop_pids 20 "${postmaster_pids[@]}"
stop_pids 10 "$(cat "$dir/etcd/etcd.pid" 2>/dev/null || true)"
echo "ha: stopped the cluster under $dir" >&2
