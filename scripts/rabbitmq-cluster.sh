#!/usr/bin/env bash
# A two-node (or three-node) RabbitMQ cluster with the MQTT plugin on this machine, for
# testing ldpfleet against a clustered broker. Runs as the current user, without systemd, next to (never
# touching) a system RabbitMQ node: own node names, ports, cookie and data directories.
#
#   scripts/rabbitmq-cluster.sh start    # fresh cluster (old data wiped); idempotent
#   LDPFLEET_RABBIT_NODES=3 scripts/rabbitmq-cluster.sh start
#                                        # three nodes; a running two-node cluster gets
#                                        # node c joined to it (e.g. for the collector)
#   scripts/rabbitmq-cluster.sh stop     # stops every node; nothing left running
#   scripts/rabbitmq-cluster.sh status   # per-node state and cluster membership
#   scripts/rabbitmq-cluster.sh urls     # mqtt://127.0.0.1:<port>, one per node
#
# Environment (defaults in brackets):
#   LDPFLEET_RABBIT_NODES         nodes: 2 (a, b) or 3 (a, b, c) [2]
#   LDPFLEET_RABBIT_BASE          base dir: cookie, per-node config/data/logs [/tmp/ldpfleet-rabbit]
#   LDPFLEET_RABBIT_MQTT_PORT_A   MQTT listener of node a [1884]
#   LDPFLEET_RABBIT_MQTT_PORT_B   MQTT listener of node b [1885]
#   LDPFLEET_RABBIT_AMQP_PORT_A   AMQP listener of node a [5682]
#   LDPFLEET_RABBIT_AMQP_PORT_B   AMQP listener of node b [5683]
#   LDPFLEET_RABBIT_DIST_PORT_A   Erlang distribution port of node a [25682]
#   LDPFLEET_RABBIT_DIST_PORT_B   Erlang distribution port of node b [25683]
#   LDPFLEET_RABBIT_NODE_A        Erlang node name of node a [ldpfleet-a@localhost]
#   LDPFLEET_RABBIT_NODE_B        Erlang node name of node b [ldpfleet-b@localhost]
#   (node c: LDPFLEET_RABBIT_MQTT_PORT_C [1886], _AMQP_PORT_C [5684], _DIST_PORT_C [25684],
#    _NODE_C [ldpfleet-c@localhost])
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
MQTT_PORT_C=${LDPFLEET_RABBIT_MQTT_PORT_C:-1886}
AMQP_PORT_A=${LDPFLEET_RABBIT_AMQP_PORT_A:-5682}
AMQP_PORT_B=${LDPFLEET_RABBIT_AMQP_PORT_B:-5683}
AMQP_PORT_C=${LDPFLEET_RABBIT_AMQP_PORT_C:-5684}
DIST_PORT_A=${LDPFLEET_RABBIT_DIST_PORT_A:-25682}
DIST_PORT_B=${LDPFLEET_RABBIT_DIST_PORT_B:-25683}
DIST_PORT_C=${LDPFLEET_RABBIT_DIST_PORT_C:-25684}
START_TIMEOUT=${LDPFLEET_RABBIT_START_TIMEOUT:-120}
STOP_TIMEOUT=${LDPFLEET_RABBIT_STOP_TIMEOUT:-60}
# The /usr/sbin wrappers of the Debian package re-run everything as user rabbitmq via su
# (dropping our environment and HOME); the scripts they wrap take RABBITMQ_* as given.
SBIN=${LDPFLEET_RABBIT_SBIN:-/usr/lib/rabbitmq/bin}
# short names @localhost: resolvable here without DNS (/etc/hosts), like the system node's
NODE_A=${LDPFLEET_RABBIT_NODE_A:-ldpfleet-a@localhost}
NODE_B=${LDPFLEET_RABBIT_NODE_B:-ldpfleet-b@localhost}
NODE_C=${LDPFLEET_RABBIT_NODE_C:-ldpfleet-c@localhost}
case "${LDPFLEET_RABBIT_NODES:-2}" in
2) NODES="a b" ;;
3) NODES="a b c" ;;
*) echo "rabbitmq-cluster: LDPFLEET_RABBIT_NODES must be 2 or 3" >&2 && exit 2 ;;
esac
ALL_NODES="a b c" # every node a cluster of this base may have (stop stops them all)
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

by_node() { # by_node N VALUE_A VALUE_B VALUE_C: the value for node N
    case "$1" in a) echo "$2" ;; b) echo "$3" ;; c) echo "$4" ;; esac
}
node_name() { by_node "$1" "$NODE_A" "$NODE_B" "$NODE_C"; }
mqtt_port() { by_node "$1" "$MQTT_PORT_A" "$MQTT_PORT_B" "$MQTT_PORT_C"; }
amqp_port() { by_node "$1" "$AMQP_PORT_A" "$AMQP_PORT_B" "$AMQP_PORT_C"; }
dist_port() { by_node "$1" "$DIST_PORT_A" "$DIST_PORT_B" "$DIST_PORT_C"; }

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

node_up() { # the node answers (the app may be stopped); never created here: no
    [ -d "$BASE/$1" ] && ctl "$1" ping >/dev/null 2>&1
}

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

