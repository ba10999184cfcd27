#!/usr/bin/env bash
# tests/integration/fault/fault_test.sh CASE RF_TRAINER RF_LAUNCH RF_CKPT:
# fault-injection tests of a whole rf-trainer job (2 ps tasks and 2 workers
# unless a case says otherwise, real processes on $host, real signals).
# Run them with `ctest -L fault` (build dir; `--output-on-failure` shows
# what each checked), or one case by hand:
#   bash fault_test.sh ps_kill build/tools/rf-trainer build/tools/rf-launch \
#       build/tools/rf-ckpt
# Prints every check (ok: / FAIL:) and, for the kills, the measured times
# (kill -> the chief's "session lost" line -> its "recovered" line); exits 0
# on success, 1 on a failed check, 77 without the Fashion-MNIST dataset.
#
# Cases:
#   ps_kill     two fault-free reference runs (their test accuracies must
#               agree within half the tolerance), then one run per kill
#               point (RF_FAULT_KILL_POINTS, default all five: early: ps1
#               before the first periodic checkpoint; ckpt1: ps0 right after
#               the first periodic checkpoint; mid: ps1 half-way; ckpt: ps0
#               right after a later checkpoint; end: ps0 near the last
#               step), each under rf-launch --restart_on_failure with kill
#               -9 of that ps task. Each: the job exits 0; its test accuracy
#               is within the tolerance (RF_FAULT_ACC_TOL, default 0.01) of
#               the references' mean; the chief printed "session lost" and
#               "recovered" after the kill; rf-launch restarted exactly the
#               killed ps, once (its restarts summary); every global_step
#               the chief prints (progress, step counter, checkpoint,
#               session and recovery lines, in order) is >= the global_step
#               of the last checkpoint it saved before printing it, and each
#               restore after the kill is of exactly that checkpoint
#               ("restored .../model.ckpt-C..., global_step C"); every
#               checkpoint file left in the directory verifies (rf-ckpt
#               verify, strict: every CRC32C there and matching) and no
#               temporary one is left. Prints, per kill, the time from the
#               kill to each worker's "session lost" and "recovered" lines,
#               and what each worker saw.
#   worker_kill kill -9 of worker 1 mid-run. Without restart (tasks started
#               by hand: rf-launch without --restart_on_failure would stop
#               the whole job): the chief trains on to the last step, waits
#               --stop_grace_secs=5 (4.5 s at least: the output's latency;
#               at most 10 s more), names /job:worker/task:1 as not
#               finished, evaluates and exits 1; both ps tasks are shut down
#               by it and exit 0; worker 1 died of SIGKILL. With rf-launch
#               --restart_on_failure: worker 1 is restarted once, rejoins
#               ("session ready: joined"), finishes, and the job exits 0.
#   chief_kill  kill -9 of worker 0 (the chief) under rf-launch
#               --restart_on_failure, between checkpoints: it is restarted
#               once, restores the newest checkpoint the state file named at
#               the kill (exact name and global_step), the global_step check
#               of ps_kill holds, the job exits 0, accuracy >= 0.78.
#   chief_mid_checkpoint  one worker (so checkpoint names are exact steps):
#               RF_TEST_CKPT_STOP_BEFORE_RENAME stops the chief between
#               writing and renaming model.ckpt-<2S>; the test sees it
#               stopped (state T in /proc, its .tmp file written, no
#               model.ckpt-<2S>, the state file's newest model.ckpt-<S>) and
#               kill -9s it; restarted, it restores model.ckpt-<S>, the job
#               exits 0, every checkpoint the state file names verifies, none
#               is a temporary file, the newest is the final one.
#   corrupt_checkpoint  a short job (1 ps, 1 worker) leaves
#               model.ckpt-{0,S,2S,3S}; three copies of the directory get
#               the newest truncated to half, one byte of a tensor's data
#               flipped, one byte of the JSON header flipped (a tensor
#               name's letter: still valid JSON); rf-ckpt verify must refuse
#               each; a longer job on each copy prints "session ready:
#               restored .../model.ckpt-<2S>; skipped <the corrupt file's
#               path>: <reason>, global_step 2S" and completes.
#   still_waiting  a worker with no ps running and --max_wait_secs=25
#               prints "still waiting for /job:ps/task:0:" within 15 s,
#               gives up not before 25 s and within 25 + 20 s naming
#               max_wait_secs=25 and /job:ps/task:0, exits non-zero; then a
#               chief whose ps starts 12 s after it prints the same line
#               before the ps starts, and both complete (exit 0).
#
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1;
# 10.77.0.1 in the rxe guest), RF_TEST_TIME_SCALE (multiplies every
# timeout), RF_FASHION_MNIST_DIR; for ps_kill in the rxe guest:
# RF_FAULT_KILL_POINTS (comma-separated), RF_FAULT_STEPS (train steps,
# default 2400; checkpoints every sixth of them), RF_FAULT_BATCH (default
# 1000), RF_FAULT_LR (adagrad's learning rate, default 0.05),
# RF_FAULT_ACC_TOL (default 0.01); RF_FAULT_KEEP (set: keep the outputs and
# checkpoint directories, and print where). Needs bash 5 ($EPOCHREALTIME),
# coreutils or busybox and /proc, so it runs in the rxe guest too.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
launch=${3:?path to rf-launch}
rfckpt=${4:?path to rf-ckpt}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG RF_TEST_CKPT_STOP_BEFORE_RENAME
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../common/job.sh"
tmp=$(mktemp -d)
keep=${RF_FAULT_KEEP:-}
trap cleanup EXIT

