#!/usr/bin/env bash
# tests/rxe/python_trainer_test.sh PYTHON TRAINER MIN_ACCURACY [ARGS...]:
# rxe.python's guest command (tests/rxe/CMakeLists.txt), and runnable on
# the host too (RF_FABRIC=sock): the Python package's tutorial program,
# examples/python/trainer.py (TRAINER), run by PYTHON as TensorFlow's
# tutorial runs it, four command lines (2 ps + 2 workers) on RF_TEST_HOST
# with --protocol=$RF_FABRIC and ARGS (e.g. --train_steps=N). Checks what
# the host's test of the example checks, and the fabric:
#   - every task exits 0 (the ps tasks' server.join() returns when the
#     chief ends the job);
#   - the chief (worker 0) prints "test accuracy A" with A >= MIN_ACCURACY;
#   - the chief and worker 1 opened the RF_FABRIC provider ("fabric: opened
#     provider verbs" at RF_LOG_LEVEL=info), each ps served on
#     RF_TEST_HOST with it, saw the chief connect over it and was shut
#     down by the chief.
# It also prints the memory the job left free (the lowest MemAvailable,
# and MemFree of each NUMA node, sampled every 2 s): the guest has 2 GiB
# per node. Exits 77 when the data is missing, as the C cases do.
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1;
# 10.77.0.1 in the guest), RF_TEST_TIME_SCALE (multiplies the timeouts),
# PYTHONPATH (the package: build/python), RF_FASHION_MNIST_DIR (the data),
# RF_PY_TASK_SECS (each task's timeout before scaling, default 200),
# RF_PY_SHOW_LOGS=1 (print every task's whole output at the end).
# Exits 0 when every check passed, else 1. Plain bash and busybox, so it
# runs in the rxe guest; it sources tests/common/lib.sh, which rxe-run
# stages at its path (--file).
set -uo pipefail
# shellcheck disable=SC2034 # lib.sh's rft_finish names the case
case_name=python_trainer
python=${1:?python interpreter}
trainer=${2:?path to examples/python/trainer.py}
min_acc=${3:?minimum test accuracy}
shift 3
export RF_FABRIC=${RF_FABRIC:-sock}
export RF_LOG_LEVEL=info PYTHONUNBUFFERED=1
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG
# shellcheck source-path=SCRIPTDIR source=../common/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    if [[ -n ${RF_PY_SHOW_LOGS:-} ]]; then
        for p in ps0 ps1 worker0 worker1; do echo "---- $p"; cat "$tmp/$p"; done
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
now() { echo "$EPOCHREALTIME"; }
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
    echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
    exit 77
fi

