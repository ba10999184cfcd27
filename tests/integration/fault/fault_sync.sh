#!/usr/bin/env bash
# tests/integration/fault/fault_sync.sh CASE RF_TRAINER RF_LAUNCH RF_CKPT:
# fault injection into sync-replicas jobs (issue 21 item 6): 2 ps tasks and
# 2 workers with --sync_replicas under rf-launch --restart_on_failure with
# --checkpoint_dir, real processes on $host, kill -9. `ctest -L fault`
# (fault.sync_*), or by hand:
#   bash fault_sync.sh sync_ps_kill build/tools/rf-trainer \
#       build/tools/rf-launch build/tools/rf-ckpt
# Exits 0 on success, 1 on a failed check, 77 without Fashion-MNIST.
#
# Cases (each one fault-free reference run of its configuration first,
# then its kill runs, every run checked alike):
#   sync_ps_kill      --replicas_to_aggregate=2 of 2 workers: kill -9 of ps0
#                     (global_step and the bias) a third of a checkpoint
#                     interval past half-way (steps since the checkpoint
#                     are trained again)
#   sync_worker_kill  2 of 2: kill -9 of worker 1 a third of the way in
#   sync_chief_kill   2 of 2: kill -9 of worker 0 (the chief) a quarter
#                     checkpoint interval after a periodic checkpoint
#   sync_backup       --replicas_to_aggregate=1 of 2 (worker 1 a backup
#                     whose late gradients are dropped): kill -9 of ps1 (the
#                     kernel), of worker 1 and of the chief, one job each
#   sync_chief_epoch  2 of 2: the chief stops itself right after its first
#                     push of a checkpoint's step (RF_TEST_SYNC_STOP_AFTER_
#                     PUSH) and is killed: restored to that very step, only
#                     the chief epoch tells worker 1 to run it again
# Checks, every run: rf-launch exits 0, having restarted exactly the killed
# task once (none in the reference); the chief's "global_step at the end"
# is exactly --train_steps (sync: one global step per averaged update);
# the sync audit (sync_audit.sh: from the ps tasks' audit trail at
# RF_LOG_LEVEL=debug in the job's RF_LOG_FILE: every update is the mean of
# N gradients, each tagged with the update's own step and from distinct
# clients, applied once, the update count one more per update, the
# updates between two restores of consecutive steps, every stale gradient
# dropped and counted, the trail complete against each ps's shutdown
# counters); in the backup configuration the reference dropped stale
# gradients (the refusals happen and are counted, never applied); every
# checkpoint file left verifies (tests/common/job.sh verify_dir). Kill
# runs also: the test accuracy is within RF_FAULT_ACC_TOL (default 0.01, the
# async cases' tolerance) of the reference's; a ps or chief kill is
# followed by the chief's "session lost" and "recovered" and the global_step
# invariant of the async cases (check_steps: never below the last saved
# checkpoint, restores of exactly it); a worker kill by the restarted
# worker's "session ready: joined" and its finish; a chief kill with 2 of 2
# by worker 1's "session lost" within 10 s of the restarted chief's restore
# (it waits for a step only the chief's gradient completes and must see
# global_step go back, not wait out op_timeout_ms), and worker 1 training
# again ("recovered in") at most the 1 s restart backoff + $(t 4) s after
# the kill and $(t 2) s after the restore (issue 26 item 2).
#
# Cases with the tasks started by hand, no reference, no restarts (issues
# 25 item 1 and 26 item 2; --member_timeout_secs=1):
#   sync_quorum_lost  2 of 2, --max_wait_secs=5 (scaled), worker 1 killed for good:
#                     the chief exits 138 within 5 + 1 + $(t 10) s of the
#                     kill, its last line names /job:worker/task:1 and
#                     replicas_to_aggregate=2, no recovery after the kill,
#                     a checkpoint saved then and verifying, both ps tasks
#                     shut down by it (exit 0)
#   sync_quorum_back  2 of 2, worker 1 killed and started again 1 s later:
#                     the chief saw it go and come back, the job completes
#                     (chief, worker 1 and ps tasks exit 0) at exactly
#                     --train_steps
#   sync_backup_gone  1 of 2, the backup (worker 1) stopped by
#                     RF_TEST_SYNC_STOP_AFTER_PUSH (before it could finish)
#                     and killed for good,
#                     --stop_grace_secs=30: the chief says it does not wait
#                     for it and exits 0 within $(t 5) s of its wait's
#                     start; the ps tasks exit 0
#
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1;
# 10.77.0.1 in the rxe guest), RF_TEST_TIME_SCALE, RF_FASHION_MNIST_DIR;
# RF_FAULT_SYNC_STEPS (--train_steps, default 900; a checkpoint every
# sixth), RF_FAULT_BATCH (default 1000), RF_FAULT_LR (default 0.05),
# RF_FAULT_ACC_TOL (default 0.01), RF_FAULT_KEEP (set: keep the outputs, logs
# and checkpoint directories, and print where). bash 5, coreutils or
# busybox, awk and /proc, so it runs in the rxe guest too (rxe.fault,
# rxe.fault_sync).
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
launch=${3:?path to rf-launch}
rfckpt=${4:?path to rf-ckpt}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG RF_TEST_CKPT_STOP_BEFORE_RENAME RF_LOG_FILE
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/../../common/lib.sh"
source "$here/../../common/job.sh"
source "$here/sync_audit.sh"
tmp=$(mktemp -d)
keep=${RF_FAULT_KEEP:-}
trap cleanup EXIT

