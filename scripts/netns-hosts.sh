#!/usr/bin/env bash
# Test hosts on this machine: network namespaces joined by a switch (docs/separate-hosts.md).
#
#   scripts/netns-hosts.sh up [HOST...]     create the hosts (default: broker collector fleet0 fleet1)
#   scripts/netns-hosts.sh down [HOST...]   remove them
#   scripts/netns-hosts.sh addr HOST        print a host's address
#   scripts/netns-hosts.sh exec HOST CMD... run CMD on HOST (ip netns exec)
#
# Each host is a namespace "ldp-HOST" with its own loopback and one veth link to a bridge
# that lives in its own namespace ("ldp-switch"), so nothing is routed through the machine's
# own network: the hosts reach each other on 10.77.0.0/24 and nothing else. Addresses follow
# the order of the names given to "up" (10.77.0.1, .2, ...); "addr" reads them back.
# Needs root (CAP_NET_ADMIN) and iproute2.
set -euo pipefail

PREFIX=${LDPFLEET_NETNS_PREFIX:-ldp}
SUBNET=${LDPFLEET_NETNS_SUBNET:-10.77.0}
SWITCH="$PREFIX-switch"
DEFAULT_HOSTS=(broker collector fleet0 fleet1)

up() {
    local hosts=("$@") i=1
    ip netns add "$SWITCH"
    ip -n "$SWITCH" link add br0 type bridge
    ip -n "$SWITCH" link set br0 up
    ip -n "$SWITCH" link set lo up
    for host in "${hosts[@]}"; do
        local ns="$PREFIX-$host" port="p$i"
        ip netns add "$ns"
        ip link add "$PREFIX-v$i" type veth peer name "$port"
        ip link set "$PREFIX-v$i" netns "$ns"
        ip link set "$port" netns "$SWITCH"
        ip -n "$SWITCH" link set "$port" master br0
        ip -n "$SWITCH" link set "$port" up
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "$PREFIX-v$i" name eth0
        ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        i=$((i + 1))
    done
}

down() {
    local hosts=("$@")
    for host in "${hosts[@]}"; do
        ip netns del "$PREFIX-$host" 2>/dev/null || true
    done
    ip netns del "$SWITCH" 2>/dev/null || true
}

addr() {
    ip -n "$PREFIX-$1" -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]}'
}

command=${1:-}
shift || true
case "$command" in
    up) if [ $# -eq 0 ]; then up "${DEFAULT_HOSTS[@]}"; else up "$@"; fi ;;
    down) if [ $# -eq 0 ]; then down "${DEFAULT_HOSTS[@]}"; else down "$@"; fi ;;
    addr) addr "$1" ;;
    exec) host=$1; shift; exec ip netns exec "$PREFIX-$host" "$@" ;;
    *) echo "usage: $0 up|down [HOST...] | addr HOST | exec HOST CMD..." >&2; exit 2 ;;
esac