# mem_sample: every 2 s, the lowest MemAvailable and MemFree per NUMA node
# so far into $tmp/mem; bash builtins only (forks are slow under TCG; the
# pause is a read from a FIFO nobody writes, so no sleep outlives it; no
# process substitution either: the guest has no /dev/fd)
mem_sample() {
    local -A low=()
    local k v f n line
    mkfifo "$tmp/pause" || return
    exec 3<>"$tmp/pause"
    while :; do
        while read -r k v _; do
            if [[ $k == MemAvailable: ]]; then
                ((${low[all]:--1} < 0 || v < low[all])) && low[all]=$v
                break
            fi
        done </proc/meminfo
        for f in /sys/devices/system/node/node[0-9]*/meminfo; do
            [[ -r $f ]] || continue
            while read -r _ n k v _; do
                if [[ $k == MemFree: ]]; then
                    ((${low[$n]:--1} < 0 || v < low[$n])) && low[$n]=$v
                    break
                fi
            done <"$f"
        done
        line="lowest MemAvailable $((low[all] / 1024)) MiB"
        for f in /sys/devices/system/node/node[0-9]*; do
            n=${f##*/node}
            [[ -n ${low[$n]:-} ]] && line+=", node$n MemFree $((low[$n] / 1024)) MiB"
        done
        echo "$line" >"$tmp/mem"
        read -r -t 2 -u 3 _
    done
}
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

ports=()
for _ in 1 2 3 4; do
    free_port port || { fail "no free port"; rft_finish; }
    ports+=("$port")
done
cluster=(--ps_hosts="$host:${ports[0]},$host:${ports[1]}"
    --worker_hosts="$host:${ports[2]},$host:${ports[3]}")
echo "cluster: ${cluster[*]} (fabric $RF_FABRIC), $python $trainer $*"
# per task: 800 s at rxe's scale 4 (rxe.python: 3-7 min at loads 3-15),
# below the guest's per-command timeout, so that a hang is reported here
to=$(t "${RF_PY_TASK_SECS:-200}")
t0=$(now)
declare -A pid=()
for task in ps:0 ps:1 worker:1 worker:0; do
    name=${task%:*}${task#*:}
    timeout -k 10 "$to" "$python" "$trainer" "${cluster[@]}" --job_name="${task%:*}" \
        --task_index="${task#*:}" --protocol="$RF_FABRIC" "$@" >"$tmp/$name" 2>&1 &
    pid[$name]=$!
    pids+=($!)
done
mem_sample &
sampler=$!
pids+=("$sampler")
declare -A rc=()
for name in worker0 worker1 ps0 ps1; do
    wait "${pid[$name]}"
    rc[$name]=$?
done
echo "exit: worker0 ${rc[worker0]}, worker1 ${rc[worker1]}, ps0 ${rc[ps0]}, ps1 ${rc[ps1]} after $(secs "$t0") s"
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
total=0
while read -r k v _; do
    [[ $k == MemTotal: ]] && total=$v && break
done </proc/meminfo
echo "memory: MemTotal $((total / 1024)) MiB; while the job ran: $(cat "$tmp/mem" 2>/dev/null)"

for name in ps0 ps1 worker0 worker1; do
    if [[ ${rc[$name]} == 0 ]]; then
        ok "$name exit 0"
    else
        fail "$name exit ${rc[$name]}$([[ ${rc[$name]} == 124 ]] && echo " (timeout $to s)")"
        show "$tmp/$name" 30
    fi
done

acc=$(sed -n 's/^test accuracy \([0-9.]*\)$/\1/p' "$tmp/worker0" | head -n 1)
if [[ -z $acc ]]; then
    fail "the chief printed no 'test accuracy'"
    show "$tmp/worker0" 30
elif awk -v a="$acc" -v m="$min_acc" 'BEGIN { exit !(a >= m) }'; then
    ok "chief: test accuracy $acc >= $min_acc"
else
    fail "chief: test accuracy $acc < $min_acc"
fi
# the chief's session: its steps and its wait for worker 1
grep -hE 'session ready|waiting at most' "$tmp/worker0" "$tmp/worker1" | sed 's/^/    /'

# expect TASK OK_MSG FAIL_MSG GREP_ARGS...: a check on TASK's output
expect() {
    local task=$1 okm=$2 failm=$3
    shift 3
    if grep -q "$@" "$tmp/$task"; then
        ok "$task: $okm"
    else
        fail "$task: $failm"
        show "$tmp/$task" 8
    fi
}
for name in worker0 worker1; do
    expect "$name" "opened the $RF_FABRIC provider" \
        "no 'fabric: opened provider $RF_FABRIC'" "fabric: opened provider $RF_FABRIC\$"
done
for k in 0 1; do
    expect "ps$k" "served on $host:${ports[k]} with $RF_FABRIC" \
        "no 'ps $k: serving on $host:${ports[k]} ($RF_FABRIC)'" -F "ps $k: serving on $host:${ports[k]} ($RF_FABRIC)"
    expect "ps$k" "the chief connected over $RF_FABRIC" \
        "no 'client 0 (chief) connected from $host:PORT over $RF_FABRIC'" \
        "ps $k: client 0 (chief) connected from $host:[0-9]* over $RF_FABRIC\$"
    expect "ps$k" "shut down by the chief" "no 'SHUTDOWN from client 0 (chief)'" \
        "ps $k: SHUTDOWN from client 0 (chief)"
done
rft_finish
