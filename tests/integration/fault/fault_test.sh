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
#   ps_kill     a fault-free reference run, then one run per kill point
#               (RF_FAULT_KILL_POINTS, default all five: early ps1 before
#               the first periodic checkpoint, ckpt1 ps0 right after the
#               first periodic checkpoint, mid ps1 half-way, ckpt ps0 right
#               after a later checkpoint, end ps0 near the last step), each
#               under rf-launch --restart_on_failure with kill -9 of that ps
#               task. Each: the job exits 0; its test accuracy is within
#               0.01 of the reference run's; the chief printed "session
#               lost" and "recovered" and rf-launch restarted exactly the
#               killed ps once (restarts summary); the chief's printed
#               global_step values never go below the global_step of the
#               last checkpoint it had saved before them, and every restore
#               after the kill is of exactly that checkpoint (restored
#               model.ckpt-C, global_step C); every checkpoint file left in
#               the directory verifies (rf-ckpt verify).
#   worker_kill kill -9 of worker 1 mid-run. Without restart (tasks started
#               by hand: rf-launch without --restart_on_failure would stop
#               the whole job): the chief trains on to the last step, waits
#               --stop_grace_secs=5 (not less, at most a few seconds more),
#               names /job:worker/task:1 as not finished, evaluates, exits
#               1; both ps tasks are shut down by it and exit 0. With
#               rf-launch --restart_on_failure: worker 1 is restarted once,
#               rejoins ("joined") and the job exits 0.
#   chief_kill  kill -9 of worker 0 (the chief) under rf-launch
#               --restart_on_failure, between checkpoints: it is restarted
#               once, restores the newest checkpoint of the directory at the
#               kill (its exact name), the job exits 0, accuracy >= 0.78.
#   chief_mid_checkpoint  one worker (so checkpoint names are exact steps),
#               RF_TEST_CKPT_STOP_BEFORE_RENAME stops the chief between
#               writing and renaming model.ckpt-<2S>: the test sees it
#               stopped (state T in /proc, its .tmp file present, no
#               model.ckpt-<2S>), kill -9s it; restarted, it restores
#               model.ckpt-<S> (the previous one), the job exits 0, every
#               checkpoint the state file names verifies and no .tmp file is
#               named there.
#   corrupt_checkpoint  a short job leaves model.ckpt-{0,S,2S,3S}; three
#               copies of the directory get the newest truncated, one byte
#               of a tensor's data flipped, one byte of the JSON header
#               flipped (a tensor name's letter: still valid JSON); a longer
#               job on each copy names the corrupt file by path, restores
#               model.ckpt-<2S> and completes.
#   still_waiting  a worker with no ps running and --max_wait_secs=25
#               prints "still waiting for /job:ps/task:0:" within 15 s,
#               gives up not before 25 s and within 25 + 20 s naming
#               max_wait_secs=25 and /job:ps/task:0, exits non-zero; then a
#               chief whose ps starts 12 s after it waits (the same line)
#               and completes (both exit 0).
#
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1;
# 10.77.0.1 in the rxe guest), RF_TEST_TIME_SCALE (multiplies every
# timeout), RF_FASHION_MNIST_DIR, RF_FAULT_KILL_POINTS (ps_kill's points,
# comma-separated), RF_FAULT_STEPS (train steps of ps_kill, default 2400;
# checkpoints every sixth of them), RF_FAULT_KEEP (set: keep the outputs
# and checkpoint directories, and print where). Needs bash 5 ($EPOCHREALTIME),
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
tmp=$(mktemp -d)

