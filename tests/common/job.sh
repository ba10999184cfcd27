# tests/common/job.sh: shell helpers for tests that run a whole rf-trainer
# job under rf-launch and read its output, sourced after lib.sh by
# tests/integration/fault/fault_test.sh and tests/soak/soak_test.sh:
#   started, kill_tree, cleanup  every process the script starts, killed
#                       (whole trees) by cleanup, which the script installs
#                       with `trap cleanup EXIT`; it removes $tmp unless
#                       $keep is set (then it says where it is)
#   now, elapsed, stamp_into, stamped  output lines stamped with the time
#   start_launch, finish_launch, task_pid  rf-launch in the background, the
#                       pid of one of its tasks
#   make_cluster, start_task  a cluster of free ports, one task started by
#                       hand
#   lines_of, last_gs, saved_ckpts, first_after, accuracy, has_line  what a
#                       task printed
#   check_steps         the chief's global_step invariant
#   verify_strict, verify_dir, tmp_files, state_newest, state_all,
#   verify_state        the checkpoint directory and its state file; every
#                       checkpoint verified strictly (rf-ckpt verify without
#                       --allow-unchecked: every tensor's and the header's
#                       CRC32C there and matching)
#   restarts, expect_restarts  rf-launch's restarts summary
#   refs, check_references, within  reference accuracies and the tolerance
#   wait_until, wait_exit  bounded waits
# The script sets tmp (a scratch directory), trainer, launch, rfckpt, data,
# host and, for start_launch, optionally launch_timeout (rf-launch
# --timeout, default $(t 150)). Plain bash 5 ($EPOCHREALTIME) + coreutils or
# busybox and /proc, so it runs in the rxe guest too (tests/rxe stages it).

# Every process this script starts (rf-launch, timeout wrappers, tasks).
started=()
# pids of PPID's children
children() {
    local p ppid rest
    for p in /proc/[0-9]*; do
        read -r _ _ _ ppid rest 2>/dev/null <"$p/stat" || continue
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
    if [[ -n ${keep:-} ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}

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
# stamp_into OUT: a FIFO OUT.fifo whose lines a background stamp writes
# into OUT, then OUT.done once every writer has closed it (a FIFO, not a
# process substitution: the rxe guest has no /dev/fd).
stamp_into() {
    rm -f "$1" "$1.done" "$1.fifo"
    mkfifo "$1.fifo"
    { stamp <"$1.fifo" >"$1"; touch "$1.done"; } &
    started+=("$!")
}
# stamped OUT: waits (at most 5 s) for OUT.done
stamped() {
    local i=0
    while [[ ! -e $1.done ]] && ((i++ < 100)); do sleep 0.05; done
}

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

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
    stamp_into "$out"
    "$launch" --host "$host" --ps "$nps" --workers "$nw" \
        --timeout "${launch_timeout:-$(t 150)}" "${largs[@]}" -- "$trainer" "$@" \
        >"$out.fifo" 2>&1 &
    lpid=$!
    lt0=$(now)
    started+=("$lpid")
    echo "rf-launch --ps $nps --workers $nw ${largs[*]} -- rf-trainer $*"
}

# start_task OUT ARGS...: one rf-trainer by hand under timeout -s KILL, its
# lines stamped into OUT; sets tpid (the timeout) and tpid_task (the
# rf-trainer).
start_task() {
    local out=$1
    shift
    stamp_into "$out"
    timeout -s KILL "$(t 120)" "$trainer" "$@" >"$out.fifo" 2>&1 &
    tpid=$!
    started+=("$tpid")
    local i=0
    tpid_task=
    while [[ -z $tpid_task ]] && ((i++ < 200 * scale)); do
        tpid_task=$(running "$tpid" "$trainer")
        [[ -n $tpid_task ]] || sleep 0.02
    done
    [[ -n $tpid_task ]] && started+=("$tpid_task")
}

# The classic command lines of a 2 ps + 2 worker cluster on free ports:
# sets cluster=(--ps_hosts=... --worker_hosts=...).
make_cluster() {
    local nps=$1 nw=$2 i port ps='' ws=''
    # shellcheck disable=SC2034 # lib.sh's free_port reads it
    used_ports=" "
    for ((i = 0; i < nps; i++)); do
        free_port port || return 1
        ps+=${ps:+,}$host:$port
    done
    for ((i = 0; i < nw; i++)); do
        free_port port || return 1
        ws+=${ws:+,}$host:$port
    done
    cluster=(--ps_hosts="$ps" --worker_hosts="$ws")
}

# finish_launch OUT: waits for rf-launch (and its stamped output); sets rc.
finish_launch() {
    wait "$lpid"
    rc=$?
    stamped "$1"
    echo "rf-launch: exit $rc after $(elapsed "$lt0") s"
}

# running PID PROG: PID itself if it runs PROG (argv[0]), else the pid of
# its child that does. The guest's busybox timeout execs PROG in the pid it
# was started as (its watchdog is the child); coreutils' forks PROG.
running() {
    local c a0
    for c in "$1" $(children "$1"); do
        a0= # stays empty if the child exited before its cmdline was read
        IFS= read -r -d '' a0 2>/dev/null <"/proc/$c/cmdline"
        [[ $a0 == "$2" ]] && echo "$c" && return 0
    done
    return 1
}

# task_pid JOB INDEX: the pid of rf-launch's ($lpid) child running that task
task_pid() {
    local c
    for c in $(children "$lpid"); do
        if tr '\0' ' ' 2>/dev/null <"/proc/$c/cmdline" |
            grep -q -- "--job_name=$1 --task_index=$2\( \|$\)"; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# lines_of OUT TASK: "TIME TEXT" of TASK's lines (rf-launch's prefix
# dropped); TASK "" for rf-launch's own lines and "-" for a hand-started
# task's file (whose lines carry the task's own "[name] ", dropped too).
lines_of() {
    [[ -e $1 ]] || return 0
    case $2 in
    -) sed 's/^\([0-9.]*\) \[[a-z]*[0-9]*\] /\1 /' "$1" ;;
    "") sed -n 's/^\([0-9.]*\) \(rf-launch: \)/\1 \2/p' "$1" ;;
    *) sed -n "s/^\([0-9.]*\) \[$2\] /\1 /p" "$1" ;;
    esac
}