cluster_healthy() { # cluster_healthy [NODES...]: these nodes (default: $NODES) run, clustered
    local running n
    for n in ${@:-$NODES}; do
        node_up "$n" && tcp_open "$(mqtt_port "$n")" || return 1
    done
    running=$(running_nodes a) || return 1
    for n in ${@:-$NODES}; do
        grep -qx "$(node_name "$n")" <<<"$running" || return 1
    done
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

check_ports_free() { # check_ports_free NODES...
    local p n node
    for n in "$@"; do
        node=$(node_name "$n")
        if command -v epmd >/dev/null && epmd -names 2>/dev/null | grep -q "^name ${node%@*} at port"; then
            die "node name $node is already registered with epmd (another cluster with a different LDPFLEET_RABBIT_BASE? set LDPFLEET_RABBIT_NODE_A/B/C)"
        fi
        for p in "$(mqtt_port "$n")" "$(amqp_port "$n")" "$(dist_port "$n")"; do
            if tcp_open "$p"; then die "port $p on 127.0.0.1 is already in use (see the LDPFLEET_RABBIT_* ports)"; fi
        done
    done
}

try_join() { # try_join N: one attempt of stop_app, join_cluster, start_app
    local n=$1
    ctl "$n" stop_app >/dev/null 2>&1 || return 1
    # (join_cluster logs harmless errors about the joining node's tables to stderr)
    ctl "$n" join_cluster "$NODE_A" >/dev/null 2>"$BASE/$n/log/join.err" || return 1
    ctl "$n" start_app >/dev/null 2>&1 || return 1
}

join_to_a() { # join_to_a N DEADLINE: node N (started) joins node a's cluster
    local n=$1 deadline=$2 attempt=1
    say "joining $(node_name "$n") to $NODE_A"
    # a loaded machine can time a rabbitmqctl call out (CTL_TIMEOUT): try again until the
    # deadline (a join that had already gone through makes the next attempt a no-op)
    until try_join "$n"; do
        [ "$(date +%s)" -lt "$deadline" ] ||
            die "$(node_name "$n") could not join $NODE_A within ${START_TIMEOUT}s: $(tail -n 5 "$BASE/$n/log/join.err" 2>/dev/null)"
        say "join attempt $attempt of $(node_name "$n") failed: trying again"
        attempt=$((attempt + 1))
        ctl "$n" await_startup --timeout 5 >/dev/null 2>&1 || true
    done
    until cluster_healthy a "$n"; do
        [ "$(date +%s)" -lt "$deadline" ] || die "cluster not complete within ${START_TIMEOUT}s: $(running_nodes a | tr '\n' ' ')"
        ctl "$n" await_startup --timeout 5 >/dev/null 2>&1 || true
    done
}

started_summary() {
    local n out=""
    for n in $NODES; do out="$out $(node_name "$n") (pid $(beam_pid "$n"), MQTT $(mqtt_port "$n"))"; done
    echo "$out"
}

cmd_start() {
    [ -x "$SBIN/rabbitmq-server" ] || die "$SBIN/rabbitmq-server not found (apt-get install rabbitmq-server)"
    local t0 deadline n
    t0=$(date +%s.%N)
    deadline=$(($(date +%s) + START_TIMEOUT))
    if cluster_healthy; then
        say "already running:$(started_summary)"
        return 0
    fi
    if [ "$NODES" = "a b c" ] && cluster_healthy a b && ! beam_pid c >/dev/null && ! node_up c; then
        # a healthy two-node cluster: add the third node to it
        check_ports_free c
        rm -rf "${BASE:?}/c"
        write_node_files c
        start_node c
        await_node c "$deadline"
        join_to_a c "$deadline"
        say "node c added in $(elapsed "$t0")s:$(started_summary)"
        cmd_urls
        return 0
    fi
    for n in $ALL_NODES; do
        if beam_pid "$n" >/dev/null || node_up "$n"; then
            say "a node is running but the cluster is not complete: restarting"
            cmd_stop
            break
        fi
    done
    check_ports_free $NODES
    # a fresh cluster every time: no stale membership, queues or sessions
    for n in $ALL_NODES; do rm -rf "${BASE:?}/$n"; done
    for n in $NODES; do
        write_node_files "$n"
        start_node "$n"
    done
    for n in $NODES; do await_node "$n" "$deadline"; done
    for n in $NODES; do
        [ "$n" = a ] || join_to_a "$n" "$deadline"
    done
    say "started in $(elapsed "$t0")s:$(started_summary)"
    cmd_urls
}

stop_one() { # stop node $1: rabbitmqctl stop, then signals, all bounded
    local n=$1 pid wrapper deadline
    [ -d "$BASE/$n" ] || return 0 # never started with this base
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
    # c, b, then a: a node that is stopped last must be started first when data is kept
    local n
    for n in c b a; do stop_one "$n"; done
    for n in $ALL_NODES; do
        if beam_pid "$n" >/dev/null; then die "$(node_name "$n") is still running"; fi
    done
    say "stopped (in $(elapsed "$t0")s)"
}

cmd_status() {
    local n rc=0
    for n in $NODES; do
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
    local n
    for n in $NODES; do echo "mqtt://127.0.0.1:$(mqtt_port "$n")"; done
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