# The async cases' job (softmax, adagrad, batches of 1000, checkpoints by
# steps) with sync replicas: with 2 of 2 a step is the mean of both
# workers' batches, so T steps are the async cases' 2T batches.
steps=${RF_FAULT_SYNC_STEPS:-900}
every=$((steps / 6))
tol=${RF_FAULT_ACC_TOL:-0.01}
job_flags=(--model=softmax --optimizer=adagrad
    --learning_rate="${RF_FAULT_LR:-0.05}"
    --batch_size="${RF_FAULT_BATCH:-1000}" --threads=1 --log_every="$every"
    --log_step_count_steps=$((every / 4 > 0 ? every / 4 : 1))
    --max_wait_secs="$(t 60)" --sync_replicas)

# run_job NAME N VICTIM WAIT...: one job of 2 ps x 2 workers with
# --replicas_to_aggregate=N; VICTIM "" (a reference) or JOB:INDEX, killed
# with -9 when "wait_until $(t 60) lpid WAIT..." succeeds (WAIT gets
# $tmp/NAME.out first). Sets out, acc and tk (the kill's time).
run_job() {
    local name=$1 n=$2 victim=$3
    shift 3
    out=$tmp/$name.out
    local dir=$tmp/$name.ckpt log=$tmp/$name.log
    echo "--- $name: --replicas_to_aggregate=$n of 2${victim:+, kill -9 ${victim/:/}}"
    RF_LOG_LEVEL=debug RF_LOG_FILE=$log start_launch "$out" 2 2 \
        --restart_on_failure -- "${job_flags[@]}" --replicas_to_aggregate="$n" \
        --train_steps="$steps" --checkpoint_dir="$dir" \
        --save_checkpoint_steps="$every"
    local t0=$lt0 want="ps0 0, ps1 0, worker0 0, worker1 0"
    tk=
    if [[ -n $victim ]]; then
        local job=${victim%:*} idx=${victim#*:} pid gs_k
        if ! wait_until "$(t 60)" "$lpid" "$@"; then
            fail "$name: the kill point ($*) never came"
            finish_launch "$out"
            show "$out" 20
            return 1
        fi
        pid=$(task_pid "$job" "$idx")
        if [[ -z $pid ]]; then
            fail "$name: no running $job$idx child of rf-launch"
            finish_launch "$out"
            return 1
        fi
        gs_k=$(last_gs "$out" worker0)
        tk=$(now)
        kill -9 "$pid"
        echo "$name: killed $job$idx (pid $pid) $(elapsed "$t0" "$tk") s in, the chief at global_step $gs_k, checkpoints so far: $(saved_ckpts "$out" | tr '\n' ' ')"
        want=${want/$job$idx 0/$job$idx 1}
    fi
    finish_launch "$out"
    if [[ $rc -eq 0 ]]; then
        ok "$name: job exit 0 after $(elapsed "$t0") s"
    else
        fail "$name: job exit $rc"
        show "$out" 30
    fi
    expect_restarts "$out" "$want"
    local g
    g=$(lines_of "$out" worker0 | sed -n 's/^[0-9.]* global_step at the end: //p')
    [[ $g == "$steps" ]] && ok "$name: global_step at the end $g" ||
        fail "$name: global_step at the end '$g', want exactly $steps"
    sync_audit "$log" "$n" "$steps"
    verify_dir "$dir"
    acc=$(accuracy "$out" worker0)
    [[ -n $acc ]] || fail "$name: the chief printed no test accuracy"
}

# reference N: the fault-free run of --replicas_to_aggregate=N; sets ref_acc
reference() {
    run_job "ref$1" "$1" "" || return 1
    ref_acc=$acc
    [[ -n $ref_acc ]] || return 1
    if has_line "$out" worker0 "session lost" || has_line "$out" worker1 "session lost"; then
        fail "ref$1: a session was lost without a fault"
    fi
    if (($1 < 2)); then
        # the backup's late gradients: refused, counted, never applied
        local d=${sync_summary#*taken, }
        d=${d%% stale*}
        ((d > 0)) && ok "ref$1: $d stale gradients of the backup worker refused and counted" ||
            fail "ref$1: no stale gradient dropped with a backup worker ('$sync_summary')"
    fi
    ok "ref$1: test accuracy $ref_acc"
}

# kill_run NAME N JOB:INDEX WAIT...: a faulted run compared with ref_acc
kill_run() {
    local name=$1 n=$2 victim=$3
    shift 3
    run_job "$name" "$n" "$victim" "$@" || return
    local job=${victim%:*} idx=${victim#*:}
    within "$acc" "$ref_acc" "$tol" &&
        ok "$name: test accuracy $acc within $tol of the reference's $ref_acc" ||
        fail "$name: test accuracy '$acc', the reference's $ref_acc (tolerance $tol)"
    has_line "$out" "" "rf-launch: $job$idx was killed by signal 9 (SIGKILL); restarting it" &&
        ok "$name: rf-launch restarted $job$idx" ||
        fail "$name: no 'rf-launch: $job$idx was killed by signal 9 (SIGKILL); restarting it' line"
    if [[ $victim == worker:1 ]]; then
        local tj
        tj=$(first_after "$out" worker1 "$tk" ": session ready: joined, global_step ")
        [[ -n $tj ]] &&
            ok "$name: worker1 rejoined $(elapsed "$tk" "$tj") s after the kill" ||
            fail "$name: the restarted worker1 printed no 'session ready: joined'"
        [[ -n $(first_after "$out" worker1 "$tk" "^[0-9.]* worker 1: done after ") ]] &&
            ok "$name: the restarted worker1 finished" ||
            fail "$name: the restarted worker1 printed no 'worker 1: done after'"
        has_line "$out" worker0 "did not finish" && fail "$name: the chief reports a worker that did not finish"
    else
        local lost rec
        # (one pattern each: busybox awk, in the rxe guest, matches no
        # alternation that holds a "\\(")
        lost=$(first_after "$out" worker0 "$tk" ": session lost \\(")
        [[ -n $lost ]] || lost=$(first_after "$out" worker0 "$tk" ": session ready: ")
        rec=$(first_after "$out" worker0 "$tk" ": recovered in |: session ready: restored ")
        [[ -n $lost && -n $rec ]] &&
            ok "$name: the chief recovered $(elapsed "$tk" "$rec") s after the kill: $(lines_of "$out" worker0 | awk -v t="$rec" '$1 == t' | head -n 1 | cut -d' ' -f2- | cut -c1-200)" ||
            fail "$name: the chief printed no 'session lost' / 'recovered' after the kill"
        check_steps "$out" "$tk"
    fi
    if [[ $victim == worker:0 && $n == 2 ]]; then
        # worker 1, waiting for a step only the chief's gradient completes,
        # sees global_step go back at the restore and runs again from it
        # (a wait for the step's publication that ran to op_timeout_ms, 30
        # s, held the job that long)
        local tr t1 t1r
        tr=$(first_after "$out" worker0 "$tk" ": session ready: restored ")
        t1=$(first_after "$out" worker1 "$tk" ": session lost \\(")
        t1r=$(first_after "$out" worker1 "$tk" ": recovered in ")
        # worker 1's stall: from the kill, and from the restarted chief's
        # restore, to its own recovery (training again): at most the 1 s
        # restart backoff + $(t 4) s (the chief's start and restore
        # included), and $(t 2) s after the restore
        if [[ -n $tr && -n $t1r ]] &&
            awk -v k="$tk" -v a="$tr" -v b="$t1r" -v m="$(t 2)" -v n="$((1 + $(t 4)))" 'BEGIN { exit !(b - a <= m && b - k <= n) }'; then
            ok "$name: worker1 stalled $(elapsed "$tk" "$t1r") s from the kill, $(elapsed "$tr" "$t1r") s from the restore (<= $((1 + $(t 4))) s, $(t 2) s)"
        else
            fail "$name: worker1 trained again $([[ -n $t1r ]] && elapsed "$tk" "$t1r" || echo never) s after the kill, $([[ -n $tr && -n $t1r ]] && elapsed "$tr" "$t1r" || echo never) s after the restore; want <= $((1 + $(t 4))) s and $(t 2) s"
        fi
        if [[ -n $tr && -n $t1 ]] && awk -v a="$tr" -v b="$t1" -v m="$(t 10)" 'BEGIN { exit !(b - a <= m) }'; then
            ok "$name: worker1 noticed the restore $(elapsed "$tr" "$t1") s after it: $(lines_of "$out" worker1 | awk -v t="$t1" '$1 == t' | head -n 1 | cut -d' ' -f2- | cut -c1-200)"
        else
            fail "$name: worker1's 'session lost' came $([[ -n $tr && -n $t1 ]] && elapsed "$tr" "$t1" || echo never) s after the chief's restore, want <= $(t 10)"
            lines_of "$out" worker1 | awk -v t="$tk" '$1 >= t && /session (lost|ready)|recovered/' | head -n 3 | cut -c1-300 | sed 's/^/    | /'
        fi
    fi
}

# ---- jobs started by hand (no restarts unless the case makes one) ------

# hand_job NAME N FLAGS...: 2 ps x 2 workers started by hand with
# --replicas_to_aggregate=N and a checkpoint directory $tmp/NAME.ckpt, a
# member timeout of 1 s (ps task 0 clears a gone worker's bit then); sets
# hand (the common arguments), pid_ps0, pid_ps1, pid_w0 (the timeout
# wrappers), task_w1 (worker 1's rf-trainer) and w0 (the chief's
# output).
hand_job() {
    local name=$1 n=$2 k
    shift 2
    make_cluster 2 2 || {
        fail "no free ports"
        return 1
    }
    hand=("${cluster[@]}" "${job_flags[@]}" --replicas_to_aggregate="$n"
        --train_steps="$steps" --checkpoint_dir="$tmp/$name.ckpt"
        --save_checkpoint_steps="$every" --member_timeout_secs=1 "$@")
    echo "--- $name: 2 ps x 2 workers by hand, --replicas_to_aggregate=$n of 2 $*"
    for k in ps:0 ps:1 worker:0 worker:1; do
        start_task "$tmp/$name.${k/:/}.out" --job_name="${k%:*}" \
            --task_index="${k#*:}" "${hand[@]}"
        # shellcheck disable=SC2034 # pid_ps0 and pid_ps1 are read as ${!p}
        case $k in
        ps:0) pid_ps0=$tpid ;;
        ps:1) pid_ps1=$tpid ;;
        worker:0) pid_w0=$tpid ;;
        worker:1) task_w1=$tpid_task ;;
        esac
    done
    w0=$tmp/$name.worker0.out
}

