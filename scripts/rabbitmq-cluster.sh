#!/usr/bin/env bash
# A two-node RabbitMQ cluster with the MQTT plugin on this machine, for testing ldpfleet
# against a clustered broker. Runs as the current user, without systemd, next to (never
# touching) a system RabbitMQ node: own node names, ports, cookie and data directories.
#
#   scripts/rabbitmq-cluster.sh start    # fresh cluster (old data wiped); idempotent
#   scripts/rabbitmq-cluster.sh stop     # stops both nodes; nothing left running
#   scripts/rabbitmq-cluster.sh status   # per-node state and cluster membership
#   scripts/rabbitmq-cluster.sh urls     # mqtt://127.0.0.1:<port>, one per node
#
# Environment (defaults in brackets):
#   LDPFLEET_RABBIT_BASE          base dir: cookie, per-node config/data/logs [/tmp/ldpfleet-rabbit]
#   LDPFLEET_RABBIT_MQTT_PORT_A   MQTT listener of node a [1884]
#   LDPFLEET_RABBIT_MQTT_PORT_B   MQTT listener of node b [1885]
#   LDPFLEET_RABBIT_AMQP_PORT_A   AMQP listener of node a [5682]
#   LDPFLEET_RABBIT_AMQP_PORT_B   AMQP listener of node b [5683]
#   LDPFLEET_RABBIT_DIST_PORT_A   Erlang distribution port of node a [25682]
#   LDPFLEET_RABBIT_DIST_PORT_B   Erlang distribution port of node b [25683]
#   LDPFLEET_RABBIT_NODE_A        Erlang node name of node a [ldpfleet-a@localhost]
#   LDPFLEET_RABBIT_NODE_B        Erlang node name of node b [ldpfleet-b@localhost]
#   LDPFLEET_RABBIT_START_TIMEOUT seconds to wait for the cluster to come up [120]
#   LDPFLEET_RABBIT_STOP_TIMEOUT  seconds to wait for each node to stop [60]
#   LDPFLEET_RABBIT_SBIN          directory of the real RabbitMQ scripts [/usr/lib/rabbitmq/bin]
#
# All listeners bind 127.0.0.1. MQTT clients without credentials log in as guest/guest
# (mqtt.allow_anonymous, the plugin's default user; guest may connect over loopback only).
set -euo pipefail

BASE=${LDPFLEET_RABBIT_BASE:-/tmp/ldpfleet-rabbit}
MQTT_PORT_A=${LDPFLEET_RABBIT_MQTT_PORT_A:-1884}
MQTT_PORT_B=${LDPFLEET_RABBIT_MQTT_PORT_B:-1885}
AMQP_PORT_A=${LDPFLEET_RABBIT_AMQP_PORT_A:-5682}
AMQP_PORT_B=${LDPFLEET_RABBIT_AMQP_PORT_B:-5683}
DIST_PORT_A=${LDPFLEET_RABBIT_DIST_PORT_A:-25682}
DIST_PORT_B=${LDPFLEET_RABBIT_DIST_PORT_B:-25683}
START_TIMEOUT=${LDPFLEET_RABBIT_START_TIMEOUT:-120}
STOP_TIMEOUT=${LDPFLEET_RABBIT_STOP_TIMEOUT:-60}
# The /usr/sbin wrappers of the Debian package re-run everything as user rabbitmq via su
# (dropping our environment and HOME); the scripts they wrap take RABBITMQ_* as given.
SBIN=${LDPFLEET_RABBIT_SBIN:-/usr/lib/rabbitmq/bin}
# short names @localhost: resolvable here without DNS (/etc/hosts), like the system node's
NODE_A=${LDPFLEET_RABBIT_NODE_A:-ldpfleet-a@localhost}
NODE_B=${LDPFLEET_RABBIT_NODE_B:-ldpfleet-b@localhost}
CTL_TIMEOUT=30 # seconds for one rabbitmqctl call

die() {
    echo "rabbitmq-cluster: $*" >&2
    exit 1
}
say() { echo "rabbitmq-cluster: $*"; }
elapsed() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }'; }

case "$BASE" in
/ | "") die "refusing base dir '$BASE'" ;;
esac

node_name() { if [ "$1" = a ]; then echo "$NODE_A"; else echo "$NODE_B"; fi; }
mqtt_port() { if [ "$1" = a ]; then echo "$MQTT_PORT_A"; else echo "$MQTT_PORT_B"; fi; }
amqp_port() { if [ "$1" = a ]; then echo "$AMQP_PORT_A"; else echo "$AMQP_PORT_B"; fi; }
dist_port() { if [ "$1" = a ]; then echo "$DIST_PORT_A"; else echo "$DIST_PORT_B"; fi; }

