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

"case_$case_name"
rft_finish