# show_tasks NAME TASK...: the last lines of each hand-started task's output
show_tasks() {
    local name=$1 k
    shift
    for k in "$@"; do
        echo "    $k:"
        show "$tmp/$name.$k.out" 12
    done
}

# kill_w1 NAME GS: kill -9 of worker 1 once the chief is at global_step GS;
# sets tk (the kill's time)
kill_w1() {
    if ! wait_until "$(t 60)" "$pid_w0" gs_at_least "$w0" - "$2"; then
        fail "$1: the chief never reached global_step $2"
        show "$w0" 20
        show_tasks "$1" worker1 ps0 ps1
        return 1
    fi
    tk=$(now)
    kill -9 "$task_w1"
    echo "$1: killed worker 1 (pid $task_w1), the chief at global_step $(last_gs "$w0" -)"
}

# hand_job_w1_stops NAME N ARGS...: hand_job with worker 1 stopping itself
# (RF_TEST_SYNC_STOP_AFTER_PUSH, "STEP ID") at its step steps / 3, so a
# kill (kill_w1_stopped) finds it mid-job however late it comes: a kill
# timed by the chief's stamped lines alone (kill_w1) came, on a loaded
# host or in the rxe guest, after worker 1 had finished
hand_job_w1_stops() {
    echo "$((steps / 3)) 1" >"$tmp/stop"
    export RF_TEST_SYNC_STOP_AFTER_PUSH=$tmp/stop
    hand_job "$@"
    local hrc=$?
    unset RF_TEST_SYNC_STOP_AFTER_PUSH
    return "$hrc"
}

