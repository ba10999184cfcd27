#!/usr/bin/env bash
# tests/soak/soak_test.sh RF_TRAINER RF_LAUNCH RF_CKPT [--minutes N]
#     [--seed S] [--sync]: the fault soak (issue 11 item 7). 2 ps x 3
# workers train asynchronously under rf-launch --restart_on_failure while a driver with a
# seeded RNG injects a fault every few seconds: kill -9 of a random task (ps0,
# ps1, worker0 the chief, worker1, worker2) or a dropped connection (every
# TCP connection to one ps, or every connection of one worker, closed from
# outside with `ss -K`; see drop_conns). The kinds are drawn from a
# shuffled deck of all seven (kill ps0/ps1/worker0/worker1/worker2, drop
# ps, drop worker), a fresh one per run, a card that cannot be applied now
# (its task in its restart backoff) going back under the deck, so each run's
# first 7 faults cover every kind. After each fault the driver waits for
# the job to recover (every task running and training again), then 1-3 s;
# one fault in four is instead followed by another within 0.3-1.5 s, during
# the recovery. Faults stop once the chief is at 90% of --train_steps; the
# job then finishes.
#
# Without --minutes (the short soak, `ctest -L soak`, about 3 minutes on 2
# cores): one fault-free reference run, then one faulted run of the same
# flags. With --minutes N (the long soak; `tests/soak/run --minutes 30`):
# two reference runs (their accuracies must agree within half the
# tolerance), then faulted runs ("rounds": each a fresh job with its own
# checkpoint directory, so rf-launch's restart backoff starts again at 1 s)
# until N minutes of them have passed; every round is checked. --seed S (or
# RF_SOAK_SEED=S) replays the fault schedule of a run (kinds, victims,
# intervals; not the scheduler's interleaving); the seed is printed.
#
# Checks, per faulted run: rf-launch exits 0; the test accuracy is within
# RF_SOAK_ACC_TOL (default 0.01) of the reference (the mean of the
# references); every kind of fault was injected at least once; each kill
# was restarted by rf-launch and its restarts summary equals the kills per
# task (a task failing by itself would show as a restart more); each drop
# closed at least one connection and a worker it hit printed "session lost"
# or (a drop during a recovery, whose session is lost already) its ps
# client's "connection lost" within 5 s; every checkpoint file in the
# directory verifies (rf-ckpt verify, strict: every tensor's and the
# header's CRC32C there and matching), the state file names only existing,
# verifying, non-temporary files, and the newest is the final step's; the chief's global_step never
# went below the last checkpoint it saved and every restore is of exactly
# that checkpoint (check_steps of tests/common/job.sh). Then a summary
# line: faults by kind, recoveries ("recovered in" lines per task),
# restarts (rf-launch's summary), steps lost (over every restore: the
# highest global_step printed by any task since the previous restore minus
# the restored checkpoint's step; an estimate to within --log_every) and
# wall time. Exits 0 on success, 1 on a failed check, 77 without the
# Fashion-MNIST dataset (package dataset-fashion-mnist), or not root (ss -K).
#
# --sync (issue 21 item 6): the same with sync replicas, every run (the
# references too) --sync_replicas --replicas_to_aggregate=2 of the 3
# workers (one backup: a killed worker holds nobody up) and 12000 steps
# (each the mean of two batches; 81-96 s fault-free here), every task at
# RF_LOG_LEVEL=debug into the run's RF_LOG_FILE, and each run also checked
# by the sync audit (tests/integration/fault/sync_audit.sh: every update
# the mean of 2 gradients of its own step from distinct clients, applied
# once, the stale ones dropped and counted) and for "global_step at the
# end" exactly --train_steps. Not part of `ctest -L soak` (it would double
# the short soak's 3 minutes): `tests/soak/run --sync [--minutes N]`.
#
# Environment: RF_SOAK_SEED, RF_SOAK_STEPS (--train_steps, default 40000:
# about 45 s fault-free here; 12000 with --sync), RF_SOAK_ACC_TOL,
# RF_SOAK_KEEP (set: keep the outputs, logs and checkpoint directories and
# print where), RF_TEST_TIME_SCALE,
# RF_FASHION_MNIST_DIR. sock fabric on 127.0.0.1 only (the drops are TCP).
set -uo pipefail
case_name=soak
trainer=${1:?path to rf-trainer}
launch=${2:?path to rf-launch}
rfckpt=${3:?path to rf-ckpt}
shift 3
minutes=
seed=${RF_SOAK_SEED:-}
sync=
while (($#)); do
    case $1 in
    --minutes) minutes=${2:?--minutes N} && shift 2 ;;
    --seed) seed=${2:?--seed S} && shift 2 ;;
    --sync) sync=1 && shift ;;
    *)
        echo "usage: soak_test.sh RF_TRAINER RF_LAUNCH RF_CKPT [--minutes N] [--seed S] [--sync]"
        exit 2
        ;;
    esac
