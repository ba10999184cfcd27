# tests/common/lib.sh: what the shell-driven integration tests share (the
# shell side of tests/common), sourced by tests/integration/*/*_test.sh:
#   fail MSG / ok MSG   a failed check (counted in $failures) / a passed one
#   t SECS              a timeout scaled by RF_TEST_TIME_SCALE ($scale)
#   show FILE [N]       the last N (default 15) lines of FILE, indented
#   free_port VAR       a loopback port nothing listens on (see below)
#   free_port_range VAR N  the first of N consecutive such ports
#   rft_finish          the case's verdict: exit 1 after any failure, else 0
# A script sets case_name and host (the address tasks listen on) before it
# calls these. Plain bash + coreutils (or busybox), so the scripts run in
# the rxe guest too, where tests/rxe stages this file beside them.
failures=0
scale=${RF_TEST_TIME_SCALE:-1}
used_ports=" "

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
ok() { echo "ok: $*"; }
t() { echo $(($1 * scale)); }
show() { tail -n "${2:-15}" "$1" | sed 's/^/    | /'; }

# free_port VAR: sets VAR to a port in 20000..32767 (below the ephemeral
# range) on which nothing accepts TCP connections on $host (bash's
# /dev/tcp) and that this run has not handed out yet. Verbs tasks listen
# with rdma_cm, whose ports are not TCP ports, but in the rxe guest nothing
# else runs. A port taken between the probe and the bind is retried by the
# caller. Tests running at once (ctest -j) would otherwise hand out the same
# port when one holds its port a while before listening (a ps started late):
# each port handed out is also reserved for the life of this script's shell
# by a directory in $RF_TEST_PORT_DIR (default $TMPDIR or /tmp, then
# rf-test-ports), made with mkdir (atomic); another script's reservation is
# skipped unless its shell is gone.
free_port() {
    local p i
    for ((i = 0; i < 100; i++)); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12768))
        rft_take_port "$p" || continue
        printf -v "$1" %s "$p"
        return 0
    done
    return 1
}

# free_port_range VAR N: sets VAR to the first of N consecutive ports, each
# taken as free_port takes one (for launchers that number ports from a base:
# rf-trainer --port_base under mpirun or srun).
free_port_range() {
    local p i k n=$2
    for ((i = 0; i < 100; i++)); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % (12768 - n)))
        for ((k = 0; k < n; k++)); do
            rft_take_port $((p + k)) || break
        done
        if ((k == n)); then
            printf -v "$1" %s "$p"
            return 0
        fi
        # the ports taken stay reserved (and unused) until the script ends
    done
    return 1
}

# rft_take_port P: reserves port P for this script (see free_port); fails if
# it is handed out already, reserved by a live script, or accepts TCP.
rft_take_port() {
    local p=$1 dir=${RF_TEST_PORT_DIR:-${TMPDIR:-/tmp}/rf-test-ports} owner
    local reserve=1
    mkdir -p "$dir" 2>/dev/null || reserve=0 # nowhere to: probe only
    [[ $used_ports == *" $p "* ]] && return 1
    if [[ $reserve == 1 ]] && ! mkdir "$dir/$p" 2>/dev/null; then
        # held, unless its script is gone (no pid yet: being made)
        owner=$(cat "$dir/$p/pid" 2>/dev/null) || return 1
        [[ -z $owner ]] || kill -0 "$owner" 2>/dev/null && return 1
        rm -rf "$dir/$p"
        mkdir "$dir/$p" 2>/dev/null || return 1
    fi
    [[ $reserve == 1 ]] && echo "$$" >"$dir/$p/pid"
    timeout 2 bash -c "exec 3<>/dev/tcp/$host/$p" 2>/dev/null && return 1
    used_ports+="$p "
    return 0
}

rft_finish() {
    if [[ $failures -ne 0 ]]; then
        echo "$case_name: $failures failure(s)"
        exit 1
    fi
    echo "$case_name: all checks passed"
    exit 0
}