# The job: a softmax model with adagrad, whose fault-free accuracy varied by
# 0.0024 over six 2-worker runs (0.8356-0.8380; mlp:64 runs varied by
# 0.006-0.02 on a loaded machine), large batches, checkpoints by steps.
steps=${RF_FAULT_STEPS:-2400}
every=$((steps / 6))
job_flags=(--model=softmax --optimizer=adagrad
    --learning_rate="${RF_FAULT_LR:-0.05}"
    --batch_size="${RF_FAULT_BATCH:-1000}" --threads=1 --log_every="$every"
    --log_step_count_steps=$((every / 4 > 0 ? every / 4 : 1))
    --max_wait_secs="$(t 60)")




# split OUT: "M0 + M1", the steps each worker ran ("training: M steps";
# several lines for a restarted worker)
split() {
    local w m desc=
    for w in worker0 worker1; do
        m=$(lines_of "$1" "$w" | sed -n 's/^[0-9.]* training: \([0-9]*\) steps of .*/\1/p' |
            awk 'NR > 1 { printf "+" } { printf "%s", $0 }')
        desc+="${desc:+ + }${m:-?}"
    done
    echo "$desc"
}


# ---- ps_kill ----------------------------------------------------------------

# reference_run K: fault-free run K; appends its accuracy to refs
reference_run() {
    local out=$tmp/ref$1.out dir=$tmp/ref$1.ckpt acc
    start_launch "$out" 2 2 --restart_on_failure -- "${job_flags[@]}" \
        --train_steps="$steps" --checkpoint_dir="$dir" \
        --save_checkpoint_steps="$every"
    finish_launch "$out"
    acc=$(accuracy "$out" worker0)
    if [[ $rc -ne 0 || -z $acc ]]; then
        fail "reference run $1: exit $rc, accuracy '$acc'"
        show "$out" 30
        return 1
    fi
    if has_line "$out" worker0 "session lost" || has_line "$out" worker1 "session lost"; then
        fail "reference run $1 lost its session without a fault"
    fi
    expect_restarts "$out" "ps0 0, ps1 0, worker0 0, worker1 0"
    ok "reference run $1: test accuracy $acc, $(saved_ckpts "$out" | wc -l) checkpoints, worker steps $(split "$out")"
    refs+=("$acc")
}

# Two fault-free runs: the kills are compared with their mean, which is
# meaningful only while they agree well within the tolerance (tol, 0.01;
# six runs on a quiet host spread over 0.0024). Two more than half of it
# apart get a third run; three more than the tolerance apart fail
# (check_references).
tol=${RF_FAULT_ACC_TOL:-0.01}
references() {
    reference_run 1 && reference_run 2 || return 1
    refs_agree "$tol" || {
        ok "references 1 and 2 are $spread apart: a third"
        reference_run 3 || return 1
    }
    check_references "$tol"
}