# Run a command with node $1's RABBITMQ_* environment. HOME is the base dir, so the
# server and the CLI both read the shared cookie from $BASE/.erlang.cookie.
with_env() {
    local n=$1
    shift
    local dir=$BASE/$n
    env HOME="$BASE" \
        RABBITMQ_NODENAME="$(node_name "$n")" \
        RABBITMQ_USE_LONGNAME=false \
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT="$(amqp_port "$n")" \
        RABBITMQ_DIST_PORT="$(dist_port "$n")" \
        RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
        RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
        RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
        RABBITMQ_MNESIA_BASE="$dir/mnesia" \
        RABBITMQ_LOG_BASE="$dir/log" \
        RABBITMQ_PID_FILE="$dir/rabbitmq.pid" \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        ERL_EPMD_ADDRESS=127.0.0.1 \
        "$@"
}

ctl() { # ctl a|b ARGS...: rabbitmqctl against node a or b, bounded in time
    local n=$1
    shift
    # (the CLI is an Erlang VM too: a crash dump goes to the base dir, not the caller's cwd)
    with_env "$n" ERL_CRASH_DUMP="$BASE/erl_crash.dump" \
        timeout "$CTL_TIMEOUT" "$SBIN/rabbitmqctl" -n "$(node_name "$n")" "$@"
}

ensure_cookie() { # the base dir and the cookie both nodes and the CLI read (via HOME)
    mkdir -p "$BASE"
    if [ ! -s "$BASE/.erlang.cookie" ]; then
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F >"$BASE/.erlang.cookie")
    fi
    chmod 400 "$BASE/.erlang.cookie"
}

node_up() { ctl "$1" ping >/dev/null 2>&1; } # the node answers (the app may be stopped)

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

beam_pid() { # OS pid of node $1's Erlang VM, if it is running
    local file=$BASE/$1/rabbitmq.pid pid
    [ -s "$file" ] || return 1
    pid=$(tr -dc 0-9 <"$file")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

running_nodes() { # the running nodes node $1 sees in its cluster, one per line
    ctl "$1" cluster_status --formatter json 2>/dev/null |
        python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin).get("running_nodes", [])))'
}

cluster_healthy() {
    local running
    node_up a && node_up b || return 1
    tcp_open "$MQTT_PORT_A" && tcp_open "$MQTT_PORT_B" || return 1
    running=$(running_nodes a) || return 1
    grep -qx "$NODE_A" <<<"$running" && grep -qx "$NODE_B" <<<"$running"
}

write_node_files() {
    local n=$1 dir=$BASE/$1
    mkdir -p "$dir/mnesia" "$dir/log"
    : >"$dir/rabbitmq-env.conf" # instead of /etc/rabbitmq/rabbitmq-env.conf (system node's)
    echo '[rabbitmq_mqtt].' >"$dir/enabled_plugins"
    echo '[].' >"$dir/advanced.config"
    cat >"$dir/rabbitmq.conf" <<EOF
# node $(node_name "$n"), written by scripts/rabbitmq-cluster.sh
listeners.tcp.1 = 127.0.0.1:$(amqp_port "$n")
mqtt.listeners.tcp.1 = 127.0.0.1:$(mqtt_port "$n")
# clients without credentials log in as guest; guest is limited to loopback connections,
# and every listener here binds 127.0.0.1
mqtt.allow_anonymous = true
mqtt.default_user = guest
mqtt.default_pass = guest
mqtt.vhost = /
mqtt.exchange = amq.topic
# clean_session=false subscriptions are durable queues of this type (classic: lives on
# the node the client was connected to when it subscribed)
mqtt.durable_queue_type = classic
mqtt.subscription_ttl = 86400000
log.file.level = info
log.console = false
EOF
}

start_node() { # start node $1 in the background (its own session; output to its log dir)
    local n=$1 dir=$BASE/$1
    say "starting $(node_name "$n") (AMQP $(amqp_port "$n"), MQTT $(mqtt_port "$n"), dist $(dist_port "$n"))"
    with_env "$n" setsid nohup "$SBIN/rabbitmq-server" >"$dir/log/server.out" 2>&1 </dev/null &
    echo $! >"$dir/wrapper.pid"
}

await_node() { # wait (bounded by the deadline) until node $1's app runs
    local n=$1 deadline=$2
    while :; do
        if ctl "$n" await_startup --timeout 5 >/dev/null 2>&1; then return 0; fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            tail -n 20 "$BASE/$n/log/server.out" >&2 || true
            die "$(node_name "$n") did not start within ${START_TIMEOUT}s (logs: $BASE/$n/log)"
        fi
        if ! beam_pid "$n" >/dev/null && ! kill -0 "$(cat "$BASE/$n/wrapper.pid")" 2>/dev/null; then
            tail -n 20 "$BASE/$n/log/server.out" >&2 || true
            die "$(node_name "$n") exited during startup (logs: $BASE/$n/log)"
        fi
    done
}

