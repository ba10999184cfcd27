#!/usr/bin/env bash
# tests/integration/logging/log_test.sh CASE SRC RF_TRAINER TOOL...: one
# case of the logger seen from the tools (see CMakeLists.txt). Exit 0 =
# pass.
set -u
CASE=$1
SRC=$2
TRAINER=$3
shift 2
TOOLS=("$@")
case_name=logging.$CASE
host=127.0.0.1
. "$SRC/tests/common/lib.sh"
TMP=$(mktemp -d)
PS_PID=
trap '[[ -n $PS_PID ]] && kill -KILL $PS_PID 2>/dev/null; rm -rf "$TMP"' EXIT

case $CASE in
bad_level)
    for tool in "${TOOLS[@]}"; do
        name=$(basename "$tool")
        for args in "--help" ""; do
            RF_LOG_LEVEL=verbose timeout -s KILL 20 "$tool" $args \
                >"$TMP/out" 2>"$TMP/err"
            rc=$?
            [[ $rc == 2 ]] || fail "$name $args: exit $rc, expected 2"
            grep -qF "$name: RF_LOG_LEVEL=verbose is not one of error|warn|info|debug|trace" \
                "$TMP/err" || { fail "$name $args: no message"; show "$TMP/err"; }
        done
        # the level names are case-sensitive, as the README lists them
        RF_LOG_LEVEL=DEBUG timeout -s KILL 20 "$tool" --help >/dev/null 2>"$TMP/err"
        [[ $? == 2 ]] || fail "$name: RF_LOG_LEVEL=DEBUG accepted"
        # a good value is no error
        RF_LOG_LEVEL=error timeout -s KILL 20 "$tool" --help >/dev/null 2>"$TMP/err"
        [[ $? == 0 ]] || { fail "$name --help at RF_LOG_LEVEL=error failed"; show "$TMP/err"; }
    done
    ;;
idle_ps)
    free_port p0 || { fail "no free port"; rft_finish; }
    free_port p1 || { fail "no free port"; rft_finish; }
    log=$TMP/ps.log
    RF_LOG_LEVEL=debug RF_LOG_FILE=$log RF_FABRIC=auto "$TRAINER" \
        --ps_hosts=$host:$p0 --worker_hosts=$host:$p1 --job_name=ps \
        --task_index=0 >"$TMP/out" 2>"$TMP/err" &
    PS_PID=$!
    # wait until it serves, then leave it idle for 3 s
    for ((i = 0; i < 200; i++)); do
        grep -q "serving on" "$log" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "serving on" "$log" || { fail "the ps did not start"; show "$TMP/err"; }
    start=$(date +%s)
    sleep 3
    kill -KILL $PS_PID 2>/dev/null
    wait $PS_PID 2>/dev/null
    PS_PID=
    secs=$(($(date +%s) - start + 1))
    lines=$(wc -l <"$log")
    timeouts=$(grep -c "RF_ERR_TIMEOUT" "$log")
    echo "idle ps: $lines lines, $timeouts of them timeouts, in about $secs s"
    # one timeout line a second (and the start-up lines, about 15)
    [[ $timeouts -ge 1 ]] || fail "no timeout line at all (is the listener polling?)"
    [[ $timeouts -le $((secs + 2)) ]] ||
        { fail "$timeouts timeout lines in $secs s: not rate-limited"; show "$log"; }
    [[ $lines -le $((secs + 40)) ]] || { fail "$lines lines while idle"; show "$log" 30; }
    grep -q "similar lines suppressed" "$log" ||
        fail "no line says how many were suppressed"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
rft_finish