# kill_run POINT JOB INDEX WAIT...: one job with a kill -9 of JOB INDEX when
# "wait_until $(t 60) lpid WAIT..." succeeds (WAIT gets OUT and TASK first).
timings=()
kill_run() {
    local point=$1 job=$2 idx=$3
    shift 3
    local out=$tmp/$point.out dir=$tmp/$point.ckpt name=$job$idx
    echo "--- $point: kill -9 $name"
    start_launch "$out" 2 2 --restart_on_failure -- "${job_flags[@]}" \
        --train_steps="$steps" --checkpoint_dir="$dir" \
        --save_checkpoint_steps="$every"
    if ! wait_until "$(t 60)" "$lpid" "$@"; then
        fail "$point: the kill point ($*) never came"
        finish_launch "$out"
        show "$out" 20
        return
    fi
    local victim tk gs_k
    victim=$(task_pid "$job" "$idx")
    if [[ -z $victim ]]; then
        fail "$point: no running $name child of rf-launch"
        finish_launch "$out"
        return
    fi
    gs_k=$(last_gs "$out" worker0)
    tk=$(now)
    kill -9 "$victim"
    echo "$point: killed $name (pid $victim) with the chief at global_step $gs_k, checkpoints so far: $(saved_ckpts "$out" | tr '\n' ' ')"
    finish_launch "$out"
    if [[ $rc -eq 0 ]]; then
        ok "$point: job exit 0"
    else
        fail "$point: job exit $rc"
        show "$out" 30
    fi
    local acc
    acc=$(accuracy "$out" worker0)
    within "$acc" "$ref_acc" "$tol" &&
        ok "$point: test accuracy $acc within $tol of the reference $ref_acc (worker steps $(split "$out"))" ||
        fail "$point: test accuracy '$acc', reference $ref_acc (worker steps $(split "$out"))"
    local lost rec lost1 rec1
    lost=$(first_after "$out" worker0 "$tk" ": session lost \\(")
    rec=$(first_after "$out" worker0 "$tk" ": recovered in ")
    [[ -n $lost && -n $rec ]] &&
        ok "$point: chief: $(lines_of "$out" worker0 | awk -v t="$tk" '$1 >= t && /: recovered in /' | head -n 1 | cut -d' ' -f2-)" ||
        fail "$point: the chief printed no 'session lost' / 'recovered' after the kill"
    has_line "$out" "" "rf-launch: $name was killed by signal 9 (SIGKILL); restarting it" &&
        ok "$point: rf-launch restarted $name" ||
        fail "$point: no 'rf-launch: $name was killed by signal 9 (SIGKILL); restarting it' line"
    local want="ps0 0, ps1 0, worker0 0, worker1 0"
    want=${want/$name 0/$name 1}
    expect_restarts "$out" "$want"
    check_steps "$out" "$tk"
    verify_dir "$dir"
    # the chief was not killed: a save the kill broke leaves no file behind
    local left
    left=$(tmp_files "$dir")
    [[ -z $left ]] && ok "$point: no temporary checkpoint file left" ||
        fail "$point: temporary files left in the directory: $left"
    # what each worker saw (the provider's error), for the record
    local w
    for w in worker0 worker1; do
        echo "$point: $w: $(lines_of "$out" "$w" | awk -v t="$tk" '$1 >= t && /: session lost \(/' | head -n 1 | cut -d' ' -f2- | cut -c1-400)"
        lines_of "$out" "$w" | awk -v t="$tk" -v w="$w" '$1 >= t && /connection lost: / {
            s = $0; sub(/.*connection lost: /, "", s)
            printf "    %s +%.2f s: connection lost: %s\n", w, $1 - t, substr(s, 1, 200) }' | head -n 4
    done
    lost1=$(first_after "$out" worker1 "$tk" ": session lost \\(")
    rec1=$(first_after "$out" worker1 "$tk" ": recovered in ")
    local row
    row=$(printf '%s %s %s: chief %s / %s s, worker1 %s / %s s (kill -> session lost / recovered)' \
        "$RF_FABRIC" "$point" "$name" \
        "$([[ -n $lost ]] && elapsed "$tk" "$lost" || echo -)" \
        "$([[ -n $rec ]] && elapsed "$tk" "$rec" || echo -)" \
        "$([[ -n $lost1 ]] && elapsed "$tk" "$lost1" || echo -)" \
        "$([[ -n $rec1 ]] && elapsed "$tk" "$rec1" || echo -)")
    echo "timing: $row"
    timings+=("$row")
}

