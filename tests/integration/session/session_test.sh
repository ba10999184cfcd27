#!/usr/bin/env bash
# tests/integration/session/session_test.sh CASE RF_SESSION_TASK: one case of
# the session tests (CMakeLists.txt): real ps and worker processes of
# rf_session_task on loopback, through rdmaflow/session.h, on synthetic
# data. Exits 0 when every check passed, 1 otherwise.
#   oracle_ps       one worker, apply=ps: variables byte-identical to local
#                   training (1 ps; 2 ps with the variables spread)
#   oracle_worker   the same with apply=worker
#   oracle_locking  the same with apply=worker and use_locking
#   async           2 ps x 2 workers: global_step == the sum of the steps,
#                   the loss goes down, every task exits 0
#   checkpoint      one worker saves every 10 steps on 1 ps; the newest
#                   checkpoint is corrupted (a flipped byte); a new cluster
#                   of 2 ps restores the one before, names the skipped one,
#                   and trains on: variables byte-identical to local
#                   training of the same number of steps
#   refusals        a worker whose model differs is refused naming the
#                   variable and both shapes while the cluster goes on; a
#                   variable on a ps that nothing trains is refused by name
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1),
# RF_TEST_TIME_SCALE (multiplies every timeout). Needs only bash and
# coreutils (or busybox), so it also runs in the rxe guest (rxe.session).
set -uo pipefail
case_name=${1:?case}
task=${2:?path to rf_session_task}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

# cluster NPS NW: sets ps_hosts and worker_hosts on free ports.
cluster() {
    local i port list=
    for ((i = 0; i < $1; i++)); do
        free_port port || { fail "no free port"; return 1; }
        list+=${list:+,}$host:$port
    done
    ps_hosts=$list
    list=
    for ((i = 0; i < $2; i++)); do
        free_port port || { fail "no free port"; return 1; }
        list+=${list:+,}$host:$port
    done
    worker_hosts=$list
}

# start NAME ROLE ARGS...: a task in the background (output in $tmp/NAME).
start() {
    local name=$1 role=$2
    shift 2
    timeout "$(t 60)" "$task" "$role" --ps_hosts="$ps_hosts" \
        --worker_hosts="$worker_hosts" "$@" >"$tmp/$name" 2>&1 &
    pids+=($!)
    eval "pid_$name=$!"
}

# finish NAME WANT: waits for task NAME and checks its exit status.
finish() {
    local pid_var=pid_$1 rc
    wait "${!pid_var}"
    rc=$?
    if [[ $rc -ne $2 ]]; then
        fail "$1 exited $rc, want $2"
        show "$tmp/$1"
        return 1
    fi
    return 0
}

# oracle NPS OPTIM ARGS...: local training vs one worker on NPS ps tasks.
oracle() {
    local nps=$1 optim=$2
    shift 2
    local common=(--steps=25 --optim="$optim" --seed=11 "$@")
    timeout "$(t 60)" "$task" local "${common[@]}" --out="$tmp/local.bin" \
        >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    cluster "$nps" 1 || return
    local i
    for ((i = 0; i < nps; i++)); do
        start "ps$i" ps --task_index=$i "${common[@]}"
    done
    start w0 worker --task_index=0 "${common[@]}" --out="$tmp/dist.bin"
    finish w0 0 || return
    for ((i = 0; i < nps; i++)); do
        finish "ps$i" 0 || return
        grep -q "^ps $i: shut down by the chief" "$tmp/ps$i" ||
            fail "ps $i did not report the chief's shutdown"
    done
    local what="$optim on $nps ps, ${*:-apply=ps}"
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "$what: variables byte-identical to local training ($(stat -c %s "$tmp/dist.bin") bytes; $(grep -m1 "^steps" "$tmp/w0"))"
    else
        fail "$what: variables differ from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
    if [[ "$(grep '^loss' "$tmp/local")" != "$(grep '^loss' "$tmp/w0")" ]]; then
        fail "$what: losses differ: local '$(grep '^loss' "$tmp/local")', worker '$(grep '^loss' "$tmp/w0")'"
    fi
}

