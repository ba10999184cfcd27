#!/usr/bin/env bash
# tests/integration/example/example_test.sh CASE RF_EXAMPLE_TRAINER [ARGS...]:
# one case of the examples/trainer.c tests (see CMakeLists.txt). Prints what
# it checks; exits 0 on success, 1 on failure, 77 (train only) when the
# Fashion-MNIST dataset is not installed.
#   train [TRAINER_FLAGS...]  the four command lines of the example's top
#        comment (2 ps + 2 workers on free loopback ports, real processes):
#        every process exits 0, each ps task served with RF_FABRIC and was
#        shut down by the chief, worker 1 finished, the chief's test
#        accuracy >= RF_EXAMPLE_MIN_ACC (default 0.85). TRAINER_FLAGS go to
#        every task.
#   bad_flags  usage errors exit 2 with a message naming the flag, before
#        any training.
# Environment: RF_FABRIC (default sock; the tasks inherit it), RF_TEST_HOST
# (default 127.0.0.1), RF_TEST_TIME_SCALE (multiplies every timeout),
# RF_FASHION_MNIST_DIR (the dataset; default Debian's path). Every process
# runs under `timeout`, and the EXIT trap kills whatever is still running.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-example-trainer}
shift 2
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
min_acc=${RF_EXAMPLE_MIN_ACC:-0.85}
unset TF_CONFIG
tmp=$(mktemp -d)
pids=()            # every background process, for the EXIT trap
declare -A pid_of  # task name -> pid, while it runs
declare -A rc_of   # task name -> exit status

cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

# start NAME ARGS...: the trainer in the background as task NAME, its
# output in $tmp/NAME.
start() {
    local name=$1
    shift
    timeout "$(t 120)" "$trainer" "$@" >"$tmp/$name" 2>&1 &
    pids+=($!)
    pid_of[$name]=$!
}

# cluster TRAINER_FLAGS...: the four command lines, ps first; waits for
# every task (a failed one stops the others); sets rc_of[task].
cluster() {
    local p0 p1 w0 w1
    free_port p0 && free_port p1 && free_port w0 && free_port w1 ||
        { fail "no free ports on $host" && return 1; }
    local c=(--ps_hosts="$host:$p0,$host:$p1"
        --worker_hosts="$host:$w0,$host:$w1")
    echo "cluster: ${c[*]} $*"
    start ps0 "${c[@]}" --job_name=ps --task_index=0 "$@"
    start ps1 "${c[@]}" --job_name=ps --task_index=1 "$@"
    start worker0 "${c[@]}" --job_name=worker --task_index=0 "$@"
    start worker1 "${c[@]}" --job_name=worker --task_index=1 "$@"
    local name left=4 st done_pid stopped=
    rc_of=()
    while ((left > 0)); do
        done_pid=
        wait -n -p done_pid "${pid_of[@]}"
        st=$?
        [[ -n $done_pid ]] || break # no child left to wait for
        for name in "${!pid_of[@]}"; do
            [[ ${pid_of[$name]} == "$done_pid" ]] || continue
            rc_of[$name]=$st
            unset "pid_of[$name]"
            left=$((left - 1))
            # a failed task: the others would wait for it until timeout
            if ((st != 0 && left > 0)) && [[ -z $stopped ]]; then
                echo "$name exited $st: stopping the others"
                kill "${pid_of[@]}" 2>/dev/null
                stopped=1
            fi
        done
    done
}

