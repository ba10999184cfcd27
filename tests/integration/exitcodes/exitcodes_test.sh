#!/usr/bin/env bash
# tests/integration/exitcodes/exitcodes_test.sh CASE RF_TRAINER RF_CKPT: the
# exit statuses of rf-trainer (README "Exit status"), each provoked by a
# real failure of a job started by hand (real processes on loopback, real
# signals, RF_FABRIC=sock unless set), and the final line of each task
# ("rf-trainer: exit N (kind): reason", the last one it prints):
#   usage       an unknown flag, and --replicas_to_aggregate above the
#               cluster's workers: 2
#   ps_never    a worker whose ps never comes up, --max_wait_secs=2: 138,
#               naming the ps task and the wait, within 2 + 5 s
#   unresolved  a worker whose ps host never resolves, --max_wait_secs=11:
#               "still waiting for /job:ps/task:0: cannot resolve host" after
#               10 s, then 138
#   ps_lost     2 workers training, their ps killed with kill -9 and not
#               restarted, --max_wait_secs=3: both exit 138 naming the
#               recovery's wait, within 3 + 6 s of the kill
#   nan         a diverging model (NaN loss, NanTensorHook): 1
#   corrupt     a checkpoint directory whose every checkpoint is corrupt: the
#               chief exits 1 naming the directory
#   sigterm     SIGTERM to a training worker: 138 at the end of its step,
#               naming the step; to the chief: it saves a checkpoint (it is
#               on disk and verifies) and exits 138 naming it; to a ps task
#               and to a worker still waiting for its ps: 138 at once
#   success     a whole job (1 ps, 1 worker): 0 for both, the chief's final
#               line naming its final checkpoint
#   final_save  the chief stopped before the rename of its final checkpoint
#               (RF_TEST_CKPT_STOP_BEFORE_RENAME), a directory put in the
#               way of that rename: the chief exits 1 (the save's error), the
#               ps tasks are not shut down (they still serve the variables)
#   shutdown    the chief stopped there, the ps killed meanwhile: the final
#               checkpoint is saved (and verifies) but the shutdown fails:
#               138, never 0
#   dns_moves   a ps known by a name that does not resolve when the worker
#               starts (a private mount namespace's /etc/hosts), then
#               resolves to 127.0.0.2 where the ps listens; the ps killed
#               with kill -9, the name removed for 1 s (NXDOMAIN while the
#               worker reconnects), then moved to 127.0.0.3 and the ps
#               started again there: the worker finds it under its name
#               (every connect resolves again), the job completes (0, 0)
# Exit 0 = pass, 1 = a failed check, 77 without the Fashion-MNIST dataset.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
rfckpt=${3:?path to rf-ckpt}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=127.0.0.1
unset TF_CONFIG RF_TEST_CKPT_STOP_BEFORE_RENAME RF_LAUNCH_TASK
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
tmp=$(mktemp -d)
declare -A pid=()
cleanup() {
    local p
    for p in "${pid[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -KILL "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
    echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
    exit 77
fi

model=(--model=softmax --batch_size=100 --threads=1 --log_every=0
    --log_step_count_steps=0)

# start NAME ARGS...: rf-trainer ARGS... in the background, its output in
# $tmp/NAME.out.
start() {
    local name=$1
    shift
    "$trainer" "$@" >"$tmp/$name.out" 2>&1 &
    pid[$name]=$!
}
# wait_line NAME REGEX SECS: until NAME's output has a line matching REGEX.
wait_line() {
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -qE -- "$2" "$tmp/$1.out" && return 0
        sleep 0.05
    done
    fail "$1 never printed /$2/ within $3 s"
    show "$tmp/$1.out"
    return 1
}
# wait_rc NAME SECS: sets rc to NAME's exit status (killed after SECS s:
# "timeout").
wait_rc() {
    local i p=${pid[$1]}
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$p" 2>/dev/null; then
        kill -KILL "$p"
        wait "$p" 2>/dev/null
        rc=timeout
    else
        wait "$p" 2>/dev/null
        rc=$?
    fi
    unset "pid[$1]"
}
# expect_exit NAME WANT SECS: NAME exits WANT within SECS s.
expect_exit() {
    wait_rc "$1" "$3"
    if [[ $rc == "$2" ]]; then
        ok "$1 exits $2"
    else
        fail "$1: exit $rc, want $2"
        show "$tmp/$1.out"
    fi
}
# expect_final NAME REGEX: NAME's last line is its final line and matches
# "rf-trainer: exit REGEX" (after the task's "[name] " prefix).
expect_final() {
    local last
    last=$(tail -n 1 "$tmp/$1.out")
    if [[ $last =~ ^(\[[a-z0-9]+\]\ )?rf-trainer:\ exit\ $2 ]]; then
        ok "$1's final line: ${last#*rf-trainer: }"
    else
        fail "$1's last line '$last' does not match 'rf-trainer: exit $2'"
        show "$tmp/$1.out"
    fi
}
# cluster PS_PORT WORKER_PORTS...: the cluster flags in the array cl.
cluster() {
    local ps=$1 w="" port
    shift
    for port in "$@"; do w+="${w:+,}$host:$port"; done
    cl=(--ps_hosts="$host:$ps" --worker_hosts="$w")
}
ports() {
    local v
    for v in "$@"; do free_port "$v" || exit 1; done
}

case_usage() {
    local psp wp
    ports psp wp
    cluster "$psp" "$wp"
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --frobnicate
    expect_exit w0 2 10
    grep -q -- "--frobnicate" "$tmp/w0.out" && ok "it names --frobnicate" ||
        fail "no mention of --frobnicate"
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --sync_replicas \
        --replicas_to_aggregate=3 "${model[@]}"
    expect_exit w0 2 10
    expect_final w0 '2 \(usage\): .*--replicas_to_aggregate'
}

case_ps_never() {
    local psp wp
    ports psp wp
    cluster "$psp" "$wp"
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --max_wait_secs=2 \
        "${model[@]}"
    expect_exit w0 138 "$(t 7)"
    expect_final w0 '138 \(retryable\): worker 0: gave up after max_wait_secs=2 waiting for /job:ps/task:0'
}

case_unresolved() {
    local wp
    ports wp
    start w0 --ps_hosts=rf-exitcodes-never.invalid:2222 \
        --worker_hosts="$host:$wp" --job_name=worker --task_index=0 \
        --max_wait_secs=11 "${model[@]}"
    expect_exit w0 138 "$(t 20)"
    grep -q '/job:worker/task:0: still waiting for /job:ps/task:0: cannot resolve host "rf-exitcodes-never.invalid"' "$tmp/w0.out" &&
        ok "it said it was still waiting for /job:ps/task:0" ||
        fail "no 'still waiting for /job:ps/task:0' line"
    expect_final w0 '138 \(retryable\): worker 0: cannot resolve host "rf-exitcodes-never.invalid" of /job:ps/task:0 .* within 11 s'
}

case_ps_lost() {
    local psp wp0 wp1 t0
    ports psp wp0 wp1
    cluster "$psp" "$wp0" "$wp1"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    for i in 0 1; do
        start "w$i" "${cl[@]}" --job_name=worker --task_index=$i \
            --max_wait_secs=3 --train_steps=100000000 "${model[@]}"
    done
    wait_line w0 'session ready' "$(t 10)" || return
    wait_line w1 'session ready' "$(t 10)" || return
    sleep 0.5
    kill -KILL "${pid[ps]}"
    wait_rc ps 5
    t0=$EPOCHREALTIME
    for i in 0 1; do
        expect_exit "w$i" 138 "$(t 10)"
        expect_final "w$i" '138 \(retryable\): training: recovering from .*gave up after max_wait_secs=3 waiting for /job:ps/task:0'
    done
    local all
    all=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    awk -v s="$all" -v m="$(t 9)" 'BEGIN { exit !(s <= m) }' &&
        ok "both gave up $all s after the kill (max_wait_secs=3)" ||
        fail "the workers took $all s after the kill"
}

case_nan() {
    local psp wp
    ports psp wp
    cluster "$psp" "$wp"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --max_wait_secs=5 \
        --model=mlp:256,256 --optimizer=momentum --momentum=0.99 \
        --learning_rate=1e6 --train_steps=1000 --threads=1
    expect_exit w0 1 "$(t 12)"
    expect_final w0 '1 \(permanent\): training: hook NanTensorHook: NaN loss during training'
}

case_corrupt() {
    local psp wp f
    ports psp wp
    cluster "$psp" "$wp"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --max_wait_secs=5 \
        --train_steps=20 --checkpoint_dir="$tmp/ck" "${model[@]}"
    expect_exit w0 0 "$(t 12)"
    expect_exit ps 0 "$(t 5)"
    for f in "$tmp"/ck/model.ckpt-*.safetensors; do
        printf '\xff\xff\xff\xff' | dd of="$f" bs=1 seek=40000 conv=notrunc \
            status=none
    done
    start ps "${cl[@]}" --job_name=ps --task_index=0
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --max_wait_secs=5 \
        --train_steps=40 --checkpoint_dir="$tmp/ck" "${model[@]}"
    expect_exit w0 1 "$(t 12)"
    expect_final w0 "1 \\(permanent\\): worker 0: $tmp/ck: none of its 2 checkpoints is usable"
}

case_sigterm() {
    local psp wp0 wp1 gs
    ports psp wp0 wp1
    cluster "$psp" "$wp0" "$wp1"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    for i in 0 1; do
        start "w$i" "${cl[@]}" --job_name=worker --task_index=$i \
            --max_wait_secs=5 --train_steps=100000000 \
            --checkpoint_dir="$tmp/ck" "${model[@]}"
    done
    wait_line w0 'session ready' "$(t 10)" || return
    wait_line w1 'session ready' "$(t 10)" || return
    sleep 0.5
    kill -TERM "${pid[w1]}"
    expect_exit w1 138 2
    expect_final w1 "138 \\(retryable\\): worker 1: preempted: SIGTERM at global_step [1-9][0-9]*, before the job's end$"
    kill -TERM "${pid[w0]}"
    expect_exit w0 138 "$(t 5)"
    expect_final w0 "138 \\(retryable\\): worker 0: preempted: SIGTERM at global_step [1-9][0-9]*, before the job's end; saved $tmp/ck/model.ckpt-[1-9][0-9]*\\.safetensors$"
    gs=$(tail -n 1 "$tmp/w0.out" | sed -n 's/.*model\.ckpt-\([0-9]*\)\.safetensors$/\1/p')
    if [[ -n $gs ]] && "$rfckpt" verify "$tmp/ck/model.ckpt-$gs.safetensors" >/dev/null 2>&1 &&
        grep -q "model.ckpt-$gs.safetensors" "$tmp/ck/checkpoint"; then
        ok "model.ckpt-$gs, saved after SIGTERM, verifies and is the state file's"
    else
        fail "the checkpoint saved after SIGTERM (step '$gs') is missing or does not verify"
        ls -l "$tmp/ck"
    fi
    kill -TERM "${pid[ps]}"
    expect_exit ps 138 2
    expect_final ps '138 \(retryable\): preempted: /job:ps/task:0 got SIGTERM and stopped at once'
    # a worker still waiting for its ps (nothing listens on $psp now)
    start w1 "${cl[@]}" --job_name=worker --task_index=1 --max_wait_secs=30 \
        "${model[@]}"
    wait_line w1 'of 2 workers' "$(t 10)" || return
    kill -TERM "${pid[w1]}"
    expect_exit w1 138 2
    expect_final w1 '138 \(retryable\): preempted: /job:worker/task:1 got SIGTERM and stopped at once'
}

case_success() {
    local psp wp
    ports psp wp
    cluster "$psp" "$wp"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    start w0 "${cl[@]}" --job_name=worker --task_index=0 --max_wait_secs=5 \
        --train_steps=50 --checkpoint_dir="$tmp/ck" "${model[@]}"
    expect_exit w0 0 "$(t 12)"
    expect_exit ps 0 "$(t 5)"
    expect_final w0 "0 \\(success\\): the job finished at global_step 50, its final checkpoint saved in $tmp/ck, the ps tasks shut down"
    expect_final ps '0 \(success\): ps task 0 shut down by the chief'
}

# stop_at_final PS_PORT W_PORT: a 1 ps, 1 worker job whose chief stops
# (SIGSTOP) before renaming its final checkpoint, model.ckpt-50.
stop_at_final() {
    cluster "$1" "$2"
    echo model.ckpt-50.safetensors >"$tmp/stop"
    start ps "${cl[@]}" --job_name=ps --task_index=0
    RF_TEST_CKPT_STOP_BEFORE_RENAME=$tmp/stop start w0 "${cl[@]}" \
        --job_name=worker --task_index=0 --max_wait_secs=3 --train_steps=50 \
        --checkpoint_dir="$tmp/ck" "${model[@]}"
    local i
    for ((i = 0; i < 200; i++)); do
        [[ ! -e $tmp/stop ]] && grep -q '^State:.*T' "/proc/${pid[w0]}/status" 2>/dev/null &&
            return 0
        sleep 0.05
    done
    fail "the chief did not stop before its final checkpoint's rename"
    show "$tmp/w0.out"
    return 1
}

case_final_save() {
    local psp wp
    ports psp wp
    stop_at_final "$psp" "$wp" || return
    mkdir -p "$tmp/ck/model.ckpt-50.safetensors/in-the-way"
    kill -CONT "${pid[w0]}"
    # the final save is retried once, 5 s later (the directory is still
    # in the way)
    expect_exit w0 1 "$(t 15)"
    expect_final w0 '1 \(permanent\): chief: hook CheckpointSaverHook: the final checkpoint \(global_step 50\) was not saved, retried once: saving a checkpoint into'
    grep -q 'chief: ps tasks shut down' "$tmp/w0.out" &&
        fail "the chief shut the ps tasks down after its final save failed" ||
        ok "the ps tasks were not shut down"
    kill -0 "${pid[ps]}" 2>/dev/null && ok "the ps still serves" ||
        fail "the ps is gone"
}

case_shutdown() {
    local psp wp
    ports psp wp
    stop_at_final "$psp" "$wp" || return
    kill -KILL "${pid[ps]}"
    wait_rc ps 5
    kill -CONT "${pid[w0]}"
    expect_exit w0 138 "$(t 10)"
    expect_final w0 '138 \(retryable\): chief: shutting the ps tasks down'
    "$rfckpt" verify "$tmp/ck/model.ckpt-50.safetensors" >/dev/null 2>&1 &&
        ok "the final checkpoint was saved before the failed shutdown" ||
        fail "no final checkpoint model.ckpt-50"
}

# dns_moves runs in a private mount namespace (unshare -m) whose /etc/hosts
# is $tmp/hosts, edited in place (same inode) during the case.
case_dns_moves() {
    [[ ${RF_EXITCODES_NS:-} == 1 ]] || {
        command -v unshare >/dev/null || {
            fail "unshare (util-linux) is missing"
            return
        }
        RF_EXITCODES_NS=1 unshare -m bash "${BASH_SOURCE[0]}" dns_moves \
            "$trainer" "$rfckpt"
        rc=$?
        [[ $rc == 0 ]] || fail "the case in its mount namespace: exit $rc"
        return
    }
    local name=rf-ps-moving.test psp wp
    grep -v "$name" /etc/hosts >"$tmp/hosts"
    mount --bind "$tmp/hosts" /etc/hosts || {
        fail "cannot bind-mount $tmp/hosts on /etc/hosts"
        return
    }
    ports psp wp
    local flags=(--ps_hosts="$name:$psp" --worker_hosts="$host:$wp")
    start w0 "${flags[@]}" --job_name=worker --task_index=0 \
        --max_wait_secs=15 --train_steps=3000 --checkpoint_dir="$tmp/ck" \
        --save_checkpoint_steps=200 "${model[@]}"
    sleep 1
    kill -0 "${pid[w0]}" 2>/dev/null && ok "the worker waits for $name" ||
        fail "the worker did not wait for $name to resolve"
    echo "127.0.0.2 $name" >>"$tmp/hosts"
    start ps "${flags[@]}" --job_name=ps --task_index=0
    wait_line ps "serving on $name:$psp" "$(t 10)" || return
    wait_line w0 'saved checkpoint .*model.ckpt-200' "$(t 10)" || return
    listening 0200007F "$psp" && ok "the ps listens on 127.0.0.2:$psp" ||
        fail "nothing listens on 127.0.0.2:$psp"
    kill -KILL "${pid[ps]}"
    wait_rc ps 5
    # the name gone for a while (a deleted pod's record), then back with a
    # new address; written in place: the mount keeps its inode
    grep -v "$name" "$tmp/hosts" >"$tmp/hosts.new"
    cat "$tmp/hosts.new" >"$tmp/hosts"
    getent hosts "$name" >/dev/null && fail "$name still resolves"
    sleep 1
    echo "127.0.0.3 $name" >>"$tmp/hosts.new"
    cat "$tmp/hosts.new" >"$tmp/hosts"
    getent hosts "$name" | grep -q '^127\.0\.0\.3' &&
        ok "$name now resolves to 127.0.0.3" || fail "$name: $(getent hosts "$name")"
    start ps "${flags[@]}" --job_name=ps --task_index=0
    wait_line ps "serving on $name:$psp" "$(t 10)" || return
    listening 0300007F "$psp" &&
        ok "the restarted ps listens on 127.0.0.3:$psp" ||
        fail "nothing listens on 127.0.0.3:$psp"
    expect_exit w0 0 "$(t 20)"
    expect_exit ps 0 "$(t 5)"
    grep -q 'recovered in .*restored' "$tmp/w0.out" &&
        ok "the worker recovered: $(grep -m1 -o 'recovered in .*' "$tmp/w0.out")" ||
        fail "no recovery line"
}

# listening HEXADDR PORT: a TCP listener on that address (/proc/net/tcp's
# little-endian hex, 0200007F for 127.0.0.2) and port.
listening() {
    awk -v a="$1:$(printf '%04X' "$2")" '$2 == a && $4 == "0A" { f = 1 }
        END { exit !f }' /proc/net/tcp
}

case "$case_name" in
usage | ps_never | unresolved | ps_lost | nan | corrupt | sigterm | success | \
    final_save | shutdown | dns_moves) "case_$case_name" ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
