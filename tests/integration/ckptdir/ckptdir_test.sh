#!/usr/bin/env bash
# tests/integration/ckptdir/ckptdir_test.sh CASE BUILD_DIR: a chief whose
# --checkpoint_dir fails during training (1 ps, 1 worker, rf-trainer on
# Fashion-MNIST, saves every 200 steps). The directory is a 24 MiB tmpfs
# in a private mount namespace (root), changed by a watcher that follows
# the chief's log; what it holds at the end is copied out and checked. Prints
# what it checks; exits 0 on success, 1 on failure, 77 without the dataset
# or without root.
#   full_disk  filled after the first save, emptied once a save failed:
#              one "not saved" line naming "No space left on device",
#              "saved again", exit 0, the final checkpoint verifies (rf-ckpt
#              verify) and restores (a second job starts from it), no
#              temporary file, every checkpoint file named by the state file
#   read_only  remounted read-only after the first save, read-write once a
#              save failed: the same with "Read-only file system"
#   max_failed read-only for good (--max_failed_saves=2): the chief exits 1
#              (permanent) naming the directory, the count and the error,
#              model.ckpt-0 intact
#   final_fail read-only for good with --max_failed_saves=0: the job trains
#              to its end, the final save fails twice 5 s apart, exit 1
#              naming the final checkpoint
#   orphan     (no tmpfs) a second job in the directory of a first, with a
#              stray model.ckpt-99999.safetensors and files of other names
#              dropped in: the first save deletes the stray, keeps the
#              others; the state file made a dangling symbolic link for one
#              save (after 800): that save fails, its new file is removed at
#              once (looked at before the state file is back), the next one
#              is saved again; at the end every model.ckpt-N file is named
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2015 # ok || fail: ok never fails
# shellcheck disable=SC2016 # the watchers are bash run in the namespace
# shellcheck disable=SC2317 # the cases are called by name
set -uo pipefail
case_name=${1:?case}
build=${2:?build directory}
trainer=$build/tools/rf-trainer
rfckpt=$build/tools/rf-ckpt
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=127.0.0.1
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
unset TF_CONFIG
# shellcheck source=../../common/lib.sh
source "$here/../../common/lib.sh"

if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
    echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
    exit 77
fi

ck=$tmp/ckpt
out=$tmp/out
log=$tmp/chief.log
mkdir -p "$ck" "$out" "$tmp/sd"

# start_ps: a ps task on a fresh port pair (sets pp, wp, hosts)
start_ps() {
    free_port pp && free_port wp || {
        fail "no free ports"
        rft_finish
    }
    hosts=("--ps_hosts=$host:$pp" "--worker_hosts=$host:$wp")
    "$trainer" "${hosts[@]}" --job_name=ps --task_index=0 \
        --max_wait_secs="$(t 60)" >"$tmp/ps.log" 2>&1 &
    pids=("$!")
}

# ps_ends: the ps task exits within 30 s (scaled) once its chief ended the
# job, else it is killed and that is a failure
ps_ends() {
    local i
    for ((i = 0; i < $(t 30) * 20; i++)); do
        kill -0 "${pids[0]}" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "${pids[0]}" 2>/dev/null; then
        kill -9 "${pids[0]}"
        fail "the ps task was not shut down"
    fi
    wait "${pids[0]}" 2>/dev/null
}

# ps_kill: the ps task of a chief that failed (nothing shuts it down)
ps_kill() {
    kill -9 "${pids[0]}" 2>/dev/null
    wait "${pids[0]}" 2>/dev/null
}

# chief WATCH ARGS...: the chief with ARGS, $ck a tmpfs of a private mount
# namespace; WATCH (bash) runs beside it, with until_line PATTERN (waits for
# PATTERN in the chief's log, at most 120 s scaled). The directory's
# contents end up in $out; the chief's status in rc.
chief() {
    local watch=$1
    shift
    if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
        echo "SKIP: needs root and unshare (a private mount namespace)"
        exit 77
    fi
    WATCH=$watch LIMIT=$(($(t 120) * 20)) unshare -m bash -c '
        set -u
        ck=$1 out=$2 log=$3
        shift 3
        mount -t tmpfs -o size=24m rf-ckpt "$ck" || exit 90
        until_line() {
            local i
            for ((i = 0; i < LIMIT; i++)); do
                grep -q -- "$1" "$log" 2>/dev/null && return 0
                sleep 0.05
            done
            echo "watcher: no \"$1\" in the log" >&2
            return 1
        }
        (eval "$WATCH") &
        w=$!
        "$@" >"$log" 2>&1
        rc=$?
        kill "$w" 2>/dev/null
        wait
        cp -a "$ck"/. "$out"/ || exit 92
        exit $rc' _ "$ck" "$out" "$log" \
        timeout "$(t 180)" "$trainer" "${hosts[@]}" --job_name=worker --task_index=0 \
        --batch_size=100 --threads=1 --checkpoint_dir="$ck" \
        --summary_dir="$tmp/sd" --save_checkpoint_steps=200 \
        --log_step_count_steps=0 --max_wait_secs="$(t 60)" "$@"
    rc=$?
}