case_ps_kill() {
    references || return
    local points=${RF_FAULT_KILL_POINTS:-early,ckpt1,mid,ckpt,end} p
    for p in ${points//,/ }; do
        case $p in
        early) kill_run early ps 1 gs_at_least "$tmp/early.out" worker0 $((steps / 24)) ;;
        ckpt1) kill_run ckpt1 ps 0 ckpt_after "$tmp/ckpt1.out" "$every" ;;
        mid) kill_run mid ps 1 gs_at_least "$tmp/mid.out" worker0 $((steps / 2)) ;;
        ckpt) kill_run ckpt ps 0 ckpt_after "$tmp/ckpt.out" $((every * 4)) ;;
        end) kill_run end ps 0 gs_at_least "$tmp/end.out" worker0 $((steps * 11 / 12)) ;;
        *) fail "unknown kill point '$p'" ;;
        esac
    done
    echo "detection / recovery times (s after the kill):"
    printf '    %s\n' "${timings[@]}"
}

# ---- worker_kill -----------------------------------------------------------



worker_kill_by_hand() {
    echo "--- without restart: 2 ps + 2 workers started by hand, --stop_grace_secs=5"
    make_cluster 2 2 || {
        fail "no free ports"
        return
    }
    local train=("${job_flags[@]}" --train_steps="$steps" --stop_grace_secs=5)
    local name pid_ps0 pid_ps1 pid_w0 pid_w1 task_w1
    for name in ps:0 ps:1 worker:0 worker:1; do
        start_task "$tmp/${name/:/}.out" "${cluster[@]}" --job_name="${name%:*}" \
            --task_index="${name#*:}" "${train[@]}"
        # shellcheck disable=SC2034 # pid_ps0 and pid_ps1 are read as ${!p}
        case $name in
        ps:0) pid_ps0=$tpid ;;
        ps:1) pid_ps1=$tpid ;;
        worker:0) pid_w0=$tpid ;;
        worker:1) pid_w1=$tpid task_w1=$tpid_task ;;
        esac
    done
    local w0=$tmp/worker0.out
    if ! wait_until "$(t 60)" "$pid_w0" gs_at_least "$w0" - $((steps / 4)); then
        fail "the chief never reached global_step $((steps / 4))"
        show "$w0" 20
        return
    fi
    local gs_k tk
    gs_k=$(last_gs "$w0" -)
    tk=$(now)
    kill -9 "$task_w1"
    echo "killed worker 1 (pid $task_w1) with the chief at global_step $gs_k"
    wait_exit "$pid_w0" "$(t 60)"
    local rc0=$wrc tend
    tend=$(now)
    stamped "$w0"
    echo "chief: exit $rc0, $(elapsed "$tk" "$tend") s after the kill"
    [[ $rc0 == 1 ]] && ok "the chief exits 1" || {
        fail "the chief exit '$rc0', want 1"
        show "$w0" 20
    }
    local twait tnamed
    twait=$(first_after "$w0" - "$tk" ": waiting at most 5 s for 1 other worker")
    tnamed=$(first_after "$w0" - "$tk" "/job:worker/task:1 did not finish")
    if [[ -n $twait && -n $tnamed ]]; then
        local waited
        waited=$(elapsed "$twait" "$tend")
        echo "the chief waited from its 'waiting at most 5 s' line to its exit: $waited s"
        awk -v w="$waited" -v m="$(t 10)" 'BEGIN { exit !(w >= 4.5 && w <= 5 + m) }' &&
            ok "the chief gave worker 1 the grace (5 s) and no more than $(t 10) s more: $waited s" ||
            fail "the chief waited $waited s, want 4.5 (5, less the output's latency) to $((5 + $(t 10))) s"
        ok "the chief names it: $(lines_of "$w0" - | grep -m1 'did not finish' | cut -d' ' -f2-)"
    else
        fail "the chief printed no 'waiting at most 5 s' or no '/job:worker/task:1 did not finish' line"
        show "$w0" 15
    fi
    local g
    g=$(lines_of "$w0" - | sed -n 's/^[0-9.]* global_step at the end: //p')
    [[ $g =~ ^[0-9]+$ ]] && ((g >= steps)) &&
        ok "the chief trained on alone to the last step: global_step at the end $g" ||
        fail "global_step at the end '$g', want >= $steps"
    [[ -n $(accuracy "$w0" -) ]] && ok "the chief evaluated: test accuracy $(accuracy "$w0" -)" ||
        fail "the chief printed no test accuracy"
    local k p
    for k in 0 1; do
        p=pid_ps$k
        wait_exit "${!p}" "$(t 20)"
        if [[ $wrc == 0 ]] && has_line "$tmp/ps$k.out" - "ps task $k: shut down by the chief"; then
            ok "ps$k: shut down by the chief, exit 0"
        else
            fail "ps$k: exit '$wrc' (running: not shut down)"
            show "$tmp/ps$k.out" 8
        fi
    done
    wait_exit "$pid_w1" 5
    [[ $wrc == 137 ]] && ok "worker 1 died of SIGKILL (status 137)" ||
        fail "worker 1's timeout wrapper: status '$wrc', want 137"
}