# kill_w1_stopped NAME: kill -9 of worker 1 once it stopped itself; sets tk
kill_w1_stopped() {
    if [[ -z $task_w1 ]] || ! wait_until "$(t 60)" "$task_w1" stopped "$task_w1"; then
        fail "$1: worker 1 (pid '$task_w1') never stopped itself at step $((steps / 3))"
        show_tasks "$1" worker1 worker0 ps0 ps1
        return 1
    fi
    tk=$(now)
    kill -9 "$task_w1"
    echo "$1: killed worker 1 (pid $task_w1) stopped at its step $((steps / 3)), the chief at global_step $(last_gs "$w0" -)"
}

# ps_exit NAME STATUS: both ps tasks exit with STATUS within $(t 20) s,
# shut down by the chief
ps_exit() {
    local k p
    for k in 0 1; do
        p=pid_ps$k
        wait_exit "${!p}" "$(t 20)"
        if [[ $wrc == "$2" ]] && has_line "$tmp/$1.ps$k.out" - "ps task $k: shut down by the chief"; then
            ok "$1: ps$k shut down by the chief, exit $wrc"
        else
            fail "$1: ps$k exit '$wrc' (running: not shut down), want $2"
            show "$tmp/$1.ps$k.out" 8
        fi
    done
}

# sync_quorum_lost: 2 of 2, worker 1 killed and not restarted: the chief
# names it and the replicas a step needs, does not recover again and again,
# saves a checkpoint, shuts the ps tasks down and exits 138 within
# --max_wait_secs (+ the 1 s member timeout + $(t 10) s); the ps tasks exit.
case_quorum_lost() {
    local mw
    mw=$(t 5) # scaled: in the rxe guest worker 1 starts seconds after the chief
    hand_job_w1_stops quorum_lost 2 --max_wait_secs="$mw" || return
    kill_w1_stopped quorum_lost || return
    wait_exit "$pid_w0" "$(t 60)"
    local rc0=$wrc took
    took=$(elapsed "$tk")
    stamped "$w0"
    echo "quorum_lost: the chief exit $rc0, $took s after the kill"
    [[ $rc0 == 138 ]] && ok "quorum_lost: the chief exits 138 (retryable)" ||
        fail "quorum_lost: the chief exit '$rc0', want 138"
    awk -v a="$took" -v m="$((mw + 1 + $(t 10)))" 'BEGIN { exit !(a <= m) }' &&
        ok "quorum_lost: it ended $took s after the kill (<= $((mw + 1 + $(t 10))) s)" ||
        fail "quorum_lost: it ended $took s after the kill, want <= $((mw + 1 + $(t 10))) s"
    local why
    why=$(lines_of "$w0" - | grep -m1 'rf-trainer: exit 138' | cut -d' ' -f2-)
    [[ $why == *"no step can complete"*"replicas_to_aggregate=2"*"/job:worker/task:1"* ]] &&
        ok "quorum_lost: $why" ||
        fail "quorum_lost: no final line naming /job:worker/task:1 and replicas_to_aggregate=2 ('$why')"
    local nrec
    nrec=$(lines_of "$w0" - | awk -v t="$tk" '$1 >= t && /recovered in /' | wc -l)
    ((nrec == 0)) && ok "quorum_lost: no recovery after the kill" ||
        fail "quorum_lost: $nrec recoveries after the kill"
    has_line "$w0" - "saved checkpoint .* after the sync step stopped" &&
        ok "quorum_lost: $(lines_of "$w0" - | grep -m1 'after the sync step stopped' | cut -d' ' -f2-)" ||
        fail "quorum_lost: no checkpoint saved at the end"
    verify_dir "$tmp/quorum_lost.ckpt"
    ps_exit quorum_lost 0
}

