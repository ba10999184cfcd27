#!/usr/bin/env bash
# tests/integration/info/info_test.sh CASE RF_INFO RF_INFO_JSON SRC: one
# case of rf-info on the host (no RDMA device here; the rxe guest's case is
# in tests/rxe). RF_INFO_JSON is info_json.c, which parses --json with
# json-c and prints a value by path. Exit 0 = pass, 77 = skipped (nodevice
# on a host with an RDMA device).
set -u
CASE=$1
INFO=$2
JQ=$3
SRC=$4
case_name=info.$CASE
host=127.0.0.1
. "$SRC/tests/common/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out
ERR=$TMP/err

# run ARGS...: rf-info with stdout/stderr in $OUT/$ERR, status in $RC; the
# environment is the test's, minus every RF_* variable.
run() {
    env $(env | sed -n 's/^\(RF_[A-Z0-9_]*\)=.*/-u \1/p') \
        timeout -s KILL 30 "$INFO" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}
# runenv VAR=VALUE... -- ARGS...: run with those variables set.
runenv() {
    local vars=()
    while [[ $1 != -- ]]; do vars+=("$1"); shift; done
    shift
    env $(env | sed -n 's/^\(RF_[A-Z0-9_]*\)=.*/-u \1/p') "${vars[@]}" \
        timeout -s KILL 30 "$INFO" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}
has() { grep -qF -- "$1" "$2" || { fail "$2 lacks: $1"; show "$2" 40; }; }
rc_is() { [[ $RC == "$1" ]] || { fail "exit status $RC, expected $1"; show "$ERR"; }; }
# jval PATH EXPECTED: the --json document in $OUT has EXPECTED at PATH.
jval() {
    local got
    got=$("$JQ" "$OUT" "$1") || { fail "--json: no $1"; return; }
    [[ $got == "$2" ]] && ok "$1 = $2" || fail "$1 is '$got', expected '$2'"
}