worker_kill_restart() {
    echo "--- with rf-launch --restart_on_failure"
    local out=$tmp/wr.out
    start_launch "$out" 2 2 --restart_on_failure -- "${job_flags[@]}" \
        --train_steps=$((steps * 2))
    if ! wait_until "$(t 60)" "$lpid" gs_at_least "$out" worker0 $((steps / 4)); then
        fail "the chief never reached global_step $((steps / 4))"
        finish_launch "$out"
        show "$out" 20
        return
    fi
    local victim tk
    victim=$(task_pid worker 1)
    tk=$(now)
    kill -9 "$victim"
    echo "killed worker1 (pid $victim) with the chief at global_step $(last_gs "$out" worker0)"
    finish_launch "$out"
    [[ $rc == 0 ]] && ok "job exit 0" || {
        fail "job exit $rc"
        show "$out" 30
    }
    has_line "$out" "" "rf-launch: worker1 was killed by signal 9 (SIGKILL); restarting it" &&
        ok "rf-launch restarted worker1" || fail "no 'worker1 was killed by signal 9 ... restarting it' line"
    expect_restarts "$out" "ps0 0, ps1 0, worker0 0, worker1 1"
    local tj
    tj=$(first_after "$out" worker1 "$tk" ": session ready: joined, global_step ")
    if [[ -n $tj ]]; then
        ok "worker1 rejoined $(elapsed "$tk" "$tj") s after the kill: $(lines_of "$out" worker1 | awk -v t="$tk" '$1 >= t && /session ready: joined/' | head -n 1 | cut -d' ' -f2-)"
    else
        fail "the restarted worker1 printed no 'session ready: joined'"
        show "$out" 20
    fi
    [[ -n $(first_after "$out" worker1 "$tk" "^[0-9.]* worker 1: done after ") ]] &&
        ok "the restarted worker1 finished: $(lines_of "$out" worker1 | grep 'done after' | tail -n 1 | cut -d' ' -f2-)" ||
        fail "the restarted worker1 printed no 'worker 1: done after'"
    has_line "$out" worker0 "did not finish" && fail "the chief reports a worker that did not finish"
}

# ---- chief_kill ------------------------------------------------------------


