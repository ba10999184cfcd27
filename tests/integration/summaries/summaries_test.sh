#!/usr/bin/env bash
# tests/integration/summaries/summaries_test.sh CASE BUILD_DIR: TensorBoard
# event files written by rf-trainer (see CMakeLists.txt). Prints what it
# checks; exits 0 on success, 1 on failure, 77 without the dataset.
#   dist      2 ps tasks, a chief and a worker (2 workers) and an evaluator
#             from TF_CONFIG as TFJob sets it, --checkpoint_dir: the
#             chief's event file and the evaluator's in eval/, decoded by
#             the independent reader (check_events.py)
#   bad_dir   --summary_dir naming a regular file: the chief exits 2
#             naming the flag before any work, the file unchanged
#   full_disk the chief's --summary_dir on a tmpfs (a private mount
#             namespace, root) that fills up during training: one line
#             says summaries are not written, training goes on; once
#             space is freed a line says they are written again; the job
#             ends with exit 0 and its final checkpoint, and the event
#             file holds whole records only, from before and after
set -uo pipefail
case_name=${1:?case}
build=${2:?build directory}
trainer=$build/tools/rf-trainer
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pb=$build/tests/unit/tfrecord/pb
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
source "$here/../../common/lib.sh"

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

case_dist() {
    need_data
    local p0 p1 cp wp ck=$tmp/ckpt cl rc k
    free_port p0 && free_port p1 && free_port cp && free_port wp || {
        fail "no free ports"
        return
    }
    cl="\"cluster\": {\"ps\": [\"$host:$p0\", \"$host:$p1\"], \"chief\": [\"$host:$cp\"], \"worker\": [\"$host:$wp\"]}"
    local args=(--train_steps=800 --batch_size=100 --threads=1
        --log_every=200 --checkpoint_dir="$ck" --save_checkpoint_steps=200
        --save_summaries_steps=100 --log_step_count_steps=100
        --max_wait_secs="$(t 60)")
    local tasks=("ps 0" "ps 1" "chief 0" "worker 0")
    for k in "${tasks[@]}"; do
        set -- $k # "ps 0": the job and the index
        TF_CONFIG="{$cl, \"task\": {\"type\": \"$1\", \"index\": $2}}" \
            "$trainer" "${args[@]}" --metrics_out="$tmp/$1$2.jsonl" \
            --metrics_every_steps=1 >"$tmp/$1$2.log" 2>&1 &
        pids+=($!)
    done
    TF_CONFIG="{$cl, \"task\": {\"type\": \"evaluator\", \"index\": 0}}" \
        timeout "$(t 120)" "$trainer" "${args[@]}" >"$tmp/eval.log" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "the evaluator: exit 0" ||
        { fail "the evaluator: exit $rc"; show "$tmp/eval.log"; }
    for k in 0 1 2 3; do
        wait "${pids[$k]}" && ok "${tasks[$k]}: exit 0" ||
            { fail "${tasks[$k]}: exit $?"; show "$tmp/${tasks[$k]// /}.log"; }
    done
    pids=()
    if /usr/bin/python3 "$here/check_events.py" "$pb" "$ck" \
        "$tmp/chief0.jsonl" "$tmp/eval.log" 100 100 >"$tmp/check" 2>&1; then
        ok "event files: $(tr '\n' ' ' <"$tmp/check")"
    else
        fail "event files:"
        show "$tmp/check" 30
    fi
}

case_bad_dir() {
    local f=$tmp/afile out=$tmp/out rc
    echo precious >"$f"
    "$trainer" --ps_hosts=$host:1 --worker_hosts=$host:2 --job_name=worker \
        --task_index=0 --summary_dir="$f" >"$out" 2>&1
    rc=$?
    [[ $rc == 2 ]] && ok "--summary_dir a file: exit 2" ||
        fail "--summary_dir a file: exit $rc (want 2)"
    grep -q "rf-trainer: --summary_dir: .*/afile is not a directory" "$out" &&
        ok "the message names --summary_dir: $(head -1 "$out")" ||
        { fail "no message naming --summary_dir"; show "$out"; }
    [[ $(cat "$f") == precious ]] && ok "the file is unchanged" ||
        fail "the file was changed"
}

