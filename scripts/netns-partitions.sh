#!/usr/bin/env bash
# A partitioned run on six test hosts of this machine (docs/separate-hosts.md, "Partitions
# on separate hosts"): the embedded broker, the coordinator, two collector partition workers
# and two fleet shards, each in a network namespace of its own (scripts/netns-hosts.sh),
# each working in its own directory WORK/host-NAME with its own copy of the deployment's
# files; then the documented gather step: the five run directories copied to WORK/gathered,
# `ldpfleet merge`d into WORK/gathered/merged and checked with `ldpfleet trace verify`.
#
#   scripts/netns-partitions.sh WORK [SCENARIO]      # plain mqtt:// between the hosts
#   LDPFLEET_TLS=1 scripts/netns-partitions.sh WORK  # mqtts:// with client certificates
#
# SCENARIO (default: the built-in quickstart) gets `[collector] partitions = 2` unless it
# has a partition count already (then it must be 2). WORK must not exist. The hosts are
# removed at the end, also on failure. Needs root (CAP_NET_ADMIN), iproute2 and ldpfleet on
# PATH. LDPFLEET_NETNS_PREFIX / LDPFLEET_NETNS_SUBNET as for scripts/netns-hosts.sh.
set -euo pipefail

WORK=${1:?usage: $0 WORK [SCENARIO]}
SCENARIO=${2:-$(python -c "from importlib.resources import files; print(files('ldpfleet.scenarios') / 'quickstart.toml')")}
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTS=(broker coordinator part0 part1 fleet0 fleet1)
PORT=1884
RUN=${LDPFLEET_RUN:-parts-$(date +%s)}
TLS=${LDPFLEET_TLS:-0}
netns() { bash "$HERE/netns-hosts.sh" "$@"; }
say() { echo "netns-partitions: $*"; }

[ -e "$WORK" ] && { echo "netns-partitions: $WORK exists; give a new directory" >&2; exit 2; }
mkdir -p "$WORK/deploy"
WORK=$(cd "$WORK" && pwd)

# 1. the deployment's files, made once: scenario, the run's credentials (+ certificates)
if grep -q '^partitions *=' "$SCENARIO"; then
    cp "$SCENARIO" "$WORK/deploy/scenario.toml"
else
    sed 's/^\[fleet\]$/[collector]\npartitions = 2\n\n[fleet]/' "$SCENARIO" >"$WORK/deploy/scenario.toml"
fi
grep -q '^partitions = 2$' "$WORK/deploy/scenario.toml" || {
    echo "netns-partitions: the scenario must have [collector] partitions = 2 (or none)" >&2
    exit 2
}

netns up "${HOSTS[@]}"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; netns down "${HOSTS[@]}"' EXIT
BROKER=$(netns addr broker)
(cd "$WORK/deploy" && ldpfleet mosquitto-config scenario.toml --out conf --run "$RUN" \
    --host "$BROKER" --port "$PORT" >/dev/null)
URL="mqtt://$BROKER:$PORT"
BROKER_TLS=()
if [ "$TLS" = 1 ]; then
    (cd "$WORK/deploy" && ldpfleet certs --out pki --host "$BROKER" >/dev/null)
    URL="mqtts://$BROKER:$PORT?ca=pki/ca.pem"
    BROKER_TLS=(--tls-cert pki/server.pem --tls-key pki/server.key --tls-ca pki/ca.pem)
    export LDPFLEET_TLS_CERT=pki/client.pem LDPFLEET_TLS_KEY=pki/client.key
fi

# 2. hand every host its copy (a real deployment copies them with scp or a config tool)
for host in "${HOSTS[@]}"; do
    mkdir -p "$WORK/host-$host"
    cp "$WORK/deploy/scenario.toml" "$WORK/deploy/conf/credentials.json" "$WORK/host-$host/"
    if [ "$TLS" = 1 ]; then
        mkdir -p "$WORK/host-$host/pki"
        cp "$WORK/deploy/pki/ca.pem" "$WORK/deploy/pki/client.pem" "$WORK/deploy/pki/client.key" \
            "$WORK/host-$host/pki/"
    fi
done
cp "$WORK/deploy/pki/server.pem" "$WORK/deploy/pki/server.key" "$WORK/host-broker/pki/" \
    2>/dev/null || true

# 3. each piece on its host, in its own directory
on() { # on HOST CMD... &: CMD on HOST in WORK/host-HOST, output in WORK/HOST.log (the job's
    # pid is CMD's own: the background subshell becomes it, so the exit trap stops it)
    local host=$1
    shift
    cd "$WORK/host-$host"
    exec bash "$HERE/netns-hosts.sh" exec "$host" "$@" >"$WORK/$host.log" 2>&1
}
on broker ldpfleet broker --host "$BROKER" --port "$PORT" --credentials credentials.json \
    "${BROKER_TLS[@]}" &
for _ in $(seq 600); do grep -q "listening on" "$WORK/broker.log" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/broker.log" || { cat "$WORK/broker.log" >&2; exit 1; }
say "broker on $URL"
SIDE=(scenario.toml --broker "$URL" --run "$RUN" --credentials credentials.json --out run)
pids=()
on coordinator ldpfleet collector "${SIDE[@]}" --coordinator & pids+=($!)
on part0 ldpfleet collector "${SIDE[@]}" --partition 0/2 & pids+=($!)
on part1 ldpfleet collector "${SIDE[@]}" --partition 1/2 & pids+=($!)
on fleet0 ldpfleet fleet "${SIDE[@]}" --shard 0/2 & pids+=($!)
on fleet1 ldpfleet fleet "${SIDE[@]}" --shard 1/2 & pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
[ "$status" = 0 ] || { tail -n 5 "$WORK"/*.log >&2; exit 1; }

# 4. the documented gather step: copy each host's run/ to one place, merge, verify
mkdir -p "$WORK/gathered"
for host in coordinator part0 part1 fleet0 fleet1; do
    cp -r "$WORK/host-$host/run" "$WORK/gathered/$host"
done
cd "$WORK/gathered"
ldpfleet merge coordinator part0 part1 fleet0 fleet1 --out merged
ldpfleet trace verify merged
say "merged run in $WORK/gathered/merged (report.html there)"