done
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=sock
host=127.0.0.1
unset TF_CONFIG RF_TEST_CKPT_STOP_BEFORE_RENAME
source "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../common/job.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../integration/fault/sync_audit.sh"
tmp=$(mktemp -d)
keep=${RF_SOAK_KEEP:-}
trap cleanup EXIT

need_data

# Drops: `ss -K` (sock_diag SOCK_DESTROY, the kernel's
# CONFIG_INET_DIAG_DESTROY; tried here: `ss -K dst 127.0.0.1 dport = :P`
# aborts a connection to P, its owner gets ECONNABORTED and the peer a
# reset) closes chosen TCP connections from outside, as a middlebox or a
# broken path does, with no change to the processes or to the rest of the
# machine: each drop names its connections by both ports and checks
# afterwards that they are gone (drop_conns), so a kernel without the
# option fails the run ("faults not injected: drop:..."), it does not pass
# it. It needs CAP_NET_ADMIN: without root the soak is skipped. An iptables
# REJECT --reject-with tcp-reset rule inside a network namespace of the
# test would be the fallback; this machine has neither iptables nor nft.
if ((EUID != 0)); then
    echo "SKIP: the connection drops (ss -K) need root"
    exit 77
fi
command -v ss >/dev/null || {
    echo "SKIP: no ss (package iproute2)"
    exit 77
}

# The job: softmax with adagrad (fault_test.sh's model) for many epochs, so
# that it has converged and async noise is small: eleven fault-free runs
# with these flags here gave 0.8449-0.8467 (spread 0.0018, README.md's
# Reliability section); 2 ps x 3 workers; checkpoints every twentieth of
# the run.
tol=${RF_SOAK_ACC_TOL:-0.01}
steps=${RF_SOAK_STEPS:-${sync:+12000}}
steps=${steps:-40000}
every=$((steps / 20))
job_flags=(--model=softmax --optimizer=adagrad --learning_rate=0.05
    --batch_size=1000 --threads=1 --log_every=500 --log_step_count_steps=500
    --max_wait_secs="$(t 120)" --stop_grace_secs="$(t 60)"
    --train_steps="$steps" --save_checkpoint_steps="$every")
# --sync: sync replicas, 2 of 3 (the debug log is the sync audit's)
[[ -n $sync ]] && job_flags+=(--sync_replicas --replicas_to_aggregate=2)
# log_to LOG: sets run_level and run_file, the RF_LOG_LEVEL and RF_LOG_FILE
# of a run's tasks (with --sync, the audit trail into LOG)
log_to() {
    run_level=${RF_LOG_LEVEL:-} run_file=${RF_LOG_FILE:-}
    [[ -z $sync ]] || run_level=debug run_file=$1
}
# sync_checks OUT LOG: with --sync, the chief ended at exactly --train_steps
# and the audit holds
sync_checks() {
    [[ -n $sync ]] || return 0
    local g
    g=$(lines_of "$1" worker0 | sed -n 's/^[0-9.]* global_step at the end: //p' | tail -n 1)
    [[ $g == "$steps" ]] && ok "global_step at the end $g" ||
        fail "global_step at the end '$g', want exactly $steps (sync)"
    sync_audit "$2" 2 "$steps"
}
launch_flags=(--restart_on_failure --max_restarts 1000)
tasks=(ps0 ps1 worker0 worker1 worker2)