case_full_disk() {
    need_data
    if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
        echo "SKIP: needs root and unshare (a private mount namespace)"
        exit 77
    fi
    local pp wp sd=$tmp/sd ck=$tmp/ckpt out=$tmp/out rc
    free_port pp && free_port wp || {
        fail "no free ports"
        return
    }
    mkdir -p "$sd" "$out"
    local hosts=("--ps_hosts=$host:$pp" "--worker_hosts=$host:$wp")
    "$trainer" "${hosts[@]}" --job_name=ps --task_index=0 \
        --max_wait_secs="$(t 60)" >"$tmp/ps.log" 2>&1 &
    pids+=($!)
    # 256 KiB of tmpfs, 252 KiB of it taken: the event file fills the
    # rest within about 80 steps; a watcher frees the space once the
    # chief says so; the file is copied out before the namespace ends
    unshare -m bash -c '
        set -u
        mount -t tmpfs -o size=256k rf-summaries "$1" || exit 90
        head -c $((252 * 1024)) /dev/zero >"$1/filler" || exit 91
        shift
        log=$1 out=$2
        shift 2
        (for _ in $(seq 1200); do
            if grep -q "summaries not written from" "$log"; then
                rm -f "$0/filler"
                exit 0
            fi
            sleep 0.05
        done) &
        "$@" >"$log" 2>&1
        rc=$?
        wait
        cp "$0"/events.out.* "$out"/ || exit 92
        exit $rc' "$sd" "$sd" "$tmp/chief.log" "$out" \
        "$trainer" "${hosts[@]}" --job_name=worker \
        --task_index=0 --train_steps=3000 --batch_size=100 --threads=1 \
        --checkpoint_dir="$ck" --summary_dir="$sd" \
        --save_summaries_steps=1 --log_step_count_steps=0 \
        --max_wait_secs="$(t 60)"
    rc=$?
    wait "${pids[0]}"
    pids=()
    [[ $rc == 0 ]] && ok "the chief: exit 0 with a full summary_dir" ||
        { fail "the chief: exit $rc"; show "$tmp/chief.log"; }
    local n
    n=$(grep -c "summaries not written from global_step" "$tmp/chief.log")
    [[ $n == 1 ]] && ok "one line: $(grep -m1 "summaries not written" "$tmp/chief.log")" ||
        { fail "$n 'not written' lines, want 1"; show "$tmp/chief.log"; }
    grep -q "summaries not written from .*No space left on device" "$tmp/chief.log" &&
        ok "it names the reason" || fail "no 'No space left on device'"
    grep -q "summaries written again at global_step" "$tmp/chief.log" &&
        ok "$(grep -m1 "summaries written again at" "$tmp/chief.log")" ||
        fail "no 'written again' line"
    [[ -f $ck/model.ckpt-3000.safetensors ]] && ok "the final checkpoint" ||
        fail "no model.ckpt-3000 in $ck: $(ls "$ck")"
    local f
    f=$(ls "$out"/events.out.* 2>/dev/null | head -1)
    if [[ -n $f ]] && /usr/bin/python3 - "$f" "$pb" "$here" >"$tmp/check" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[3] + "/../../unit/tfrecord")
sys.path.insert(0, sys.argv[2])
import read_tfrecord
import tensorboard_event_pb2 as pb
blob = open(sys.argv[1], "rb").read()
evs = [pb.Event.FromString(d) for _, d in read_tfrecord.read_records(blob)]
steps = [e.step for e in evs if e.WhichOneof("what") == "summary"]
gaps = [b - a for a, b in zip(steps, steps[1:])]
assert steps[0] == 1 and steps[-1] == 3000, steps[:3] + steps[-3:]
assert max(gaps) > 1, "no gap while the disk was full"
print("%d records, whole; steps 1..3000 with a gap of %d steps"
      % (len(evs), max(gaps)))
PY
    then
        ok "the event file: $(cat "$tmp/check")"
    else
        fail "the event file ${f:-(none copied)}:"
        show "$tmp/check"
    fi
}

"case_$case_name"
rft_finish