# sync_quorum_back: 2 of 2, worker 1 killed and started again 1 s later
# (within --max_wait_secs): the job completes, exactly --train_steps.
case_quorum_back() {
    hand_job quorum_back 2 --max_wait_secs="$(t 20)" || return
    kill_w1 quorum_back $((steps / 3)) || return
    sleep 1
    start_task "$tmp/quorum_back.worker1b.out" --job_name=worker --task_index=1 "${hand[@]}"
    local pid_w1b=$tpid
    wait_exit "$pid_w0" "$(t 90)"
    local rc0=$wrc
    stamped "$w0"
    [[ $rc0 == 0 ]] && ok "quorum_back: the chief exits 0 after $(elapsed "$tk") s" || {
        fail "quorum_back: the chief exit '$rc0', want 0"
        show "$w0" 20
    }
    wait_exit "$pid_w1b" "$(t 20)"
    [[ $wrc == 0 ]] && ok "quorum_back: the restarted worker 1 exits 0" ||
        fail "quorum_back: the restarted worker 1 exit '$wrc'"
    has_line "$w0" - "sync_replicas: only 1 of 2 workers connected (missing: /job:worker/task:1)" &&
        has_line "$w0" - "sync_replicas: workers connected again after" &&
        ok "quorum_back: the chief saw worker 1 go and come back: $(lines_of "$w0" - | grep -m1 'connected again' | cut -d' ' -f2- | cut -c1-160)" ||
        fail "quorum_back: no 'only 1 of 2 workers connected' then 'connected again' line of the chief"
    local g
    g=$(lines_of "$w0" - | sed -n 's/^[0-9.]* global_step at the end: //p')
    [[ $g == "$steps" ]] && ok "quorum_back: global_step at the end $g" ||
        fail "quorum_back: global_step at the end '$g', want exactly $steps"
    ps_exit quorum_back 0
}