case_chief_kill() {
    local out=$tmp/ck.out dir=$tmp/ck.ckpt T=$((steps * 2)) S=$((steps / 3))
    start_launch "$out" 2 2 --restart_on_failure -- "${job_flags[@]}" \
        --train_steps=$T --checkpoint_dir="$dir" --save_checkpoint_steps=$S
    # between checkpoints: a quarter interval after the first periodic one
    local c1=
    if wait_until "$(t 60)" "$lpid" ckpt_after "$out" "$S"; then
        c1=$(saved_ckpts "$out" | awk -v s="$S" '$1 >= s { print; exit }')
    fi
    if [[ -z $c1 ]] || ! wait_until "$(t 60)" "$lpid" gs_at_least "$out" worker0 $((c1 + S / 4)); then
        fail "no periodic checkpoint or no progress after it"
        finish_launch "$out"
        show "$out" 20
        return
    fi
    local victim tk newest
    victim=$(task_pid worker 0)
    tk=$(now)
    kill -9 "$victim"
    newest=$(state_newest "$dir")
    echo "killed worker0 (pid $victim) at global_step $(last_gs "$out" worker0); the state file's newest: $newest"
    finish_launch "$out"
    [[ $rc == 0 ]] && ok "job exit 0" || {
        fail "job exit $rc"
        show "$out" 30
    }
    has_line "$out" "" "rf-launch: worker0 was killed by signal 9 (SIGKILL); restarting it" &&
        ok "rf-launch restarted worker0" || fail "no 'worker0 was killed by signal 9 ... restarting it' line"
    expect_restarts "$out" "ps0 0, ps1 0, worker0 1, worker1 0"
    local want="session ready: restored $dir/$newest, global_step ${newest//[^0-9]/}"
    local got
    got=$(lines_of "$out" worker0 | awk -v t="$tk" '$1 >= t && /: session ready: /' | head -n 1 | cut -d' ' -f2-)
    # "(now M)": the other worker moved global_step on after the restore
    [[ -n $newest && ($got == *": $want" || $got == *": $want (now "[0-9]*")") ]] &&
        ok "the restarted chief: $got" ||
        fail "the restarted chief: '$got', want '...: $want'"
    check_steps "$out" "$tk"
    local acc
    acc=$(accuracy "$out" worker0)
    [[ -n $acc ]] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.78) }' &&
        ok "test accuracy $acc >= 0.78" || fail "test accuracy '$acc' < 0.78"
    verify_dir "$dir"
}

# ---- chief_mid_checkpoint --------------------------------------------------

proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }
stopped() { [[ ! -e $2 && $(proc_state "$1") == T ]]; }

case_chief_mid_checkpoint() {
    local out=$tmp/mc.out dir=$tmp/mc.ckpt S=$every
    local stop_at=model.ckpt-$((2 * S)).safetensors prev=model.ckpt-$S.safetensors
    echo "$stop_at" >"$tmp/marker"
    echo "one worker: checkpoints at multiples of $S; the chief stops before renaming $stop_at"
    RF_TEST_CKPT_STOP_BEFORE_RENAME=$tmp/marker start_launch "$out" 2 1 \
        --restart_on_failure -- "${job_flags[@]}" --train_steps="$steps" \
        --checkpoint_dir="$dir" --save_checkpoint_steps="$S"
    local chief='' i=0
    while [[ -z $chief ]] && ((i++ < 100)); do
        chief=$(task_pid worker 0) || sleep 0.05
    done
    if [[ -z $chief ]] || ! wait_until "$(t 60)" "$lpid" stopped "$chief" "$tmp/marker"; then
        fail "the chief (pid '$chief') did not stop (state '$(proc_state "$chief")', marker $(ls "$tmp/marker" 2>&1))"
        finish_launch "$out"
        show "$out" 20
        return
    fi
    local tmpfile
    tmpfile=$(tmp_files "$dir" | tr ' ' '\n' | grep -m1 "^\.$stop_at\.tmp\.$chief\.")
    ok "the chief (pid $chief) is stopped: state $(proc_state "$chief"), marker consumed"
    [[ -n $tmpfile && -s $dir/$tmpfile ]] && ok "its temporary file $tmpfile is written ($(wc -c <"$dir/$tmpfile") bytes)" ||
        fail "no .$stop_at.tmp.$chief.* in $dir: $(ls -a "$dir" | tr '\n' ' ')"
    [[ ! -e $dir/$stop_at ]] && ok "$stop_at does not exist" || fail "$stop_at exists before the rename"
    [[ $(state_newest "$dir") == "$prev" ]] && ok "the state file's newest is $prev" ||
        fail "the state file's newest is '$(state_newest "$dir")', want $prev"
    local tk
    tk=$(now)
    kill -9 "$chief"
    finish_launch "$out"
    [[ $rc == 0 ]] && ok "job exit 0" || {
        fail "job exit $rc"
        show "$out" 30
    }
    expect_restarts "$out" "ps0 0, ps1 0, worker0 1"
    local want="session ready: restored $dir/$prev, global_step $S" got
    got=$(lines_of "$out" worker0 | awk -v t="$tk" '$1 >= t && /: session ready: /' | head -n 1 | cut -d' ' -f2-)
    [[ $got == *": $want" || $got == *": $want (now "[0-9]*")" ]] &&
        ok "the restarted chief: $got" ||
        fail "the restarted chief: '$got', want '...: $want'"
    verify_state "$dir"
    [[ $(state_newest "$dir") == "model.ckpt-$steps.safetensors" ]] &&
        ok "the newest is the final model.ckpt-$steps.safetensors" ||
        fail "the state file's newest '$(state_newest "$dir")', want model.ckpt-$steps.safetensors"
    echo "left over: $(tmp_files "$dir")(tolerated)"
}