no_device() { ! ls /sys/class/infiniband/* >/dev/null 2>&1; }

case $CASE in
nodevice)
    # a host with a device cannot show this text: a skip, never a pass
    no_device || { echo "SKIP: $case_name: this host has an RDMA device"; exit 77; }
    run
    rc_is 0
    has "no RDMA device on this host" "$OUT"
    has "fix: use RF_FABRIC=sock" "$OUT"
    has "modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0" "$OUT"
    # the verbs provider's own error, asked for explicitly, names the fix
    grep -E '^\s+verbs +not usable here: verbs: no RDMA device.*RF_FABRIC=sock.*rdma link add rxe0' \
        "$OUT" >/dev/null && ok "the verbs provider's error names the fix" ||
        fail "the verbs provider's error does not name the fix"
    grep -E '^\s+sock +usable' "$OUT" >/dev/null || fail "sock is not usable"
    ;;
json)
    run --json
    rc_is 0
    "$JQ" "$OUT" >/dev/null || fail "--json is not one JSON document"
    jval 'providers[name=sock].usable' true
    jval 'providers[name=shm].usable' true
    jval 'settings[name=RF_FABRIC].source' default
    jval 'settings[name=RF_FABRIC].value' auto
    if no_device; then
        jval 'verbs.devices' '[ ]'
        jval 'verbs.error' 'no RDMA device on this host'
        has "rdma link add rxe0" "$OUT"
        jval 'providers[name=verbs].usable' false
    fi
    # nothing but the document on stdout
    [[ $(head -c1 "$OUT") == "{" ]] || fail "stdout does not start with {"
    [[ -s $ERR ]] && { fail "--json wrote to stderr"; show "$ERR"; }
    run --json --addr 127.0.0.1
    jval 'address.provider' shm
    ;;
addr)
    # an address that does not resolve: exit 1 naming it (issue 25 item 4),
    # on every host (the nodevice case is skipped where a device is)
    run --json --addr no-such-host.invalid
    rc_is 1
    jval address.host no-such-host.invalid
    "$JQ" "$OUT" address.error | grep -qF 'cannot resolve no-such-host.invalid' ||
        fail "no resolution error for no-such-host.invalid"
    run --addr 127.0.0.1
    rc_is 0
    has "provider:	shm" "$OUT"
    has "shm: 127.0.0.1 is an address of this host" "$OUT"
    run --json --addr 127.0.0.1
    jval address.provider shm
    jval 'address.order[0]' shm
    jval 'address.order[1]' sock
    jval address.fabric auto
    "$JQ" "$OUT" address.numa.node >/dev/null || fail "no NUMA node for 127.0.0.1"
    # without shm, auto answers sock for the same address, and says why
    runenv RF_AUTO_PROVIDERS=sock -- --json --addr 127.0.0.1
    rc_is 0
    jval address.provider sock
    grep -qF 'RF_AUTO_PROVIDERS=sock leaves it out' "$OUT" ||
        fail "the choice does not name RF_AUTO_PROVIDERS"
    # a fabric that is not auto reaches every peer with itself
    runenv RF_FABRIC=sock -- --json --addr 127.0.0.1
    jval address.fabric sock
    jval address.provider sock
    # an address of no host here: not shm
    runenv RF_AUTO_PROVIDERS=shm,sock -- --json --addr 192.0.2.1
    jval address.provider sock
    grep -qF '192.0.2.1 is not an address of this host' "$OUT" ||
        fail "no reason for 192.0.2.1"
    # an address that does not resolve: exit 1 naming it
    run --addr no-such-host.invalid
    rc_is 1
    has "no-such-host.invalid" "$OUT"
    ;;
env)
    runenv RF_LOG_LEVEL=info RF_BIND=none RF_SOCK_SERVE_MAX=77 -- --json
    rc_is 0
    jval 'settings[name=RF_LOG_LEVEL].value' info
    jval 'settings[name=RF_LOG_LEVEL].source' environment
    jval 'settings[name=RF_BIND].value' none
    jval 'settings[name=RF_BIND].source' environment
    jval 'settings[name=RF_SOCK_SERVE_MAX].value' 77
    jval 'settings[name=RF_PEER_TIMEOUT_MS].value' 10000
    jval 'settings[name=RF_PEER_TIMEOUT_MS].source' default
    runenv RF_SOCK_SERVE_MAX=77 -- 
    grep -E '^\s+RF_SOCK_SERVE_MAX +77 +environment' "$OUT" >/dev/null ||
        fail "text: RF_SOCK_SERVE_MAX 77 environment missing"
    # a setting every program would refuse: named, and rf-info exits 1
    runenv RF_PS_CHUNK_MB=0 -- --json
    rc_is 1
    jval 'settings[name=RF_PS_CHUNK_MB].error' \
        'RF_PS_CHUNK_MB: 0 is out of range [1, 1048576]'
    runenv RF_VERBS_CQ_MODE=busy --
    rc_is 1
    has "error: RF_VERBS_CQ_MODE=busy is not one of poll|event" "$OUT"
    # text settings, checked by the code their readers run (issue 26 item
    # 5): each one refused is named on stderr and rf-info exits 1
    local_bad() { # VAR=VALUE EXPECTED-MESSAGE
        runenv "$1" -- --json
        rc_is 1
        jval "settings[name=${1%%=*}].error" "$2"
        has "rf-info: ${1%%=*} would be refused: $2" "$ERR"
    }
    local_bad RF_BIND=node:99 "RF_BIND=node:99: this host has $(
        ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l |
            sed 's/^0$/1/') NUMA node(s)"
    local_bad RF_BIND=socket "RF_BIND=socket is not one of nic|none|node:N"
    local_bad RF_BIND=node:x "RF_BIND=node:N: 'x' is not an integer (bad character at offset 0)"
    local_bad RF_AUTO_PROVIDERS=shm,verbs \
        "RF_AUTO_PROVIDERS: 'shm,verbs' must include sock (the provider every peer can reach)"
    runenv RF_FABRIC=tcp --
    rc_is 1
    has "rf-info: RF_FABRIC would be refused: RF_FABRIC: unknown provider 'tcp' (compiled in: " "$ERR"
    has "|sock|shm|auto)" "$ERR"
    printf 'x%.0s' $(seq 40) >"$TMP/secret"
    chmod 644 "$TMP/secret"
    local_bad RF_CLUSTER_SECRET_FILE="$TMP/secret" \
        "cluster secret file '$TMP/secret' has mode 0644: group or others may read or write it; make it readable by its owner only (chmod 600)"
    # every refused setting is named, not only the first
    runenv RF_BIND=node:99 RF_PS_CHUNK_MB=0 RF_FABRIC=tcp --
    rc_is 1
    for v in RF_BIND RF_PS_CHUNK_MB RF_FABRIC; do
        has "rf-info: $v would be refused: " "$ERR"
    done
    # and good values pass
    chmod 600 "$TMP/secret"
    runenv RF_BIND=node:0 RF_AUTO_PROVIDERS=shm,sock RF_FABRIC=sock \
        RF_CLUSTER_SECRET_FILE="$TMP/secret" --
    rc_is 0
    ;;
settings_table)
    # every RF_* variable the sources read is in rf-info's table
    run --json
    n=0
    for v in $(cd "$SRC" && grep -rhoE '"RF_[A-Z0-9_]+"' --include=*.c \
        --include=*.h core fabric optim ps cluster graph session tools \
        examples bench | tr -d '"' | sort -u |
        grep -vE '^RF_(ERR_[A-Z_]+|OK|INPROGRESS|ACCESS_[A-Z_]+)$'); do
        n=$((n + 1))
        "$JQ" "$OUT" "settings[name=$v]" >/dev/null 2>&1 ||
            fail "$v is read by the sources but not in rf_env_vars (core/env_table.c)"
    done
    [[ $n -ge 20 ]] || fail "found only $n RF_* names in the sources"
    ok "$n RF_* names checked"
    # and the README's environment table names each of the table's rows
    # that is not internal
    for v in $("$JQ" "$OUT" settings | grep -oE '"name": ?"RF_[A-Z0-9_]+"' |
        grep -oE 'RF_[A-Z0-9_]+'); do
        grep -qF "\`$v\`" "$SRC/README.md" ||
            "$JQ" "$OUT" "settings[name=$v].meaning" | grep -q '^internal' ||
            fail "$v is not in README.md"
    done
    ;;
usage)
    for args in "--frob" "--addr" "--addr=" "--json=1" "-x" "--addr a --addr b"; do
        run $args
        rc_is 2
        has "rf-info: " "$ERR"
        has "usage: rf-info" "$ERR"
    done
    run --frob
    has "unknown argument '--frob'" "$ERR"
    run --addr
    has "--addr needs a HOST" "$ERR"
    run --help
    rc_is 0
    has "--addr HOST" "$OUT"
    ;;
rxe)
    # in the rxe guest (tests/rxe): rxe0 on veth0, 10.77.0.1
    run
    rc_is 0
    has "hca_id:	rxe0" "$OUT"
    has "state:			PORT_ACTIVE" "$OUT"
    has "link_layer:		Ethernet" "$OUT"
    grep -E 'GID\[ *[0-9]+\]:\s+::ffff:10\.77\.0\.1, RoCE v2, netdev veth0' \
        "$OUT" >/dev/null && ok "RoCE v2 GID of 10.77.0.1" ||
        { fail "no RoCE v2 GID of 10.77.0.1 on veth0"; show "$OUT" 60; }
    grep -E '^\s+verbs +usable' "$OUT" >/dev/null || fail "verbs is not usable"
    run --json
    rc_is 0
    jval 'verbs.devices[name=rxe0].ports[0].port' 1
    jval 'verbs.devices[name=rxe0].ports[0].state' PORT_ACTIVE
    jval 'verbs.devices[name=rxe0].ports[0].active_mtu' "${RF_TEST_RXE_MTU:-1024}"
    jval 'verbs.devices[name=rxe0].ports[0].link_layer' Ethernet
    jval 'verbs.devices[name=rxe0].ports[0].gids[gid=::ffff:10.77.0.1].netdev' veth0
    for k in max_mr max_qp max_qp_wr max_cqe max_mr_size; do
        v=$("$JQ" "$OUT" "verbs.devices[name=rxe0].limits.$k")
        [[ $v =~ ^[1-9][0-9]*$ ]] && ok "$k = $v" || fail "$k is '$v'"
    done
    runenv RF_AUTO_PROVIDERS=verbs,sock -- --json --addr 10.77.0.1
    rc_is 0
    jval address.provider verbs
    jval 'address.order[1]' sock
    runenv RF_AUTO_PROVIDERS=verbs,sock -- --addr 10.77.0.1
    has "provider:	verbs (tried in order: verbs, sock)" "$OUT"
    # with shm allowed, this host's own address goes over shm
    run --json --addr 10.77.0.1
    jval address.provider shm
    ;;
rxe_bench)
    # in the rxe guest: rf-bench ($2) over verbs prints perftest's device
    # banner, and -d/-i/-x choose the device, port and GID; -D, -q
    BENCH=$INFO
    b() { env $(env | sed -n 's/^\(RF_[A-Z0-9_]*\)=.*/-u \1/p') \
        timeout -s KILL 120 "$BENCH" --loopback --provider verbs \
        --host 10.77.0.1 "$@" >"$OUT" 2>"$ERR"; RC=$?; }
    b -n 20 read_lat
    rc_is 0
    has " Device          : rxe0" "$OUT"
    has " Mtu             : ${RF_TEST_RXE_MTU:-1024}[B]" "$OUT"
    has " Link type       : Ethernet" "$OUT"
    grep -E '^ GID index       : [0-9]+$' "$OUT" >/dev/null || fail "no GID index line"
    has "::ffff:10.77.0.1 (RoCE v2, netdev veth0)" "$OUT"
    gid=$(sed -n 's/^ GID index       : \([0-9]*\)$/\1/p' "$OUT")
    b -d rxe0 -i 1 -x "$gid" -n 20 --report_gbits read_bw
    rc_is 0
    has " GID index       : $gid" "$OUT"
    has "BW average[Gb/sec]" "$OUT"
    b -d nosuch0 -n 20 read_lat
    rc_is 1
    has "RF_VERBS_DEVICE=nosuch0: no such RDMA device" "$ERR"
    # -D on verbs: a latency test, and a shallow bandwidth one (rxe under
    # TCG loses packets when 128 writes of 4 KiB stay in flight for
    # seconds, and a QP then exhausts its retries)
    b -D 5 -f 1 read_lat
    rc_is 0
    has "Duration        : 5 s" "$OUT"
    has "t_avg[usec]    tps average" "$OUT"
    b -D 5 -f 1 -t 4 -s 1024 write_bw
    rc_is 0
    has "Duration        : 5 s" "$OUT"
    # -q 2 on verbs: two QPs, -n per QP (as shallow, for the same reason)
    b --json -q 2 -t 4 -s 1024 -n 200 write_bw
    rc_is 0
    has '"iterations":200,' "$OUT"
    has '"qps":2,"operations":400,' "$OUT"
    # -D on the write ping-pong
    b -D 5 -f 1 write_lat
    rc_is 0
    has "Duration        : 5 s" "$OUT"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
rft_finish