# sync_backup_gone: 1 of 2, worker 1 (the backup) killed and not restarted,
# --stop_grace_secs=30: the chief does not wait for it at the end (it says
# so) and exits 0, its wait at most $(t 5) s, not the 30 s.
case_backup_gone() {
    hand_job_w1_stops backup_gone 1 --max_wait_secs="$(t 20)" \
        --stop_grace_secs=30 || return
    kill_w1_stopped backup_gone || return
    wait_exit "$pid_w0" "$(t 90)"
    local rc0=$wrc tend
    tend=$(now)
    stamped "$w0"
    [[ $rc0 == 0 ]] && ok "backup_gone: the chief exits 0" || {
        fail "backup_gone: the chief exit '$rc0', want 0"
        show "$w0" 20
    }
    local tw waited
    tw=$(first_after "$w0" - "$tk" ": waiting at most 30 s for 1 other worker")
    if [[ -n $tw ]]; then
        waited=$(elapsed "$tw" "$tend")
        awk -v a="$waited" -v m="$(t 5)" 'BEGIN { exit !(a <= m) }' &&
            ok "backup_gone: the chief's end took $waited s from its wait (<= $(t 5) s)" ||
            fail "backup_gone: the chief's end took $waited s from its wait, want <= $(t 5) s"
    else
        fail "backup_gone: no 'waiting at most 30 s for 1 other worker' line"
    fi
    has_line "$w0" - "not waiting for /job:worker/task:1 (backup worker" &&
        ok "backup_gone: $(lines_of "$w0" - | grep -m1 'not waiting for' | cut -d' ' -f2- | cut -c1-160)" ||
        fail "backup_gone: no 'not waiting for /job:worker/task:1 (backup worker' line"
    ps_exit backup_gone 0
}