# Every process this script starts (rf-launch, timeout wrappers, tasks).
started=()
# pids of PPID's children
children() {
    local p ppid rest
    for p in /proc/[0-9]*; do
        read -r _ _ _ ppid rest <"$p/stat" 2>/dev/null || continue
        [[ $ppid == "$1" ]] && echo "${p#/proc/}"
    done
}
kill_tree() {
    local c
    for c in $(children "$1"); do
        kill_tree "$c"
    done
    kill -CONT "$1" 2>/dev/null
    kill -KILL "$1" 2>/dev/null
}
cleanup() {
    local p
    for p in "${started[@]}"; do
        kill -0 "$p" 2>/dev/null && kill_tree "$p"
    done
    wait 2>/dev/null
    if [[ -n ${RF_FAULT_KEEP:-} ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

now() { echo "$EPOCHREALTIME"; }
# elapsed A [B]: B - A seconds (B default now), 2 decimals
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
# stamp: each input line prefixed with the time it was read
stamp() {
    local l
    while IFS= read -r l; do
        printf '%s %s\n' "$EPOCHREALTIME" "$l"
    done
}

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

# The job: a softmax model with adagrad, whose fault-free accuracy varied by
# 0.0024 over six 2-worker runs (0.8356-0.8380; mlp:64 runs varied by
# 0.006-0.02 on a loaded machine), large batches, checkpoints by steps.
steps=${RF_FAULT_STEPS:-2400}
every=$((steps / 6))
job_flags=(--model=softmax --optimizer=adagrad --learning_rate=0.05
    --batch_size=1000 --threads=1 --log_every=$every
    --log_step_count_steps=$((every / 4 > 0 ? every / 4 : 1))
    --max_wait_secs="$(t 60)")

# start_launch OUT NPS NWORKERS [LAUNCH_ARGS... --] TRAINER_ARGS...: rf-launch
# in the background, its lines stamped into OUT; sets lpid.
start_launch() {
    local out=$1 nps=$2 nw=$3
    shift 3
    local largs=()
    if [[ " $* " == *" -- "* ]]; then
        while [[ $1 != -- ]]; do
            largs+=("$1")
            shift
        done
        shift
    fi
    rm -f "$out" "$out.done"
    "$launch" --host "$host" --ps "$nps" --workers "$nw" \
        --timeout "$(t 150)" "${largs[@]}" -- "$trainer" "$@" \
        > >(stamp >"$out"; touch "$out.done") 2>&1 &
    lpid=$!
    lt0=$(now)
    started+=("$lpid")
    echo "rf-launch --ps $nps --workers $nw ${largs[*]} -- rf-trainer $*"
}

# finish_launch OUT: waits for rf-launch (and its stamped output); sets rc.
finish_launch() {
    wait "$lpid"
    rc=$?
    local i=0
    while [[ ! -e $1.done ]] && ((i++ < 100)); do sleep 0.05; done
    echo "rf-launch: exit $rc after $(elapsed "$lt0") s"
}

# start_task OUT NAME ARGS...: one rf-trainer by hand under timeout -s KILL,
# its lines stamped into OUT; sets tpid (the timeout) and tpid_task.
start_task() {
    local out=$1
    shift
    rm -f "$out" "$out.done"
    timeout -s KILL "$(t 120)" "$trainer" "$@" \
        > >(stamp >"$out"; touch "$out.done") 2>&1 &
    tpid=$!
    started+=("$tpid")
    local i
    tpid_task=
    for ((i = 0; i < 200 && -z $tpid_task; i++)); do
        tpid_task=$(children "$tpid" | head -n 1)
        [[ -n $tpid_task ]] || sleep 0.02
    done
    [[ -n $tpid_task ]] && started+=("$tpid_task")
}

# task_pid JOB INDEX: the pid of rf-launch's ($lpid) child running that task
task_pid() {
    local c
    for c in $(children "$lpid"); do
        if tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null |
            grep -q -- "--job_name=$1 --task_index=$2\( \|$\)"; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# lines_of OUT TASK: "TIME TEXT" of TASK's lines (rf-launch's prefix
# dropped); TASK "" for rf-launch's own lines and "-" for a hand-started
# task's file.
lines_of() {
    case $2 in
    -) cat "$1" ;;
    "") sed -n 's/^\([0-9.]*\) \(rf-launch: \)/\1 \2/p' "$1" ;;
    *) sed -n "s/^\([0-9.]*\) \[$2\] /\1 /p" "$1" ;;
    esac
}

# The global_step values in one line of the chief (empty: none): "step N,
# loss", "(global_step N", "global_step N (recovery", "session ready: ...,
# global_step N", "global_step at the end: N".
gs_awk='
function gs(s,   m) {
    if (match(s, /^step [0-9]+, loss/)) { m = substr(s, 6); sub(/,.*/, "", m); return m }
    if (match(s, /global_step at the end: [0-9]+/)) { m = substr(s, RSTART + 24, RLENGTH - 24); return m }
    if (match(s, /global_step [0-9]+/)) { m = substr(s, RSTART + 12, RLENGTH - 12); return m }
    return ""
}'

# last_gs OUT TASK: the last global_step TASK printed
last_gs() {
    lines_of "$1" "$2" | awk "$gs_awk"'
        { $1 = ""; sub(/^ /, ""); g = gs($0); if (g != "") last = g }
        END { print last + 0 }'
}

# wait_until SECS PID CMD...: polls CMD until it succeeds (0), SECS pass
# or PID exits (1).
wait_until() {
    local secs=$1 pid=$2 t0
    shift 2
    t0=$(now)
    while ! "$@"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            "$@"
            return
        fi
        awk -v a="$t0" -v b="$(now)" -v s="$secs" 'BEGIN { exit !(b - a > s) }' &&
            return 1
        sleep 0.05
    done
}
gs_at_least() { (($(last_gs "$1" "$2") >= $3)); }
has_line() { lines_of "$1" "$2" | grep -q -- "$3"; }
# saved_ckpts OUT: the chief's "saved checkpoint" global steps, in order
saved_ckpts() {
    lines_of "$1" worker0 |
        sed -n 's/^[0-9.]* saved checkpoint .* (global_step \([0-9]*\),.*/\1/p'
}
# ckpt_after OUT N: a checkpoint of global_step >= N was saved
ckpt_after() { saved_ckpts "$1" | awk -v n="$2" '$1 >= n { f = 1 } END { exit !f }'; }

# first_after OUT TASK T REGEX: the time of TASK's first line matching REGEX
# printed at or after time T
first_after() {
    lines_of "$1" "$2" | awk -v t="$3" -v re="$4" '$1 >= t && $0 ~ re { print $1; exit }'
}

# accuracy OUT TASK: the chief's "test accuracy: A"
accuracy() {
    lines_of "$1" "$2" | sed -n 's/^[0-9.]* test accuracy: \([0-9.]*\) .*/\1/p' | tail -n 1
}

# check_steps OUT TKILL: the chief's global_step invariant (see the top);
# TKILL: restores at or after it must be of the newest checkpoint saved
# before them. Prints what it checked.
check_steps() {
    local report
    report=$(lines_of "$1" worker0 | awk -v tk="$2" "$gs_awk"'
        {
            t = $1; $1 = ""; sub(/^ /, ""); line = $0
            if (line ~ /^saved checkpoint /) {
                c = gs(line) + 0
                if (nc > 0 && c < last_c) { bad++; print "BAD checkpoint " c " after " last_c }
                last_c = c; nc++
            }
            if (line ~ /: (recovered in|session ready).*: restored /) {
                r = line; sub(/.*model\.ckpt-/, "", r); sub(/\.safetensors.*/, "", r)
                g = gs(line) + 0
                if (t >= tk && (r + 0 != last_c || g != last_c)) {
                    bad++; print "BAD restore of model.ckpt-" r " (global_step " g ") after saving model.ckpt-" last_c ": " line
                }
                if (t >= tk) restores = restores " " r
            }
            g = gs(line)
            if (g == "") next
            n++
            if (nc > 0 && g + 0 < last_c) { bad++; print "BAD global_step " g " < last checkpoint " last_c ": " line }
        }
        END { printf "SUMMARY %d values, %d checkpoints, %d violations, restores after the kill:%s\n", n, nc, bad, restores }')
    local summary
    summary=$(echo "$report" | grep '^SUMMARY' | sed 's/^SUMMARY //')
    if echo "$report" | grep -q '^BAD'; then
        fail "global_step invariant: $summary"
        echo "$report" | grep '^BAD' | head -n 5 | sed 's/^/    | /'
    elif [[ $summary != *" 0 checkpoints"* && $summary == *"restores after the kill: "[0-9]* ]]; then
        ok "global_step never below the last saved checkpoint's, restores of exactly it: $summary"
    else
        fail "global_step invariant: nothing to check or no restore after the kill: $summary"
    fi
}

# verify_dir DIR: every checkpoint file in DIR verifies
verify_dir() {
    local f n=0 bad=0
    for f in "$1"/model.ckpt-*.safetensors; do
        [[ -e $f ]] || continue
        n=$((n + 1))
        if ! "$rfckpt" verify "$f" >"$tmp/verify" 2>&1; then
            bad=$((bad + 1))
            fail "rf-ckpt verify $f: $(cat "$tmp/verify")"
        fi
    done
    ((n > 0 && bad == 0)) && ok "all $n checkpoint files in the directory verify" ||
        { ((n == 0)) && fail "no checkpoint file left in $1"; }
}

# restarts OUT: rf-launch's "restarts: ps0 0, ..." summary, after "restarts: "
restarts() {
    lines_of "$1" "" | sed -n 's/^[0-9.]* rf-launch: restarts: //p' | tail -n 1
}

# expect_restarts OUT WANT: the summary equals WANT
expect_restarts() {
    local got
    got=$(restarts "$1")
    [[ $got == "$2" ]] && ok "rf-launch: restarts: $got" ||
        fail "rf-launch restarts '$got', want '$2'"
}

# ---- ps_kill ----------------------------------------------------------------

ref_acc=
reference_run() {
    local out=$tmp/ref.out dir=$tmp/ref.ckpt
    start_launch "$out" 2 2 --restart_on_failure -- "${job_flags[@]}" \
        --train_steps="$steps" --checkpoint_dir="$dir" \
        --save_checkpoint_steps="$every"
    finish_launch "$out"
    ref_acc=$(accuracy "$out" worker0)
    if [[ $rc -ne 0 || -z $ref_acc ]]; then
        fail "reference run: exit $rc, accuracy '$ref_acc'"
        show "$out" 30
        return 1
    fi
    if has_line "$out" worker0 "session lost" || has_line "$out" worker1 "session lost"; then
        fail "reference run lost its session without a fault"
    fi
    expect_restarts "$out" "ps0 0, ps1 0, worker0 0, worker1 0"
    ok "reference run: test accuracy $ref_acc, $(saved_ckpts "$out" | wc -l) checkpoints"
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
    [[ -n $acc ]] && awk -v a="$acc" -v r="$ref_acc" 'BEGIN { d = a - r; exit !(d <= 0.01 && d >= -0.01) }' &&
        ok "$point: test accuracy $acc within 0.01 of the reference $ref_acc" ||
        fail "$point: test accuracy '$acc', reference $ref_acc"
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
    reference_run || return
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

case "$case_name" in
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