# check_dir DIR: no temporary file, every model.ckpt-N file named by the
# state file, every named one there and verifying strictly
check_dir() {
    local d=$1 f name named bad=0
    named=$(sed -n 's/^[a-z_]*: "\(.*\)"$/\1/p' "$d/checkpoint" | sort -u)
    local temps=("$d"/.*.tmp.*)
    if [[ -e ${temps[0]} ]]; then
        fail "a temporary file is left: ${temps[*]}"
    else
        ok "no temporary file"
    fi
    for f in "$d"/model.ckpt-*.safetensors; do
        [[ -e $f ]] || continue
        name=${f##*/}
        grep -qx -- "$name" <<<"$named" ||
            { fail "$name is named by no state file"; bad=1; }
    done
    for name in $named; do
        if ! "$rfckpt" verify "$d/$name" >"$tmp/verify" 2>&1; then
            fail "rf-ckpt verify $name: $(cat "$tmp/verify")"
            bad=1
        fi
    done
    ((bad == 0)) && ok "every file named, every named one verifies: ${named//$'\n'/ }"
}

# expect_once PATTERN: exactly one line of the chief's log matches
expect_once() {
    local n
    n=$(grep -c -- "$1" "$log")
    [[ $n == 1 ]] && ok "one line: $(grep -m1 -- "$1" "$log" | cut -c1-300)" ||
        { fail "$n lines with '$1', want 1"; show "$log" 30; }
}

# recovers REASON: the job went on through a failed save and ended well
recovers() {
    [[ $rc == 0 ]] && ok "the chief: exit 0" ||
        { fail "the chief: exit $rc"; show "$log" 30; }
    ps_ends
    expect_once "checkpoint not saved at global_step"
    grep -q "checkpoint not saved at .*$1" "$log" && ok "it names '$1'" ||
        fail "the line does not name '$1'"
    expect_once "checkpoint saved again at global_step"
    [[ -f $out/model.ckpt-3000.safetensors ]] && ok "the final checkpoint" ||
        fail "no model.ckpt-3000: $(cd "$out" && echo *)"
    check_dir "$out"
    # the final checkpoint restores: a second job starts from it
    start_ps
    cp -a "$out" "$tmp/again"
    timeout "$(t 120)" "$trainer" "${hosts[@]}" --job_name=worker \
        --task_index=0 --batch_size=100 --threads=1 \
        --checkpoint_dir="$tmp/again" --train_steps=3100 \
        --save_checkpoint_steps=0 --save_checkpoint_secs=0 \
        --log_step_count_steps=0 --max_wait_secs="$(t 60)" \
        >"$tmp/again.log" 2>&1
    local r=$?
    ps_ends
    if [[ $r == 0 ]] && grep -q "restored .*model.ckpt-3000.safetensors, global_step 3000" "$tmp/again.log"; then
        ok "a second job restores model.ckpt-3000 and ends"
    else
        fail "the second job: exit $r"
        show "$tmp/again.log"
    fi
}

case_full_disk() {
    start_ps
    chief 'until_line "saved checkpoint" || exit 1
           cat /dev/zero >"$ck/filler" 2>/dev/null
           until_line "checkpoint not saved at" || exit 1
           rm -f "$ck/filler"' \
        --train_steps=3000 --max_failed_saves=10
    recovers "No space left on device"
}

case_read_only() {
    start_ps
    chief 'until_line "saved checkpoint" || exit 1
           mount -o remount,ro "$ck" || echo "watcher: remount ro failed" >&2
           until_line "checkpoint not saved at" || exit 1
           mount -o remount,rw "$ck"' \
        --train_steps=3000 --max_failed_saves=10
    recovers "Read-only file system"
}

# read_only_for_good ARGS...: the chief with ARGS, its directory read-only
# from its first save on; it must exit 1 (its ps task is then killed)
read_only_for_good() {
    local t0=$SECONDS
    start_ps
    chief 'until_line "saved checkpoint" || exit 1
           mount -o remount,ro "$ck"' "$@"
    ps_kill
    [[ $rc == 1 ]] && ok "the chief: exit 1 after $((SECONDS - t0)) s" ||
        { fail "the chief: exit $rc (want 1)"; show "$log" 30; }
}

case_max_failed() {
    read_only_for_good --train_steps=1000000 --max_failed_saves=2
    grep -q "2 checkpoint saves in a row into $ck failed (max_failed_saves=2, the first at global_step [0-9]*); the last: .*Read-only file system" "$log" &&
        ok "$(grep -m1 "checkpoint saves in a row" "$log" | cut -c1-300)" ||
        { fail "no message naming the directory, the count and the error"; show "$log" 30; }
    grep -q "rf-trainer: exit 1 (permanent): .*max_failed_saves=2" "$log" &&
        ok "the final line says exit 1 (permanent)" ||
        fail "no 'exit 1 (permanent)' final line"
    expect_once "checkpoint not saved at global_step"
    check_dir "$out"
    local files=("$out"/model.ckpt-*)
    [[ ${#files[@]} == 1 && -f $out/model.ckpt-0.safetensors ]] &&
        ok "model.ckpt-0 alone, intact" || fail "files: ${files[*]}"
}

case_final_fail() {
    read_only_for_good --train_steps=2000 --max_failed_saves=0
    expect_once "checkpoint not saved at global_step"
    grep -q "the final checkpoint (global_step 2000) was not saved: .*trying once more in 5 s" "$log" &&
        ok "the final save is tried again" || fail "no 'trying once more' line"
    grep -q "rf-trainer: exit 1 (permanent): .*the final checkpoint (global_step 2000) was not saved, retried once: .*Read-only file system" "$log" &&
        ok "$(grep -m1 "rf-trainer: exit 1" "$log" | cut -c1-300)" ||
        { fail "no final line naming the final checkpoint"; show "$log" 30; }
    check_dir "$out"
}

case_orphan() {
    local a=$tmp/orphan
    start_ps
    "$trainer" "${hosts[@]}" --job_name=worker --task_index=0 \
        --batch_size=100 --threads=1 --checkpoint_dir="$a" \
        --train_steps=400 --save_checkpoint_steps=200 \
        --log_step_count_steps=0 --max_wait_secs="$(t 60)" \
        >"$tmp/first.log" 2>&1 || { fail "the first job: exit $?"; show "$tmp/first.log"; }
    ps_ends
    echo stray >"$a/model.ckpt-99999.safetensors"
    local other
    for other in model.ckpt-99999.safetensors.bak model.ckpt-5.index notes.txt; do
        echo other >"$a/$other"
    done
    start_ps
    # after the second job's save at 800: the state file a dangling link
    # for the save at 1000, back once that failed
    (
        for ((i = 0; i < $(t 120) * 20; i++)); do
            grep -q "saved checkpoint .*model.ckpt-800" "$log" 2>/dev/null && break
            sleep 0.05
        done
        mv "$a/checkpoint" "$tmp/state.keep"
        ln -s "$tmp/nodir/checkpoint" "$a/checkpoint"
        for ((i = 0; i < $(t 120) * 20; i++)); do
            grep -q "checkpoint not saved at" "$log" 2>/dev/null && break
            sleep 0.05
        done
        find "$a" -mindepth 1 -printf '%f\n' >"$tmp/after_fail"
        rm -f "$a/checkpoint"
        mv "$tmp/state.keep" "$a/checkpoint"
    ) &
    local w=$!
    "$trainer" "${hosts[@]}" --job_name=worker --task_index=0 \
        --batch_size=100 --threads=1 --checkpoint_dir="$a" \
        --train_steps=2000 --save_checkpoint_steps=200 \
        --log_step_count_steps=0 --max_wait_secs="$(t 60)" >"$log" 2>&1
    rc=$?
    kill "$w" 2>/dev/null
    wait "$w"
    ps_ends
    [[ $rc == 0 ]] && ok "the second job: exit 0" ||
        { fail "the second job: exit $rc"; show "$log" 30; }
    [[ ! -e $a/model.ckpt-99999.safetensors ]] && ok "the stray model.ckpt-99999 was deleted" ||
        fail "the stray model.ckpt-99999 is still there"
    for other in model.ckpt-99999.safetensors.bak model.ckpt-5.index notes.txt; do
        [[ $(cat "$a/$other" 2>/dev/null) == other ]] && ok "$other kept" ||
            fail "$other deleted or changed"
    done
    # the save that failed: 1000, or a later one on a loaded machine
    local n
    n=$(sed -n 's/.*checkpoint not saved at global_step \([0-9]*\): .*/\1/p' "$log" | head -n 1)
    [[ -n $n ]] || { fail "no failed save"; n=1000; }
    expect_once "checkpoint not saved at global_step $n: .*nodir.*model.ckpt-$n.safetensors removed: no state file names it"
    expect_once "checkpoint saved again at global_step $((n + 200))"
    if grep -qx "model.ckpt-$n.safetensors" "$tmp/after_fail"; then
        fail "model.ckpt-$n was left after its failed save"
    else
        ok "model.ckpt-$n gone as soon as its save failed"
    fi
    [[ ! -e $a/model.ckpt-$n.safetensors ]] && ok "no model.ckpt-$n" ||
        fail "model.ckpt-$n is left"
    check_dir "$a"
}

"case_$case_name"
rft_finish