# ---- the seeded RNG (a 31-bit LCG: the same sequence in every bash) -------
if [[ -z $seed ]]; then
    seed=$(((${EPOCHREALTIME/./} ^ $$) % 2147483647))
fi
[[ $seed =~ ^[0-9]+$ ]] || {
    echo "seed must be a number: $seed"
    exit 2
}
rng=$((seed % 2147483648))
# rand N: sets r to a number in 0..N-1
rand() {
    rng=$(((rng * 1103515245 + 12345) % 2147483648))
    r=$(((rng >> 8) % $1))
}
echo "seed $seed (replay the fault schedule: RF_SOAK_SEED=$seed)"

# The deck of fault kinds: drawn without replacement, reshuffled when empty
# (a run starts with deck=()); undraw puts the card back under it.
deck=()
undraw() { deck+=("$card"); }
draw() {
    if ((${#deck[@]} == 0)); then
        deck=(kill:ps0 kill:ps1 kill:worker0 kill:worker1 kill:worker2 drop:ps drop:worker)
        local i j x
        for ((i = ${#deck[@]} - 1; i > 0; i--)); do
            rand $((i + 1))
            j=$r
            x=${deck[i]} && deck[i]=${deck[j]} && deck[j]=$x
        done
    fi
    card=${deck[0]}
    deck=("${deck[@]:1}")
}

# ---- faults -----------------------------------------------------------------

# ps_ports: the ps tasks' ports, from a task's --ps_hosts (sets ps_port[])
ps_ports() {
    local name c hosts
    for name in worker0 worker1 worker2 ps0 ps1; do
        c=$(task_pid "${name%%[0-9]*}" "${name##*[a-z]}") || continue
        hosts=$(tr '\0' '\n' <"/proc/$c/cmdline" 2>/dev/null | sed -n 's/^--ps_hosts=//p')
        [[ -n $hosts ]] && break
    done
    IFS=, read -r -a ps_port <<<"$hosts"
    ps_port=("${ps_port[@]##*:}")
    ((${#ps_port[@]} == 2))
}

# conns WHAT INDEX: "LOCAL_PORT PS_PORT" of every established connection of
# the job to ps INDEX (WHAT ps) or of worker INDEX to either ps (WHAT
# worker), from the workers' ends
conns() {
    local what=$1 i=$2 p pid='' line l d
    if [[ $what == worker ]]; then
        pid=$(task_pid worker "$i") || return 0
    fi
    for p in "${ps_port[@]}"; do
        [[ $what == ps && $p != "${ps_port[i]}" ]] && continue
        while read -r line; do
            [[ -z $pid || $line == *"pid=$pid,"* ]] || continue
            # Recv-Q Send-Q LOCAL PEER users:(...)
            read -r _ _ l d _ <<<"$line"
            [[ $l == "$host":* && $d == "$host:$p" ]] && echo "${l##*:} $p"
        done < <(ss -tnpH state established dst "$host" dport = ":$p" 2>/dev/null)
    done
}

# drop_conns WHAT INDEX: closes each connection conns lists, both ends
# (ss -K aborts the worker's socket, the kernel resets the ps's); sets
# dropped to the number of them that are gone afterwards (the same local
# port is not reused within a moment), hit to the tasks they belonged to.
drop_conns() {
    local before after l p
    before=$(conns "$1" "$2")
    for l in $(tr ' ' ':' <<<"$before"); do
        ss -K -tn state established src "$host" sport = ":${l%%:*}" \
            dst "$host" dport = ":${l#*:}" >/dev/null 2>&1
    done
    after=$(conns "$1" "$2")
    dropped=$(comm -23 <(sort <<<"$before" | grep .) <(sort <<<"$after" | grep .) | grep -c .)
    if [[ $1 == ps ]]; then
        hit="ps$2 worker0 worker1 worker2"
    else
        hit="worker$2 ps0 ps1"
    fi
}

# recovering OUT TASK T: TASK lost its session in the 10 s before T and
# had not recovered by T (its next "recovered in" line comes after T).
recovering() {
    local lost rec
    lost=$(lines_of "$1" "$2" | awk -v t="$3" '$1 < t && $1 >= t - 10 &&
        /: session lost \(/ { last = $1 } END { if (last != "") print last }')
    [[ -n $lost ]] || return 1
    rec=$(first_after "$1" "$2" "$lost" ": recovered in ")
    [[ -z $rec ]] || awk -v a="$3" -v b="$rec" 'BEGIN { exit !(b >= a) }'
}

# The faults of the current run: "T KIND TARGET DETAIL" lines in $faults.
# inject: draws cards until one applies (a task to kill must be running: not
# in its restart backoff; a drop must find a connection), at most 7 tries;
# the others go back under the deck.
inject() {
    local try gs victim
    for ((try = 0; try < 7; try++)); do
        draw
        gs=$(last_gs "$out" worker0)
        case $card in
        kill:*)
            local name=${card#kill:}
            victim=$(task_pid "${name%%[0-9]*}" "${name##*[a-z]}") &&
                kill -9 "$victim" 2>/dev/null || {
                undraw
                continue
            }
            echo "$(now) kill $name pid=$victim" >>"$faults"
            printf '  +%6.1f s  kill -9 %-7s (pid %s), the chief at global_step %s%s\n' \
                "$(elapsed "$t_run")" "$name" "$victim" "$gs" "$during"
            return 0
            ;;
        drop:*)
            local what=${card#drop:} t0
            if [[ $what == ps ]]; then rand 2; else rand 3; fi
            t0=$(now)
            drop_conns "$what" "$r"
            ((dropped > 0)) || {
                undraw
                continue
            }
            echo "$t0 drop $what$r n=$dropped hit=${hit// /,}" >>"$faults"
            printf '  +%6.1f s  drop    %-7s (%s TCP connections closed), the chief at global_step %s%s\n' \
                "$(elapsed "$t_run")" "$what$r" "$dropped" "$gs" "$during"
            return 0
            ;;
        esac
    done
    echo "  +$(elapsed "$t_run") s  no fault applies now (tasks in backoff, no connection)"
    return 1
}

# sleep_while_running SECS: sleeps SECS in steps, returns 1 once rf-launch
# has exited
sleep_while_running() {
    local end
    end=$(awk -v a="$(now)" -v s="$1" 'BEGIN { printf "%.3f", a + s }')
    while awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n < e) }'; do
        kill -0 "$lpid" 2>/dev/null || return 1
        sleep 0.1
    done
}

# healthy T: every task is running and every worker printed a progress line
# ("step N, loss"; the chief also its step counter) after time T, i.e. the
# job recovered from what happened before T
healthy() {
    local name up=1
    for name in "${tasks[@]}"; do
        task_pid "${name%%[0-9]*}" "${name##*[a-z]}" >/dev/null || up=0
    done
    for name in worker0 worker1 worker2; do
        ((up)) && [[ -n $(first_after "$out" "$name" "$1" "^[0-9.]* (step [0-9]+, loss|global_step/sec: )") ]] || {
            sleep 0.25 # polled, and this reads the whole output
            return 1
        }
    done
}

# ---- checks -----------------------------------------------------------------

# faults_of KIND TARGET: how many faults of that kind hit that target
faults_of() { awk -v k="$1" -v n="$2" '$2 == k && $3 ~ "^" n { c++ } END { print c + 0 }' "$faults"; }

# steps_lost OUT: over the chief's restores, the highest global_step any
# task printed since the previous restore minus the restored step (one
# "N:LOST" per restore, then "total T")
steps_lost() {
    awk "$gs_awk"'
        {
            task = $2; line = $0; sub(/^[0-9.]* \[[a-z0-9]*\] /, "", line)
            if (task !~ /^\[/) next
            g = gs(line)
            if (task == "[worker0]" && line ~ /: (recovered in|session ready).*: restored /) {
                r = g + 0; lost = (high > r ? high - r : 0); total += lost; n++
                printf "%d:%d ", r, lost
                high = r; next
            }
            if (g != "" && line !~ /^saved checkpoint/ && g + 0 > high) high = g + 0
        }
        END { printf "total %d restores %d\n", total, n }' "$1"
}

# check_faulted OUT DIR: every check of a faulted run (the top comment);
# adds to the totals
tot_faults=0 tot_lost=0 tot_restores=0 tot_recov=0 tot_wall=0 accs=()
declare -A tot_kind=()
check_faulted() {
    local out=$1 dir=$2 wall=$3
    [[ $rc == 0 ]] && ok "job exit 0" || {
        fail "job exit $rc"
        show "$out" 40
    }
    local acc
    acc=$(accuracy "$out" worker0)
    within "$acc" "$ref_acc" "$tol" &&
        ok "test accuracy $acc within $tol of the reference $ref_acc" ||
        fail "test accuracy '$acc', reference $ref_acc (tolerance $tol)"
    accs+=("$acc")
    # every kind injected
    local k missing='' n_kill=0 n_drop=0 name
    for k in ps0 ps1 worker0 worker1 worker2; do
        (($(faults_of kill "$k") > 0)) || missing+=" kill:$k"
        n_kill=$((n_kill + $(faults_of kill "$k")))
    done
    for k in ps worker; do
        (($(faults_of drop "$k") > 0)) || missing+=" drop:$k"
        n_drop=$((n_drop + $(faults_of drop "$k")))
    done
    [[ -z $missing ]] && ok "every kind of fault injected: $n_kill kills, $n_drop drops" ||
        fail "faults not injected:$missing ($n_kill kills, $n_drop drops: the run ended too soon)"
    # kills: rf-launch restarted each, and nothing else
    local want='' got kills
    for name in "${tasks[@]}"; do
        kills=$(faults_of kill "$name")
        want+="${want:+, }$name $kills"
        got=$(lines_of "$out" "" | grep -c "rf-launch: $name was killed by signal 9 (SIGKILL); restarting it")
        ((got == kills)) || fail "$name: killed $kills times, rf-launch reports $got SIGKILL restarts"
    done
    expect_restarts "$out" "$want"
    # drops: each noticed ("session lost") by a task it hit within 5 s
    local td kind target n hits noticed=0 missed=0 h
    while read -r td kind target n hits; do
        [[ $kind == drop ]] || continue
        local seen=
        for h in ${hits//,/ }; do
            h=${h#hit=}
            [[ $h == ps* ]] && continue
            local tl
            tl=$(first_after "$out" "$h" "$td" "(: session lost \\(|: connection lost: )")
            [[ -n $tl ]] && awk -v a="$td" -v b="$tl" 'BEGIN { exit !(b - a <= 5) }' && seen=$h && break
            # a drop during a recovery may hit a worker that is already
            # recovering (it lost its session to the fault before, within
            # 10 s, and has not recovered yet): its recovery's reconnect
            # takes the dropped connection with it, nothing to notice anew
            recovering "$out" "$h" "$td" && seen=$h && break
        done
        if [[ -n $seen ]]; then
            noticed=$((noticed + 1))
        else
            missed=$((missed + 1))
            fail "drop $target ($n) at +$(elapsed "$t_run" "$td") s: no worker it hit printed 'session lost' or 'connection lost' within 5 s"
        fi
    done <"$faults"
    ((missed == 0 && noticed > 0)) && ok "each of the $noticed drops was noticed ('session lost' or 'connection lost') within 5 s"
    # checkpoints
    verify_dir "$dir"
    verify_state "$dir"
    local g_end
    g_end=$(lines_of "$out" worker0 | sed -n 's/^[0-9.]* global_step at the end: //p' | tail -n 1)
    [[ $(state_newest "$dir") == "model.ckpt-$g_end.safetensors" ]] &&
        ok "the newest checkpoint is the final one, model.ckpt-$g_end.safetensors" ||
        fail "the state file's newest '$(state_newest "$dir")', the chief ended at global_step '$g_end'"
    echo "temporary files left by killed saves (tolerated): $(tmp_files "$dir")"
    check_steps "$out" 0
    sync_checks "$out" "${out%.out}.log"
    # the summary
    local recov='' rsum=0 lostline lost restores
    for name in "${tasks[@]}"; do
        n=$(lines_of "$out" "$name" | grep -c ': recovered in ')
        recov+="${recov:+, }$name $n"
        rsum=$((rsum + n))
    done
    lostline=$(steps_lost "$out")
    lost=$(sed -n 's/.*total \([0-9]*\) .*/\1/p' <<<"$lostline")
    restores=$(sed -n 's/.*restores \([0-9]*\)$/\1/p' <<<"$lostline")
    echo "restores (restored step:steps lost): ${lostline% total*}"
    local kinds=''
    for k in kill:ps0 kill:ps1 kill:worker0 kill:worker1 kill:worker2 drop:ps drop:worker; do
        n=$(faults_of "${k%%:*}" "${k#*:}")
        kinds+="${kinds:+, }$k $n"
        tot_kind[$k]=$((${tot_kind[$k]:-0} + n))
    done
    echo "SOAK-SUMMARY: ${sync:+sync 2 of 3, }faults $((n_kill + n_drop)) ($kinds); recoveries $rsum ($recov); restarts: $(restarts "$out"); steps lost $lost over $restores restores (of $steps steps); test accuracy $acc (reference $ref_acc); wall $wall s"
    tot_faults=$((tot_faults + n_kill + n_drop))
    tot_recov=$((tot_recov + rsum))
    tot_lost=$((tot_lost + lost))
    tot_restores=$((tot_restores + restores))
    tot_wall=$(awk -v a="$tot_wall" -v b="$wall" 'BEGIN { print a + b }')
}

# ---- runs -------------------------------------------------------------------

# reference_run K: a fault-free run; appends its accuracy to refs
ref_wall=0
reference_run() {
    local out=$tmp/ref$1.out dir=$tmp/ref$1.ckpt acc
    echo "--- reference run $1 (no faults)"
    log_to "$tmp/ref$1.log"
    RF_LOG_LEVEL=$run_level RF_LOG_FILE=$run_file launch_timeout=$(t 240) \
        start_launch "$out" 2 3 "${launch_flags[@]}" -- "${job_flags[@]}" \
        --checkpoint_dir="$dir"
    finish_launch "$out"
    ref_wall=$(elapsed "$lt0")
    acc=$(accuracy "$out" worker0)
    if [[ $rc -ne 0 || -z $acc ]]; then
        fail "reference run $1: exit $rc, accuracy '$acc'"
        show "$out" 30
        return 1
    fi
    has_line "$out" worker0 "session lost" && fail "reference run $1 lost its session without a fault"
    expect_restarts "$out" "ps0 0, ps1 0, worker0 0, worker1 0, worker2 0"
    sync_checks "$out" "$tmp/ref$1.log"
    ok "reference run $1: test accuracy $acc, $(saved_ckpts "$out" | wc -l) checkpoints, $ref_wall s"
    refs+=("$acc")
}

# faulted_run K: one job with the driver; all its checks
faulted_run() {
    out=$tmp/soak$1.out
    faults=$tmp/soak$1.faults
    local dir=$tmp/soak$1.ckpt stop_gs=$((steps * 9 / 10))
    : >"$faults"
    echo "--- faulted run $1: faults until the chief is at global_step $stop_gs"
    log_to "${out%.out}.log"
    RF_LOG_LEVEL=$run_level RF_LOG_FILE=$run_file launch_timeout=$(t 400) \
        start_launch "$out" 2 3 "${launch_flags[@]}" -- "${job_flags[@]}" \
        --checkpoint_dir="$dir"
    t_run=$lt0
    # the first fault once every task is training (the chief past its
    # first checkpoint) and the ps ports are known
    if ! wait_until "$(t 60)" "$lpid" ckpt_after "$out" "$every" || ! ps_ports; then
        fail "faulted run $1: the job never got past its first checkpoint (or no ps ports)"
        finish_launch "$out"
        show "$out" 30
        return
    fi
    # After a fault the driver waits until the job has recovered (healthy,
    # at most $(t 120) s: longer is a hang, and fails), then 1-3 s; one
    # fault in four is followed by another 0.3-1.5 s later instead, while
    # the job is still recovering from it (not two in a row: rf-launch's
    # backoff doubles with each restart of a task, and faults faster than
    # the recoveries would stall the job for good).
    local tf burst=0
    during='' deck=()
    while kill -0 "$lpid" 2>/dev/null && (($(last_gs "$out" worker0) < stop_gs)); do
        tf=$(now)
        inject || tf=
        rand 4
        if [[ -n $tf ]] && ((r == 0 && burst == 0)); then
            burst=1
            rand 13
            sleep_while_running "$(awk -v r="$r" 'BEGIN { printf "%.1f", 0.3 + r / 10 }')" || break
            during=" (during the recovery)"
            continue
        fi
        burst=0 during=
        if [[ -n $tf ]] && ! wait_until "$(t 120)" "$lpid" healthy "$tf"; then
            kill -0 "$lpid" 2>/dev/null || break
            fail "faulted run $1: the job did not recover within $(t 120) s of the fault at +$(elapsed "$t_run" "$tf") s"
            show "$out" 40
            break
        fi
        rand 21
        sleep_while_running "$(awk -v r="$r" 'BEGIN { printf "%.1f", 1 + r / 10 }')" || break
    done
    echo "faults stopped at +$(elapsed "$t_run") s (the chief at global_step $(last_gs "$out" worker0)); waiting for the job"
    finish_launch "$out"
    check_faulted "$out" "$dir" "$(elapsed "$t_run")"
}

t_all=$(now)
if [[ -z $minutes ]]; then
    reference_run 1 || rft_finish
    ref_acc=${refs[0]}
    faulted_run 1
else
    reference_run 1 && reference_run 2 || rft_finish
    refs_agree "$tol" || reference_run 3 || rft_finish
    check_references "$tol"
    t_soak=$(now)
    k=0
    while awk -v a="$t_soak" -v n="$(now)" -v m="$minutes" 'BEGIN { exit !(n - a < m * 60) }'; do
        k=$((k + 1))
        faulted_run "$k"
    done
    kinds=''
    for kd in kill:ps0 kill:ps1 kill:worker0 kill:worker1 kill:worker2 drop:ps drop:worker; do
        kinds+="${kinds:+, }$kd ${tot_kind[$kd]:-0}"
    done
    acc_range=$(printf '%s\n' "${accs[@]}" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }')
    echo "SOAK-TOTAL: seed $seed, $k rounds of $steps steps in $tot_wall s of faulted runs ($(elapsed "$t_all") s in all); faults $tot_faults ($kinds); recoveries $tot_recov; steps lost $tot_lost over $tot_restores restores; test accuracy $acc_range (reference $ref_acc, spread $spread); $failures failed checks"
fi
echo "seed $seed, $(elapsed "$t_all") s in all"
rft_finish