ckpt_then() { ckpt_after "$1" "$every" && gs_at_least "$1" worker0 "$2"; }

# stopped PID: the process is stopped (state T)
stopped() {
    local state=
    { read -r _ _ state _ <"/proc/$1/stat"; } 2>/dev/null
    [[ $state == T ]]
}
# chief_stopped: rf-launch's worker0 stopped itself
chief_stopped() {
    local pid
    pid=$(task_pid worker 0) && stopped "$pid"
}

case $case_name in
sync_ps_kill)
    need_data
    reference 2 && kill_run ps_kill 2 ps:0 ckpt_then "$tmp/ps_kill.out" $((steps / 2 + every / 3))
    ;;
sync_worker_kill)
    need_data
    reference 2 && kill_run worker_kill 2 worker:1 gs_at_least "$tmp/worker_kill.out" worker0 $((steps / 3))
    ;;
sync_chief_kill)
    need_data
    reference 2 && kill_run chief_kill 2 worker:0 ckpt_then "$tmp/chief_kill.out" $((every * 2 + every / 4))
    ;;
sync_chief_epoch)
    # the chief stops itself right after the first gradient of step
    # 2 * every (a checkpoint's step) was taken, and is killed: it pushed
    # to one shard only, so the restarted chief's restore of that very
    # step leaves global_step where worker 1 waits, one shard's
    # accumulator reset and the other holding worker 1's gradient; only
    # the chief epoch tells worker 1 to run the step again
    need_data
    if reference 2; then
        echo $((every * 2)) >"$tmp/stop"
        export RF_TEST_SYNC_STOP_AFTER_PUSH=$tmp/stop
        kill_run chief_epoch 2 worker:0 chief_stopped
        unset RF_TEST_SYNC_STOP_AFTER_PUSH
        [[ ! -e $tmp/stop ]] || fail "chief_epoch: the chief never stopped at step $((every * 2))"
        t1=$(first_after "$out" worker1 "$tk" ": session lost \\(.*chief epoch")
        [[ -n $t1 ]] && ok "chief_epoch: worker1 learned it from the chief epoch" ||
            fail "chief_epoch: worker1's 'session lost' does not name the chief epoch"
    fi
    ;;
sync_backup)
    need_data
    if reference 1; then
        kill_run backup_ps_kill 1 ps:1 ckpt_then "$tmp/backup_ps_kill.out" $((steps / 2 + every / 3))
        kill_run backup_worker_kill 1 worker:1 gs_at_least "$tmp/backup_worker_kill.out" worker0 $((steps / 3))
        kill_run backup_chief_kill 1 worker:0 ckpt_then "$tmp/backup_chief_kill.out" $((every * 2 + every / 4))
    fi
    ;;
sync_quorum_lost)
    need_data
    case_quorum_lost
    ;;
sync_quorum_back)
    need_data
    case_quorum_back
    ;;
sync_backup_gone)
    need_data
    case_backup_gone
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