case_train() {
    [[ -r $data/train-images-idx3-ubyte.gz && -r $data/t10k-labels-idx1-ubyte.gz ]] || {
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    }
    local try t0=$EPOCHREALTIME name
    for try in 1 2 3; do
        cluster "$@" || return
        # a ps port taken between the probe and the bind: other ports
        grep -qi "in use" "$tmp/ps0" "$tmp/ps1" || break
        echo "a port was taken (try $try): retrying with other ports"
    done
    echo "4 processes in $(awk -v a="$t0" -v b="$EPOCHREALTIME" \
        'BEGIN { printf "%.1f", b - a }') s"
    for name in ps0 ps1 worker0 worker1; do
        if [[ ${rc_of[$name]} == 0 ]]; then
            ok "$name exited 0"
        else
            fail "$name exited ${rc_of[$name]}"
            show "$tmp/$name"
        fi
    done
    for name in 0 1; do
        grep -q "^ps task $name: serving on $host:[0-9]* (fabric $RF_FABRIC)$" \
            "$tmp/ps$name" && ok "ps$name: served with $RF_FABRIC" ||
            fail "ps$name: no 'serving on $host:PORT (fabric $RF_FABRIC)'"
        grep -q "^ps task $name: shut down by the chief$" "$tmp/ps$name" &&
            ok "ps$name: shut down by the chief" ||
            fail "ps$name did not report its shutdown"
    done
    grep -q "^worker 1: done$" "$tmp/worker1" && ok "worker1 finished" ||
        fail "worker1 did not report 'worker 1: done'"
    grep -h "steps in" "$tmp/worker0" "$tmp/worker1"
    local acc
    acc=$(sed -n 's/^test accuracy: \(0\.[0-9]\{4\}\)$/\1/p' "$tmp/worker0")
    if [[ -n $acc ]] && awk -v a="$acc" -v m="$min_acc" 'BEGIN { exit !(a >= m) }'; then
        ok "chief: test accuracy $acc >= $min_acc"
    else
        fail "chief: test accuracy '$acc', want >= $min_acc"
        show "$tmp/worker0"
    fi
}

# usage WANT ARGS...: exit 2, WANT on stderr, nothing trained.
usage() {
    local want=$1 st
    shift
    timeout "$(t 30)" "$trainer" "$@" >"$tmp/out" 2>"$tmp/err"
    st=$?
    if [[ $st != 2 ]]; then
        fail "$* exited $st, want 2: $(head -c 300 "$tmp/err")"
    elif ! grep -qF -- "$want" "$tmp/err"; then
        fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
    elif [[ -s $tmp/out ]]; then
        fail "$*: printed on stdout: $(head -c 300 "$tmp/out")"
    else
        ok "$* -> 2: $(head -n 1 "$tmp/err")"
    fi
}

case_bad_flags() {
    local c=(--ps_hosts=127.0.0.1:1 "--worker_hosts=127.0.0.1:2,127.0.0.1:3")
    usage "--task_index" "${c[@]}" --job_name=worker --task_index=x
    usage "--task_index" "${c[@]}" --job_name=worker --task_index=2
    usage "--ps_hosts" --job_name=ps --task_index=0 --worker_hosts=127.0.0.1:2
    usage "--job_name" "${c[@]}" --job_name=bogus --task_index=0
    usage "--train_steps" "${c[@]}" --job_name=worker --task_index=0 \
        --train_steps=0
    usage "--batch_size" "${c[@]}" --job_name=ps --task_index=0 \
        --batch_size=ten
    usage "--learning_rate" "${c[@]}" --job_name=ps --task_index=0 \
        --learning_rate=-1
    usage "--learning_rate: 1e-300 is out of range: it rounds to 0 in float32" \
        "${c[@]}" --job_name=ps --task_index=0 --learning_rate=1e-300
    usage "--learning_rate: 1e39 is out of range: it rounds to infinity" \
        "${c[@]}" --job_name=ps --task_index=0 --learning_rate=1e39
    local long
    long=$(printf 'q%.0s' $(seq 2000))
    usage "--batch_size: '${long:0:64}...' is not an integer" "${c[@]}" \
        --job_name=ps --task_index=0 --batch_size="$long"
    usage "--${long:0:62}...: unknown flag" "${c[@]}" --job_name=ps \
        --task_index=0 --"$long"=1
    usage "--data_dir: needs a value" "${c[@]}" --job_name=ps --data_dir
    usage "--bogus" "${c[@]}" --job_name=ps --task_index=0 --bogus=1
    usage "--ps_hosts" --train_steps=10
}

case $case_name in
train) case_train "$@" ;;
bad_flags) case_bad_flags ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