# ---- corrupt_checkpoint ----------------------------------------------------

# flip_byte FILE OFFSET MASK: XORs the byte at OFFSET with MASK
flip_byte() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    # shellcheck disable=SC2059
    printf "\\$(printf %03o $((b ^ $3)))" |
        dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

case_corrupt_checkpoint() {
    local base=$tmp/cc.ckpt S=$every out
    out=$tmp/cc0.out
    start_launch "$out" 1 1 -- "${job_flags[@]}" --train_steps=$((3 * S)) \
        --checkpoint_dir="$base" --save_checkpoint_steps="$S"
    finish_launch "$out"
    local newest=model.ckpt-$((3 * S)).safetensors prev=model.ckpt-$((2 * S)).safetensors
    if [[ $rc -ne 0 || $(state_newest "$base") != "$newest" || ! -e $base/$prev ]]; then
        fail "the first job: exit $rc, newest '$(state_newest "$base")', want $newest and $prev"
        show "$out" 20
        return
    fi
    local kept=("$base"/model.ckpt-*.safetensors)
    ok "the first job left ${#kept[@]} checkpoints, newest $newest"
    local kind
    for kind in truncate data header; do
        local dir=$tmp/cc-$kind.ckpt
        cp -r "$base" "$dir"
        local f=$dir/$newest size hlen
        size=$(wc -c <"$f")
        hlen=$(od -An -tu8 -N8 "$f" | tr -d ' ')
        case $kind in
        truncate)
            truncate -s $((size / 2)) "$f"
            echo "--- $kind: $newest cut from $size to $((size / 2)) bytes"
            ;;
        data)
            local off=$((8 + hlen + (size - 8 - hlen) / 2))
            flip_byte "$f" "$off" 255
            echo "--- $kind: byte $off of $newest (tensor data $((8 + hlen))..$size) XOR 0xff"
            ;;
        header)
            local hdr idx off
            hdr=$(head -c $((8 + hlen)) "$f" | tail -c "$hlen")
            idx=${hdr%%logits/kernel\"*}
            off=$((8 + ${#idx} + 7))
            flip_byte "$f" "$off" 32
            echo "--- $kind: byte $off of $newest (in the JSON header, 8..$((8 + hlen))): 'k' of \"logits/kernel\" -> '$(head -c $((off + 1)) "$f" | tail -c 1)'"
            ;;
        esac
        if "$rfckpt" verify "$f" >"$tmp/verify" 2>&1; then
            fail "$kind: rf-ckpt verify accepts the corrupted file"
            continue
        fi
        echo "rf-ckpt verify: $(head -n 1 "$tmp/verify")"
        out=$tmp/cc-$kind.out
        start_launch "$out" 1 1 -- "${job_flags[@]}" --train_steps=$((5 * S)) \
            --checkpoint_dir="$dir" --save_checkpoint_steps="$S"
        finish_launch "$out"
        [[ $rc == 0 ]] && ok "$kind: job exit 0" || {
            fail "$kind: job exit $rc"
            show "$out" 20
        }
        # "session ready: restored DIR/PREV; skipped DIR/NEWEST: <reason>,
        # global_step 2S"
        local got want="session ready: restored $dir/$prev; skipped $f: "
        got=$(lines_of "$out" worker0 | grep -m1 ': session ready: ' | cut -d' ' -f2-)
        [[ $got == *": $want"* && $got == *", global_step $((2 * S))" ]] &&
            ok "$kind: $got" ||
            fail "$kind: '$got', want '...: $want<reason>, global_step $((2 * S))'"
        local g
        g=$(lines_of "$out" worker0 | sed -n 's/^[0-9.]* global_step at the end: //p')
        [[ $g == $((5 * S)) ]] && ok "$kind: completed, global_step at the end $g" ||
            fail "$kind: global_step at the end '$g', want $((5 * S))"
    done
}

# ---- still_waiting ---------------------------------------------------------

case_still_waiting() {
    echo "--- no ps at all, worker 1 with --max_wait_secs=25"
    make_cluster 1 2 || {
        fail "no free ports"
        return
    }
    local train=("${job_flags[@]/--max_wait_secs=*/--max_wait_secs=25}" --train_steps=200)
    local t0 out=$tmp/sw1.out
    t0=$(now)
    start_task "$out" "${cluster[@]}" --job_name=worker --task_index=1 "${train[@]}"
    local pid=$tpid
    wait_exit "$pid" "$(t 60)"
    local rc1=$wrc tend
    tend=$(now)
    stamped "$out"
    local tw took
    took=$(elapsed "$t0" "$tend")
    tw=$(first_after "$out" - "$t0" "still waiting for /job:ps/task:0: ")
    echo "worker 1: exit $rc1 after $took s"
    if [[ -n $tw ]]; then
        local at
        at=$(elapsed "$t0" "$tw")
        awk -v a="$at" -v m="$(t 15)" 'BEGIN { exit !(a <= m) }' &&
            ok "'still waiting' after $at s: $(lines_of "$out" - | grep -m1 'still waiting' | cut -d' ' -f2-)" ||
            fail "the first 'still waiting' line came after $at s, want <= $(t 15)"
    else
        fail "no 'still waiting for /job:ps/task:0:' line"
        show "$out" 10
    fi
    [[ $rc1 != 0 && $rc1 != running ]] && ok "exit $rc1 (non-zero)" || fail "exit '$rc1', want non-zero"
    awk -v a="$took" -v m="$(t 20)" 'BEGIN { exit !(a >= 25 && a <= 25 + m) }' &&
        ok "gave up after $took s (25 s .. $((25 + $(t 20))) s)" ||
        fail "gave up after $took s, want 25 .. $((25 + $(t 20))) s"
    local why
    why=$(lines_of "$out" - | grep -m1 'max_wait_secs=25' | cut -d' ' -f2-)
    [[ $why == *"/job:ps/task:0"* ]] && ok "the error: $why" ||
        fail "no error naming max_wait_secs=25 and /job:ps/task:0 ('$why')"

    echo "--- the chief first, its ps 12 s later"
    make_cluster 1 1 || {
        fail "no free ports"
        return
    }
    train=("${job_flags[@]/--max_wait_secs=*/--max_wait_secs=$(t 25)}" --train_steps=200)
    local ow=$tmp/sw2w.out op=$tmp/sw2p.out pw pp
    t0=$(now)
    start_task "$ow" "${cluster[@]}" --job_name=worker --task_index=0 "${train[@]}"
    pw=$tpid
    sleep 12
    local tps
    tps=$(now)
    start_task "$op" "${cluster[@]}" --job_name=ps --task_index=0 "${train[@]}"
    pp=$tpid
    wait_exit "$pw" "$(t 60)"
    local rcw=$wrc
    wait_exit "$pp" "$(t 20)"
    local rcp=$wrc
    stamped "$ow"
    echo "chief: exit $rcw after $(elapsed "$t0") s, ps: exit $rcp"
    tw=$(first_after "$ow" - "$t0" "still waiting for /job:ps/task:0: ")
    [[ -n $tw ]] && awk -v a="$tw" -v b="$tps" 'BEGIN { exit !(a < b) }' &&
        ok "the chief waited: 'still waiting' $(elapsed "$t0" "$tw") s after its start, the ps started after $(elapsed "$t0" "$tps") s" ||
        fail "no 'still waiting for /job:ps/task:0:' line before the ps started"
    [[ $rcw == 0 && $rcp == 0 ]] && ok "the job completed: chief and ps exit 0" || {
        fail "chief exit '$rcw', ps exit '$rcp', want 0 and 0"
        show "$ow" 10
    }
    [[ -n $(accuracy "$ow" -) ]] && ok "test accuracy $(accuracy "$ow" -)" ||
        fail "the chief printed no test accuracy"
}

case "$case_name" in
worker_kill)
    need_data
    worker_kill_by_hand
    worker_kill_restart
    ;;
chief_kill)
    need_data
    case_chief_kill
    ;;
chief_mid_checkpoint)
    need_data
    case_chief_mid_checkpoint
    ;;
corrupt_checkpoint)
    need_data
    case_corrupt_checkpoint
    ;;
still_waiting)
    need_data
    case_still_waiting
    ;;
ps_kill)
    need_data
    case_ps_kill
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