# The global_step values in one line of the chief (empty: none): "step N,
# loss", "(global_step N", "global_step N (recovery", "session ready: ...,
# global_step N", "global_step at the end: N", "cluster: global_step A ->
# B" (B).
gs_awk='
function gs(s,   m) {
    if (match(s, /^step [0-9]+, loss/)) { m = substr(s, 6); sub(/,.*/, "", m); return m }
    if (match(s, /global_step at the end: [0-9]+/)) { m = substr(s, RSTART + 24, RLENGTH - 24); return m }
    # the summary of the chief, "cluster: global_step A -> B in ...": B
    if (match(s, /^cluster: global_step [0-9]+ -> [0-9]+/)) { m = substr(s, 1, RLENGTH); sub(/.*-> /, "", m); return m }
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
# (grep reads to the end: grep -q would quit at the first match and, under
# pipefail, a sed still writing would make the pipe fail with SIGPIPE)
has_line() { lines_of "$1" "$2" | grep -- "$3" >/dev/null; }
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

# check_steps OUT TKILL: the chief's global_step invariant: every
# global_step it prints (progress, step counter, checkpoint, session and
# recovery lines, in order) is >= that of the last checkpoint it saved
# before printing it (or is the step it had seen at that save); TKILL:
# restores at or after it must be of exactly the newest checkpoint saved
# before them, and there must be one. Prints what it checked.
check_steps() {
    local report
    report=$(lines_of "$1" worker0 | awk -v tk="$2" "$gs_awk"'
        {
            t = $1; $1 = ""; sub(/^ /, ""); line = $0
            if (line ~ /^saved checkpoint /) {
                c = gs(line) + 0
                if (nc > 0 && c < last_c) { bad++; print "BAD checkpoint " c " after " last_c }
                last_c = c; nc++
                # the step this task had seen when it saved: its progress
                # line for that run comes after the save line
                seen = line; sub(/.*this task was at /, "", seen); sub(/\).*/, "", seen)
                last_seen = seen + 0
                next
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
            if (nc > 0 && g + 0 < last_c && g + 0 != last_seen) { bad++; print "BAD global_step " g " < last checkpoint " last_c ": " line }
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

# tmp_files DIR: the temporary checkpoint files (.NAME.tmp.PID.K) in DIR,
# each followed by a space
tmp_files() {
    local f
    for f in "$1"/.*.tmp.*; do
        [[ -e $f ]] && printf '%s ' "${f##*/}"
    done
}

# verify_strict FILE: rf-ckpt verify (strict: never --allow-unchecked)
# exits 0 saying (its last line: a shard ledger's line may come first)
# every CRC32C of FILE matches; its output in $tmp/verify
verify_strict() {
    "$rfckpt" verify "$1" >"$tmp/verify" 2>&1 &&
        [[ $(tail -n 1 "$tmp/verify") == "ok $1: "*" tensors, every CRC32C matches" ]]
}

# verify_dir DIR: every checkpoint file in DIR verifies strictly
verify_dir() {
    local f n=0 bad=0
    for f in "$1"/model.ckpt-*.safetensors; do
        [[ -e $f ]] || continue
        n=$((n + 1))
        if ! verify_strict "$f"; then
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

# wait_exit PID SECS: waits at most SECS for PID (a child of this shell);
# sets wrc (its status, or "running" when it did not exit in time)
wait_exit() {
    local pid=$1 secs=$2 t0
    t0=$(now)
    while kill -0 "$pid" 2>/dev/null; do
        if awk -v a="$t0" -v b="$(now)" -v s="$secs" 'BEGIN { exit !(b - a > s) }'; then
            wrc=running
            return 1
        fi
        sleep 0.05
    done
    wait "$pid" 2>/dev/null
    wrc=$?
}

# state_newest DIR: the state file's model_checkpoint_path
state_newest() {
    sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$1/checkpoint" 2>/dev/null
}
# state_all DIR: every checkpoint the state file names
state_all() {
    sed -n 's/^[a-z_]*: "\(.*\)"$/\1/p' "$1/checkpoint" 2>/dev/null | sort -u
}

# verify_state DIR: every checkpoint the state file of DIR names is not a
# temporary file and verifies strictly (verify_strict; a missing one does
# not), and it names at least one
verify_state() {
    local f n=0 bad=0 names
    names=$(state_all "$1")
    for f in $names; do
        n=$((n + 1))
        if [[ $f == *.tmp* || $f == .* ]]; then
            fail "the state file names a temporary file: $f"
            bad=$((bad + 1))
        elif ! verify_strict "$1/$f"; then
            fail "rf-ckpt verify $1/$f: $(cat "$tmp/verify")"
            bad=$((bad + 1))
        fi
    done
    ((n > 0 && bad == 0)) && ok "the $n checkpoints the state file names verify: $(echo "$names" | tr '\n' ' ')" ||
        { ((n == 0)) && fail "the state file names no checkpoint"; }
}

# References: fault-free runs' accuracies in refs; the faulted runs are
# compared with their mean (ref_acc), which is meaningful only while they
# agree well within the tolerance. refs_agree TOL: two references are at
# most TOL / 2 apart (sets spread). check_references TOL fails when two
# references are more than TOL / 2 apart, or three (the callers run a third
# when two disagree: async noise on a loaded 2-core host, 0.0054 seen
# beside the rxe guests, against 0.0024 over six runs on a quiet one) are
# more than TOL apart, whose mean then has the noise of about two; and sets
# ref_acc and spread.
refs=()
ref_acc=
ref_spread() {
    spread=$(printf '%s\n' "${refs[@]}" | awk 'NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 } END { printf "%.4f", hi - lo }')
}
refs_agree() {
    ref_spread
    awk -v d="$spread" -v t="$1" 'BEGIN { exit !(d <= t / 2) }'
}
check_references() {
    local limit=$1 what="$1 / 2"
    ref_spread
    ref_acc=$(printf '%s\n' "${refs[@]}" | awk '{ s += $1 } END { printf "%.5f", s / NR }')
    if ((${#refs[@]} > 2)); then
        what=$1
    else
        limit=$(awk -v t="$1" 'BEGIN { printf "%.6f", t / 2 }')
    fi
    awk -v d="$spread" -v t="$limit" 'BEGIN { exit !(d <= t) }' &&
        ok "reference accuracies ${refs[*]}: spread $spread <= $what, mean $ref_acc" ||
        fail "reference accuracies ${refs[*]} differ by $spread > $what: async noise too large for a comparison within $1"
}

# within A REF TOL: A is a number within TOL of REF
within() { [[ -n $1 ]] && awk -v a="$1" -v r="$2" -v t="$3" 'BEGIN { d = a - r; exit !(d <= t && d >= -t) }'; }

# ps_port OUT K: ps task K's port once it serves (rf-launch's OUT)
ps_port() {
    lines_of "$1" "ps$2" | sed -n "s/^[0-9.]* ps task $2: serving on [^ ]*:\([0-9]*\) (fabric.*/\1/p" | head -n 1
}

# wait_ps_ports OUT: waits for both ps tasks of rf-launch ($lpid) to serve
# and sets p0 and p1 to their ports; fails the case (with OUT's tail) if
# they do not
wait_ps_ports() {
    local i
    for ((i = 0; i < $(t 300); i++)); do
        p0=$(ps_port "$1" 0)
        p1=$(ps_port "$1" 1)
        [[ -n $p0 && -n $p1 ]] && return 0
        kill -0 "$lpid" 2>/dev/null || break
        sleep 0.1
    done
    fail "the ps tasks did not start"
    show "$1" 20
    rft_finish
}