case_async() {
    cluster 2 2 || return
    local common=(--steps=1000 --optim=adagrad --seed=5)
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --out="$tmp/v.bin"
    local all=1 n
    for n in w0 w1 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    ok "2 ps x 2 workers: every task exited 0"
    local s0 s1 g
    s0=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w0")
    s1=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w1")
    g=$(sed -n 's/^final global_step \([0-9]*\)$/\1/p' "$tmp/w0")
    if [[ -n $s0 && -n $s1 && -n $g ]] && ((s0 + s1 == g && g >= 1000 && s0 > 0 && s1 > 0)); then
        ok "global_step $g == $s0 (worker 0) + $s1 (worker 1) steps"
    else
        fail "global_step '$g' is not the sum of the steps '$s0' + '$s1'"
        show "$tmp/w0"
    fi
    if awk '/^loss/ { exit !($3 < $2) }' "$tmp/w0"; then
        ok "chief's loss went down: $(grep '^loss' "$tmp/w0")"
    else
        fail "chief's loss did not go down: $(grep '^loss' "$tmp/w0")"
    fi
}

case_refusals() {
    cluster 1 2 || return
    local common=(--steps=40 --optim=adam --seed=3)
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}"
    start bad worker --task_index=1 "${common[@]}" --width=8
    finish bad 3
    if grep -q "hidden/kernel" "$tmp/bad" && grep -qF "[24,16]" "$tmp/bad" &&
        grep -qF "[24,8]" "$tmp/bad"; then
        ok "a worker with another model is refused: $(grep -m1 refused "$tmp/bad")"
    else
        fail "the refusal does not name hidden/kernel, [24,16] and [24,8]"
        show "$tmp/bad"
    fi
    start w1 worker --task_index=1 "${common[@]}"
    local all=1 n
    for n in w1 w0 ps0; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] && ok "the cluster trained on after the refusal (every task exited 0)"

    cluster 1 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --extra_ps_variable
    finish w0 3
    if grep -q "variable 'not_trained' on /job:ps/task:0 is neither trainable nor an optimizer slot" "$tmp/w0"; then
        ok "a variable on a ps that nothing trains is refused: $(grep -m1 refused "$tmp/w0")"
    else
        fail "the untrained ps variable was not refused by name"
        show "$tmp/w0"
    fi
    kill "$pid_ps0" 2>/dev/null
}

case_checkpoint() {
    local common=(--optim=adam --seed=9)
    timeout "$(t 60)" "$task" local "${common[@]}" --steps=40 \
        --out="$tmp/local.bin" >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    local dir=$tmp/ckpt
    mkdir -p "$dir"
    cluster 1 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --steps=20 --save_every=10 \
        --checkpoint_dir="$dir"
    finish w0 0 && finish ps0 0 || return
    if grep -q "^saved $dir/model.ckpt-10.safetensors" "$tmp/w0" &&
        grep -q "^saved $dir/model.ckpt-20.safetensors" "$tmp/w0"; then
        ok "the chief saved at steps 10 and 20"
    else
        fail "no checkpoints at steps 10 and 20"
        show "$tmp/w0"
        return
    fi
    # one byte flipped in the newest checkpoint's last tensor data
    local f=$dir/model.ckpt-20.safetensors size
    size=$(stat -c %s "$f")
    printf '\x5a' | dd of="$f" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
    cluster 2 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --steps=40 \
        --checkpoint_dir="$dir" --out="$tmp/dist.bin"
    finish w0 0 && finish ps0 0 && finish ps1 0 || return
    local line
    line=$(grep -m1 '^restored from' "$tmp/w0")
    if [[ $line == "restored from $dir/model.ckpt-10.safetensors"* &&
        $line == *model.ckpt-20* ]]; then
        ok "the corrupt newest checkpoint was skipped: $line"
    else
        fail "restore line: '$line'"
        show "$tmp/w0"
    fi
    if grep -q '^steps 30 global_step 40' "$tmp/w0"; then
        ok "restored at global_step 10, trained 30 steps to 40"
    else
        fail "did not resume from step 10: $(grep -m1 '^steps' "$tmp/w0")"
    fi
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "save on 1 ps, restore on 2 ps: variables byte-identical to 40 local steps"
    else
        fail "variables differ from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
}

case $case_name in
oracle_ps)
    oracle 1 adam
    oracle 2 adam
    oracle 1 momentum
    ;;
oracle_worker)
    oracle 1 adam --apply=worker
    oracle 2 adam --apply=worker
    oracle 2 rmsprop --apply=worker
    ;;
oracle_locking)
    oracle 1 adam --apply=worker --use_locking
    oracle 2 adagrad --apply=worker --use_locking
    ;;
async) case_async ;;
refusals) case_refusals ;;
checkpoint) case_checkpoint ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
