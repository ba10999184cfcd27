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
# global_step go back, not wait out op_timeout_ms).
#
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1;
# 10.77.0.1 in the rxe guest), RF_TEST_TIME_SCALE, RF_FASHION_MNIST_DIR;
# RF_FAULT_SYNC_STEPS (--train_steps, default 900; a checkpoint every
# sixth), RF_FAULT_BATCH (default 1000), RF_FAULT_LR (default 0.05),
# RF_FAULT_ACC_TOL (default 0.01), RF_FAULT_KEEP (set: keep the outputs, logs
# and checkpoint directories, and print where). bash 5, coreutils or
# busybox, awk and /proc, so it runs in the rxe guest too (rxe.fault).
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
        local tr t1
        tr=$(first_after "$out" worker0 "$tk" ": session ready: restored ")
        t1=$(first_after "$out" worker1 "$tk" ": session lost \\(")
        if [[ -n $tr && -n $t1 ]] && awk -v a="$tr" -v b="$t1" -v m="$(t 10)" 'BEGIN { exit !(b - a <= m) }'; then
            ok "$name: worker1 noticed the restore $(elapsed "$tr" "$t1") s after it: $(lines_of "$out" worker1 | awk -v t="$t1" '$1 == t' | head -n 1 | cut -d' ' -f2- | cut -c1-200)"
        else
            fail "$name: worker1's 'session lost' came $([[ -n $tr && -n $t1 ]] && elapsed "$tr" "$t1" || echo never) s after the chief's restore, want <= $(t 10)"
            lines_of "$out" worker1 | awk -v t="$tk" '$1 >= t && /session (lost|ready)|recovered/' | head -n 3 | cut -c1-300 | sed 's/^/    | /'
        fi
    fi
}

ckpt_then() { ckpt_after "$1" "$every" && gs_at_least "$1" worker0 "$2"; }

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
sync_backup)
    need_data
    if reference 1; then
        kill_run backup_ps_kill 1 ps:1 ckpt_then "$tmp/backup_ps_kill.out" $((steps / 2 + every / 3))
        kill_run backup_worker_kill 1 worker:1 gs_at_least "$tmp/backup_worker_kill.out" worker0 $((steps / 3))
        kill_run backup_chief_kill 1 worker:0 ckpt_then "$tmp/backup_chief_kill.out" $((every * 2 + every / 4))
    fi
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