check_ports_free() {
    local p node
    if command -v epmd >/dev/null; then
        for node in "$NODE_A" "$NODE_B"; do
            if epmd -names 2>/dev/null | grep -q "^name ${node%@*} at port"; then
                die "node name $node is already registered with epmd (another cluster with a different LDPFLEET_RABBIT_BASE? set LDPFLEET_RABBIT_NODE_A/B)"
            fi
        done
    fi
    for p in "$MQTT_PORT_A" "$MQTT_PORT_B" "$AMQP_PORT_A" "$AMQP_PORT_B" "$DIST_PORT_A" "$DIST_PORT_B"; do
        if tcp_open "$p"; then die "port $p on 127.0.0.1 is already in use (see the LDPFLEET_RABBIT_* ports)"; fi
    done
}

cmd_start() {
    [ -x "$SBIN/rabbitmq-server" ] || die "$SBIN/rabbitmq-server not found (apt-get install rabbitmq-server)"
    if cluster_healthy; then
        say "already running: $NODE_A and $NODE_B clustered, MQTT on $MQTT_PORT_A and $MQTT_PORT_B"
        return 0
    fi
    if beam_pid a >/dev/null || beam_pid b >/dev/null || node_up a || node_up b; then
        say "a node is running but the cluster is not complete: restarting both"
        cmd_stop
    fi
    check_ports_free
    local t0 deadline
    t0=$(date +%s.%N)
    deadline=$(($(date +%s) + START_TIMEOUT))
    # a fresh cluster every time: no stale membership, queues or sessions
    rm -rf "${BASE:?}/a" "${BASE:?}/b"
    write_node_files a
    write_node_files b
    start_node a
    start_node b
    await_node a "$deadline"
    await_node b "$deadline"
    say "joining $NODE_B to $NODE_A"
    ctl b stop_app >/dev/null
    ctl b join_cluster "$NODE_A" >/dev/null
    ctl b start_app >/dev/null
    until cluster_healthy; do
        [ "$(date +%s)" -lt "$deadline" ] || die "cluster not complete within ${START_TIMEOUT}s: $(running_nodes a | tr '\n' ' ')"
        ctl b await_startup --timeout 5 >/dev/null 2>&1 || true
    done
    say "started in $(elapsed "$t0")s: $NODE_A (pid $(beam_pid a)) + $NODE_B (pid $(beam_pid b))"
    cmd_urls
}

stop_one() { # stop node $1: rabbitmqctl stop, then signals, all bounded
    local n=$1 pid wrapper deadline
    pid=$(beam_pid "$n" || true)
    wrapper=$(cat "$BASE/$n/wrapper.pid" 2>/dev/null || true)
    if node_up "$n"; then
        say "stopping $(node_name "$n")"
        ctl "$n" stop >/dev/null 2>&1 || true
    fi
    deadline=$(($(date +%s) + STOP_TIMEOUT))
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            say "$(node_name "$n") (pid $pid) still running after ${STOP_TIMEOUT}s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    # the rabbitmq-server shell wrapper exits with its VM; make sure it is gone
    if [ -n "$wrapper" ] && kill -0 "$wrapper" 2>/dev/null; then
        kill -TERM "$wrapper" 2>/dev/null || true
    fi
    rm -f "$BASE/$n/wrapper.pid"
}

cmd_stop() {
    local t0
    t0=$(date +%s.%N)
    # b first: a node that is stopped last must be started first when data is kept
    stop_one b
    stop_one a
    if beam_pid a >/dev/null || beam_pid b >/dev/null; then die "a node is still running"; fi
    say "stopped (in $(elapsed "$t0")s)"
}

cmd_status() {
    local n rc=0
    for n in a b; do
        if node_up "$n"; then
            say "$(node_name "$n"): up (pid $(beam_pid "$n" || echo '?')), MQTT $(mqtt_port "$n") $(tcp_open "$(mqtt_port "$n")" && echo open || echo closed)"
        else
            say "$(node_name "$n"): down"
            rc=3
        fi
    done
    if [ "$rc" = 0 ]; then
        say "running cluster nodes (seen from a): $(running_nodes a | tr '\n' ' ')"
        cluster_healthy || rc=3
    fi
    return "$rc"
}

cmd_urls() {
    echo "mqtt://127.0.0.1:$MQTT_PORT_A"
    echo "mqtt://127.0.0.1:$MQTT_PORT_B"
}

case "${1:-}" in
start) ensure_cookie && cmd_start ;;
stop) ensure_cookie && cmd_stop ;;
status) ensure_cookie && cmd_status ;;
urls) cmd_urls ;;
*)
    echo "usage: $0 start|stop|status|urls" >&2
    exit 2
    ;;
esac
