#!/usr/bin/env bash
# tests/integration/trainer/trainer_test.sh CASE RF_TRAINER: one case of the
# rf-trainer integration tests (see CMakeLists.txt). Prints what it checks;
# exits 0 on success, 1 on failure, 77 when the dataset is missing.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

# run OUT ARGS...: runs the trainer, stdout+stderr to OUT, sets $rc.
run() {
    local out=$1
    shift
    "$trainer" "$@" >"$out" 2>&1
    rc=$?
}

# line OUT PREFIX: the first line of OUT starting with PREFIX.
line() { grep -m1 "^$2" "$1" || true; }

# expect_usage "MESSAGE" ARGS...: exit status 2 and MESSAGE in stderr.
expect_usage() {
    local want=$1
    shift
    timeout "$(t 60)" "$trainer" "$@" >"$tmp/out" 2>"$tmp/err"
    local st=$?
    if [[ $st -ne 2 ]]; then
        fail "rf-trainer $* exited $st, want 2 ($(head -c 300 "$tmp/err"))"
    elif ! grep -qF -- "$want" "$tmp/err"; then
        fail "rf-trainer $*: stderr lacks '$want': $(cat "$tmp/err")"
    else
        ok "rf-trainer $* -> 2: $(head -1 "$tmp/err")"
    fi
}

# Output paths refused before any work (exit 2, the flag named, nothing
# created or touched); none of these needs the dataset.
case_output_paths() {
    local flag
    mkfifo "$tmp/fifo"
    python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
        "$tmp/sock"
    echo plain >"$tmp/file"
    ln -s /dev/null "$tmp/link-to-null"
    ln -s "$tmp" "$tmp/link-to-dir"
    for flag in variables_out trace; do
        expect_usage "--$flag: $tmp is a directory" --$flag="$tmp"
        expect_usage "--$flag: /dev/null is not a regular file" \
            --$flag=/dev/null
        expect_usage "--$flag: $tmp/none/v.st: directory $tmp/none does not exist" \
            --$flag="$tmp/none/v.st"
        # a FIFO is never opened (it would block): timeout guards that
        expect_usage "--$flag: $tmp/fifo is not a regular file" \
            --$flag="$tmp/fifo"
        expect_usage "--$flag: $tmp/sock is not a regular file" \
            --$flag="$tmp/sock"
        # a parent that is a regular file: refused as root too
        expect_usage "--$flag: $tmp/file/v.st: $tmp/file is not a directory" \
            --$flag="$tmp/file/v.st"
        # a symbolic link is followed: what it points to is judged
        expect_usage "--$flag: $tmp/link-to-null (a symbolic link to /dev/null) is not a regular file" \
            --$flag="$tmp/link-to-null"
        expect_usage "is a directory" --$flag="$tmp/link-to-dir"
        if [[ $(id -u) -eq 0 ]]; then
            echo "NOTE: running as root: an unwritable directory cannot be" \
                "refused here (root writes anyway); the parent-is-a-file" \
                "case above stands for it"
        else
            mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
            expect_usage "--$flag: $tmp/ro/v.st: directory $tmp/ro is not writable" \
                --$flag="$tmp/ro/v.st"
            chmod 755 "$tmp/ro" && rmdir "$tmp/ro"
        fi
    done
    [[ -p $tmp/fifo && -S $tmp/sock && -c /dev/null && -L $tmp/link-to-null &&
        $(cat "$tmp/file") == plain ]] &&
        ok "the refused paths are as they were" ||
        fail "a refused output path was changed"
    ! ls -A "$tmp" | grep -q '\.tmp\.' &&
        ok "no temporary file left" || fail "temporaries: $(ls -A "$tmp")"
}

# Long values are echoed cut, with the reason kept.
case_long_values() {
    local long
    long=$(printf 'x%.0s' $(seq 3000))
    expect_usage "--batch_size: '${long:0:64}...' is not an integer" \
        --batch_size="$long"
    expect_usage "--learning_rate: '${long:0:64}...' is not a number" \
        --learning_rate="$long"
    expect_usage "--model: unknown model '${long:0:64}...' (expected softmax" \
        --model="$long"
    expect_usage "--explain: '${long:0:64}...' is not one of text, json" \
        --explain="$long"
    expect_usage "--${long:0:64}...: unknown flag" --"$long"=1
    expect_usage "unexpected argument '${long:0:64}...' (flags are" "$long"
    expect_usage "--seed: '1${long:0:63}...' is not a non-negative integer" \
        --seed="1$long"
    # a long path: its end is shown, the reason kept
    local deep=$tmp
    for _ in 1 2 3 4 5 6 7 8; do deep+=/$(printf 'd%.0s' $(seq 60)); done
    expect_usage "/$(printf 'd%.0s' $(seq 60))/v.st: directory ..." \
        --variables_out="$deep/v.st"
    grep -q "does not exist (No such file or directory)$" "$tmp/err" &&
        ok "the reason is kept for a ${#deep}-byte path" ||
        fail "long path: $(cat "$tmp/err")"
    local digits
    digits=$(printf '9%.0s' $(seq 500))
    expect_usage "--threads: ${digits:0:64}... is out of range [0, 256]" \
        --threads="$digits"
}

case_flags() {
    expect_usage "--frobnicate: unknown flag" --frobnicate=1
    expect_usage "--batch_size: 'abc' is not an integer" --batch_size=abc
    expect_usage "--batch_size: '12x' is not an integer" --batch_size 12x
    expect_usage "--batch_size: 0 is out of range [1, 65536]" --batch_size=0
    expect_usage "--batch_size: missing value" --batch_size
    expect_usage "--batch_size: missing value" --batch_size --seed=1
    expect_usage "--train_steps: -5 is out of range" --train_steps=-5
    expect_usage "--train_steps: '' is not an integer" --train_steps=
    expect_usage "--learning_rate: 'fast' is not a number" \
        --learning_rate=fast
    expect_usage "--learning_rate: -0.1 is out of range" --learning_rate=-0.1
    expect_usage "--learning_rate: 0 is out of range" --learning_rate=0
    expect_usage "--learning_rate: 'nan' is not a number" --learning_rate=nan
    expect_usage "--learning_rate: 1e999 is out of range" \
        --learning_rate=1e999
    # values that float32 cannot hold: 0 or infinity would train something
    # else than asked (1e-300 used to train nothing with exit 0)
    expect_usage "--learning_rate: 1e-300 is out of range: it rounds to 0 in float32" \
        --learning_rate=1e-300
    expect_usage "--learning_rate: 1e39 is out of range" --learning_rate=1e39
    expect_usage "--learning_rate: 1e-40 is out of range: it is subnormal in float32" \
        --learning_rate=1e-40
    expect_usage "--momentum: 1e-46 is out of range: it rounds to 0 in float32" \
        --optimizer=momentum --momentum=1e-46
    expect_usage "--momentum: 1.5 is out of range [0, 1]" \
        --optimizer=momentum --momentum=1.5
    expect_usage "--momentum: not used by --optimizer=adam" --momentum=0.5
    expect_usage "--seed: '-1' is not a non-negative integer" --seed=-1
    expect_usage "--seed: 99999999999999999999 is out of range" \
        --seed=99999999999999999999
    expect_usage "--threads: 1000 is out of range [0, 256]" --threads=1000
    expect_usage "--log_every: '1.5' is not an integer" --log_every=1.5
    expect_usage "--eval_batch_size: 20000 is out of range [1, 10000]" \
        --eval_batch_size=20000
    expect_usage "--trace_steps: 0 is out of range" --trace_steps=0
    expect_usage "--data_dir: empty value" --data_dir=
    expect_usage "--model: unknown model 'resnet'" --model=resnet
    expect_usage "--model: 'abc': expected a layer width" --model=mlp:abc
    expect_usage "--model: '256,x': expected a layer width at offset 4" \
        --model=mlp:256,x
    expect_usage "--model: '256,': expected a layer width at offset 4" \
        --model=mlp:256,
    expect_usage "--model: '0': layer width 0 is out of range" --model=mlp:0
    expect_usage "--model: '32,64': expected 3 widths, got 2" \
        --model=cnn:32,64
    expect_usage "--model: 'softmax:10': softmax takes no widths" \
        --model=softmax:10
    expect_usage "--optimizer" --optimizer=lbfgs
    expect_usage "lbfgs" --optimizer=lbfgs
    expect_usage "unexpected argument 'extra'" extra
    expect_usage "--nomodel is only for boolean flags" --nomodel
    expect_usage "--explain: 'maybe' is not one of text, json" --explain=maybe
    # --variables_out is checked before any training, and nothing is touched
    expect_usage "--variables_out: $tmp is a directory" --variables_out="$tmp"
    expect_usage "--variables_out: /dev/null is not a regular file" \
        --variables_out=/dev/null
    expect_usage "--variables_out: $tmp/none/v.st: directory $tmp/none does not exist" \
        --variables_out="$tmp/none/v.st"
    case_output_paths
    case_long_values
    # cluster flags: checked by rf_cluster_resolve, exit 2 naming the flag
    expect_usage "--job_name" --job_name=boss --ps_hosts=ps0:2222 \
        --worker_hosts=w0:2222 --task_index=0
    expect_usage "--ps_hosts" --ps_hosts=ps0 --worker_hosts=w0:2222 \
        --job_name=ps --task_index=0
    expect_usage "--worker_hosts" --ps_hosts=ps0:2222 \
        --worker_hosts=w0:2222,w1:99999 --job_name=worker --task_index=0
    expect_usage "--task_index" --ps_hosts=ps0:2222 --worker_hosts=w0:2222 \
        --job_name=worker --task_index=3
    expect_usage "--apply: 'gpu' is not one of ps, worker" --apply=gpu
    # --embedding_lookup: the accepted ways named, any case but these refused
    expect_usage "--embedding_lookup: 'fast' is not one of auto, rows, gather" \
        --embedding_lookup=fast
    expect_usage "--embedding_lookup: 'Rows' is not one of auto, rows, gather" \
        --embedding_lookup=Rows
    expect_usage "--embedding_lookup: '' is not one of auto, rows, gather" \
        --embedding_lookup=
    expect_usage "--embedding_lookup: only for distributed training" \
        --embedding_lookup=gather
    # distributed-only flags in a local run
    expect_usage "--apply: only for distributed training" --apply=worker
    expect_usage "--use_locking: only for distributed training" --use_locking
    expect_usage "--sync_replicas: only for distributed training" \
        --sync_replicas
    # sync replicas: ranges and combinations (the cluster's part in
    # trainer_dist.bad_cluster)
    expect_usage "--replicas_to_aggregate: -1 is out of range [0, 1024]" \
        --sync_replicas --replicas_to_aggregate=-1
    expect_usage "--total_num_replicas: 2000 is out of range [0, 1024]" \
        --sync_replicas --total_num_replicas=2000
    expect_usage "--replicas_to_aggregate: only with --sync_replicas" \
        --replicas_to_aggregate=2
    expect_usage "--total_num_replicas: only with --sync_replicas" \
        --total_num_replicas=2
    expect_usage "--sync_replicas: the averaged gradient is applied on the ps; not with --apply=worker" \
        --sync_replicas --apply=worker
    expect_usage "--replicas_to_aggregate: 3 exceeds --total_num_replicas=2" \
        --sync_replicas --replicas_to_aggregate=3 --total_num_replicas=2
    # --help
    "$trainer" --help >"$tmp/help" 2>&1
    local st=$?
    if [[ $st -ne 0 ]] || ! grep -q -- "--learning_rate=LR" "$tmp/help" ||
        ! grep -q -- "--ps_hosts" "$tmp/help"; then
        fail "--help exited $st or lacks flags: $(cat "$tmp/help")"
    else
        ok "--help lists the flags"
    fi
}

# Both spellings ("--name value" and "--name=value") and the defaults parse;
# train_steps 0 only evaluates.
case_forms() {
    run "$tmp/o" --model softmax --train_steps 0 --seed 5 --threads=1 \
        --log_every 0
    if [[ $rc -ne 0 ]] || ! grep -q "seed 5, 1 threads" "$tmp/o" ||
        ! grep -q "^test accuracy: 0\.[0-9]\{4\}" "$tmp/o"; then
        fail "space-separated flags: exit $rc: $(cat "$tmp/o")"
    else
        ok "--name value form and --train_steps 0 (evaluation only)"
    fi
}

# determinism ARGS...: two runs alike, a third with another seed differs, and
# a fourth with --threads=1 is alike too (graph.h: chunking depends only on
# the shapes, never on the thread count). ARGS should say --threads=2.
determinism() {
    run "$tmp/a" --seed=7 "$@"
    local ra=$rc
    run "$tmp/b" --seed=7 "$@"
    local rb=$rc
    run "$tmp/c" --seed=8 "$@"
    local rcc=$rc
    if [[ $ra -ne 0 || $rb -ne 0 || $rcc -ne 0 ]]; then
        fail "runs exited $ra $rb $rcc: $(tail -3 "$tmp/a" "$tmp/c")"
        return
    fi
    local la lb lc
    for key in "final loss:" "test accuracy:"; do
        la=$(line "$tmp/a" "$key" | sed 's/, evaluated in.*//')
        lb=$(line "$tmp/b" "$key" | sed 's/, evaluated in.*//')
        [[ -n $la && $la == "$lb" ]] &&
            ok "same seed: '$la'" ||
            fail "same seed differs: '$la' vs '$lb'"
    done
    # every progress line's loss too
    diff <(grep '^step' "$tmp/a" | cut -d, -f1,2) \
        <(grep '^step' "$tmp/b" | cut -d, -f1,2) >/dev/null &&
        ok "same seed: identical progress losses" ||
        fail "same seed: progress losses differ"
    run "$tmp/d" --seed=7 "$@" --threads=1
    la=$(line "$tmp/a" "final loss:")
    lb=$(line "$tmp/d" "final loss:")
    [[ $rc -eq 0 && $la == "$lb" ]] &&
        ok "--threads=1 gives the same: '$lb'" ||
        fail "--threads=1 differs from --threads=2: '$lb' vs '$la' (exit $rc)"
    lc=$(line "$tmp/c" "final loss:")
    [[ -n $lc && $la != "$lc" ]] &&
        ok "other seed: '$lc'" ||
        fail "seed 8 gives the same final loss as seed 7: '$lc'"
}

# wd_auc OUT: "AUC HIDDEN LOGLOSS HIDDEN_LOGLOSS" from the test line.
wd_auc() {
    sed -n 's/^test AUC \([0-9.]*\) (hidden model \([0-9.]*\)), log loss \([0-9.]*\) (hidden \([0-9.]*\)).*/\1 \2 \3 \4/p' "$1"
}

# --model=wide_deep with its defaults: test AUC within 0.01 of the hidden
# model's (on the same examples), log loss within 0.02 of its, and the
# --variables_out file holds the embedding tables
case_wide_deep_auc() {
    run "$tmp/o" --model=wide_deep --log_every=1000 \
        --variables_out="$tmp/v.st"
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc: $(tail -5 "$tmp/o")"
        return
    fi
    grep -E '^(training|test AUC)' "$tmp/o"
    local m
    m=$(wd_auc "$tmp/o")
    [[ -n $m ]] || { fail "no test AUC line: $(tail -3 "$tmp/o")"; return; }
    read -r auc hid ll hll <<<"$m"
    awk -v a="$auc" -v h="$hid" 'BEGIN { exit !(h > 0.7 && a >= h - 0.01 && a <= h + 0.005) }' &&
        ok "test AUC $auc within 0.01 of the hidden model's $hid" ||
        fail "test AUC $auc, hidden model $hid: more than 0.01 apart"
    awk -v a="$ll" -v h="$hll" 'BEGIN { exit !(a > 0 && a <= h + 0.02 && a >= h - 0.005) }' &&
        ok "log loss $ll within 0.02 of the hidden model's $hll" ||
        fail "log loss $ll against the hidden model's $hll"
    local key
    for key in linear/linear_model/C8/weights \
        dnn/input_from_feature_columns/C8_embedding/embedding_weights \
        dnn/hiddenlayer_0/kernel; do
        grep -qaF "$key" "$tmp/v.st" &&
            ok "--variables_out holds $key" ||
            fail "--variables_out lacks $key"
    done
}

# wide_deep is deterministic: same seed same loss, AUC and variables (also
# with --threads=1 against 2), another seed another loss
case_wide_deep_determinism() {
    local args=(--model=wide_deep --train_steps=150 --batch_size=256
        --eval_examples=20000 --log_every=50)
    run "$tmp/a" --seed=7 --threads=2 --variables_out="$tmp/a.st" \
        --metrics_out="$tmp/a.jsonl" "${args[@]}"
    local ra=$rc
    run "$tmp/b" --seed=7 --threads=1 --variables_out="$tmp/b.st" "${args[@]}"
    local rb=$rc
    run "$tmp/c" --seed=8 --threads=2 "${args[@]}"
    if [[ $ra -ne 0 || $rb -ne 0 || $rc -ne 0 ]]; then
        fail "runs exited $ra $rb $rc: $(tail -3 "$tmp/a" "$tmp/c")"
        return
    fi
    local la lb lc
    for key in "final loss:" "test AUC"; do
        la=$(line "$tmp/a" "$key" | sed 's/ in [0-9.]* s$//')
        lb=$(line "$tmp/b" "$key" | sed 's/ in [0-9.]* s$//')
        [[ -n $la && $la == "$lb" ]] &&
            ok "same seed, 1 and 2 threads: '$la'" ||
            fail "1 and 2 threads differ: '$la' vs '$lb'"
    done
    cmp -s "$tmp/a.st" "$tmp/b.st" &&
        ok "--variables_out byte-identical for 1 and 2 threads" ||
        fail "--variables_out differs between 1 and 2 threads"
    la=$(line "$tmp/a" "final loss:")
    lc=$(line "$tmp/c" "final loss:")
    [[ -n $lc && $la != "$lc" ]] &&
        ok "other seed: '$lc'" ||
        fail "seed 8 gives the same final loss as seed 7: '$lc'"
    # the metrics summary carries the printed figures
    local m s
    read -r -a m <<<"$(wd_auc "$tmp/a")"
    s=$(grep '"type":"summary"' "$tmp/a.jsonl")
    python3 - "${m[@]}" "$s" <<'PY' && ok "metrics summary: auc, log_loss, hidden_auc, hidden_log_loss as printed" || fail "metrics summary: $s"
import json, sys
a, h, l, hl = map(float, sys.argv[1:5])
s = json.loads(sys.argv[5])
got = [s["auc"], s["hidden_auc"], s["log_loss"], s["hidden_log_loss"]]
sys.exit(0 if all(abs(g - w) <= 5e-5 for g, w in zip(got, [a, h, l, hl]))
         and "test_accuracy" not in s else 1)
PY
}

# --embedding_partitions: the tables in parts ("mod"), each part with its
# own sparse apply; it trains (AUC well above chance) and --explain_only
# lists the parts with their optimizers
case_wide_deep_partitions() {
    run "$tmp/e" --model=wide_deep --embedding_partitions=3 --explain_only
    [[ $rc -eq 0 ]] || { fail "--explain_only exit $rc: $(tail -3 "$tmp/e")"; return; }
    grep -qE '^  linear/linear_model/C8/weights/part_2 .*\(ftrl\)' "$tmp/e" &&
        grep -qE '^  dnn/input_from_feature_columns/C8_embedding/embedding_weights/part_2 .*\(adagrad\)' "$tmp/e" &&
        ok "explain lists part_2 of C8's tables with ftrl and adagrad" ||
        fail "explain: $(grep C8 "$tmp/e" | head -4)"
    # a table smaller than P stays whole
    run "$tmp/e2" --model=wide_deep --ctr_spec='vocab=2,1000;dense=0' \
        --embedding_partitions=3 --explain_only
    grep -qE '^  linear/linear_model/C1/weights +float32 +\[2,1\]' "$tmp/e2" &&
        ok "a 2-row table with --embedding_partitions=3 is one part" ||
        fail "2-row table: $(grep C1 "$tmp/e2" | head -3)"
    run "$tmp/o" --model=wide_deep --embedding_partitions=3 \
        --train_steps=300 --eval_examples=20000 --log_every=0
    [[ $rc -eq 0 ]] || { fail "exit $rc: $(tail -3 "$tmp/o")"; return; }
    read -r auc hid _ <<<"$(wd_auc "$tmp/o")"
    awk -v a="$auc" 'BEGIN { exit !(a > 0.7) }' &&
        ok "in 3 parts, 300 steps: test AUC $auc (hidden $hid)" ||
        fail "in 3 parts: test AUC '$auc'"
}

# --model=wide_deep --trace (local): a Chrome trace of the first
# --trace_steps steps, with the tables' gathers and sparse applies
case_wide_deep_trace() {
    run "$tmp/o" --model=wide_deep "--ctr_spec=vocab=1000,1e5;train=1e5;test=2e4" \
        --batch_size=256 --eval_examples=20000 --train_steps=5 \
        --trace="$tmp/t.json" --trace_steps=2 --log_every=0 --threads=1
    if [[ $rc -ne 0 || ! -s $tmp/t.json ]]; then
        fail "exit $rc, trace $(ls -l "$tmp/t.json" 2>&1): $(tail -3 "$tmp/o")"
        return
    fi
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
ops = {e["args"]["op"] for e in ev}
steps = {e["args"]["step"] for e in ev}
assert {"GatherV2", "SparseApplyOptimizer", "MatMul", "SigmoidCrossEntropyWithLogits"} <= ops, ops
assert steps == {0, 1}, steps
assert all(e["dur"] >= 0 and "ts" in e for e in ev)
print("%d events, %d ops, steps %s" % (len(ev), len(ops), sorted(steps)))
' "$tmp/t.json" && ok "wide_deep trace: gathers and sparse applies of 2 steps" ||
        fail "wide_deep trace JSON check"
}

case_loss_decreases() {
    run "$tmp/o" --model=softmax --train_steps=200 --batch_size=100 \
        --log_every=50 --seed=3
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc: $(tail -5 "$tmp/o")"
        return
    fi
    local first final acc steps
    first=$(sed -n 's/^step 1, loss \([0-9.]*\),.*/\1/p' "$tmp/o")
    final=$(sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$tmp/o")
    acc=$(sed -n 's/^test accuracy: \([0-9.]*\).*/\1/p' "$tmp/o")
    steps=$(grep '^step' "$tmp/o" | cut -d, -f1 | tr '\n' ' ')
    echo "first loss $first, final loss $final, accuracy $acc, lines: $steps"
    awk -v a="$first" -v b="$final" 'BEGIN { exit !(a > 1.5 && b < 0.6 * a) }' &&
        ok "loss fell from $first to $final" ||
        fail "loss did not fall enough: $first -> $final"
    awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' &&
        ok "accuracy $acc > 0.6 after 200 steps" ||
        fail "accuracy $acc after 200 steps"
    # StopAtStepHook: global_step ends exactly at train_steps; progress at
    # step 1 and every 50
    [[ $steps == "step 1 step 50 step 100 step 150 step 200 " ]] &&
        grep -q "(global_step 200)" "$tmp/o" &&
        ok "progress lines at $steps" ||
        fail "progress lines: '$steps'"
}

case_trace() {
    run "$tmp/o" --model=mlp:16 --train_steps=5 --trace="$tmp/t.json" \
        --trace_steps=3 --log_every=0
    if [[ $rc -ne 0 || ! -s $tmp/t.json ]]; then
        fail "exit $rc, trace $(ls -l "$tmp/t.json" 2>&1): $(tail -3 "$tmp/o")"
        return
    fi
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
ops = {e["args"]["op"] for e in ev}
steps = {e["args"]["step"] for e in ev}
assert {"MatMul", "ApplyOptimizer", "SparseSoftmaxCrossEntropyWithLogits"} <= ops, ops
assert len(steps) == 3, steps
assert all(e["dur"] >= 0 and "ts" in e for e in ev)
print("%d events, %d ops, steps %s" % (len(ev), len(ops), sorted(steps)))
' "$tmp/t.json" && ok "trace parses" || fail "trace JSON check"
    run "$tmp/o" --model=softmax --train_steps=1 --trace=/nonexistent/t.json
    [[ $rc -eq 2 ]] &&
        grep -q "^rf-trainer: --trace: /nonexistent/t.json: directory /nonexistent does not exist" "$tmp/o" &&
        ! grep -q "^step" "$tmp/o" &&
        ok "unwritable trace: $(grep '^rf-trainer' "$tmp/o")" ||
        fail "unwritable trace: exit $rc: $(cat "$tmp/o")"
    # the check writes nothing: an existing trace survives a failed run
    echo old >"$tmp/old.json"
    run "$tmp/o" --model=softmax --train_steps=1 --trace="$tmp/old.json" \
        --data_dir="$tmp/missing"
    [[ $rc -eq 1 && $(cat "$tmp/old.json") == old ]] &&
        ok "a failed run leaves the existing trace alone" ||
        fail "exit $rc, trace now '$(head -c 80 "$tmp/old.json")'"
}

# safetensors check of FILE: the header's JSON parses and names global_step.
is_checkpoint() {
    python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
assert "global_step" in h, h.keys()
' "$1"
}

# Outputs through symbolic links, and a writer killed before its rename.
case_outputs() {
    mkdir "$tmp/sub"
    ln -s "$tmp/sub/v-target.st" "$tmp/v-link.st" # dangling: created
    echo old >"$tmp/sub/t-target.json"
    chmod 640 "$tmp/sub/t-target.json"
    ln -s sub/t-target.json "$tmp/t-link.json" # relative, existing
    run "$tmp/o" --model=softmax --train_steps=3 --log_every=0 \
        --variables_out="$tmp/v-link.st" --trace="$tmp/t-link.json"
    if [[ $rc -ne 0 ]]; then
        fail "through links: exit $rc: $(tail -3 "$tmp/o")"
        return
    fi
    [[ -L $tmp/v-link.st && -f $tmp/sub/v-target.st && ! -L $tmp/sub/v-target.st ]] &&
        is_checkpoint "$tmp/sub/v-target.st" &&
        ok "--variables_out through a symbolic link: the target written, the link kept" ||
        fail "--variables_out link: $(ls -l "$tmp" "$tmp/sub")"
    [[ -L $tmp/t-link.json ]] &&
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))["traceEvents"]' \
            "$tmp/sub/t-target.json" &&
        [[ $(stat -c %a "$tmp/sub/t-target.json") == 640 ]] &&
        ok "--trace through a symbolic link: the target replaced (mode 640 kept), the link kept" ||
        fail "--trace link: $(ls -l "$tmp" "$tmp/sub")"
    ! ls -A "$tmp" "$tmp/sub" | grep -q '\.tmp\.' &&
        ok "no temporary file left" || fail "temporaries: $(ls -A "$tmp" "$tmp/sub")"

    # a writer stopped between fsync and rename (the test hook), then
    # SIGKILLed: its temporary stays, the real name is untouched
    echo old >"$tmp/v.st"
    echo v.st >"$tmp/marker"
    RF_TEST_CKPT_STOP_BEFORE_RENAME="$tmp/marker" "$trainer" --model=softmax \
        --train_steps=2 --log_every=0 --variables_out="$tmp/v.st" \
        >"$tmp/killed.out" 2>&1 &
    local pid=$! state="" i
    for ((i = 0; i < $(t 120) * 10; i++)); do
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
        [[ $state == T || -z $state ]] && break
        sleep 0.1
    done
    if [[ $state != T ]]; then
        fail "the writer did not stop before its rename (state '$state'): $(tail -3 "$tmp/killed.out")"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return
    fi
    local stale
    stale=$(ls -A "$tmp" | grep "^\.v\.st\.tmp\.$pid\.[0-9]*$")
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    [[ -n $stale && -s $tmp/$stale && $(cat "$tmp/v.st") == old ]] &&
        ok "killed before its rename: $stale left, v.st untouched" ||
        fail "after the kill: '$stale', $(ls -lA "$tmp")"
    # the next writer of v.st is not disturbed and removes the stale file
    run "$tmp/o" --model=softmax --train_steps=2 --log_every=0 \
        --variables_out="$tmp/v.st"
    [[ $rc -eq 0 ]] && is_checkpoint "$tmp/v.st" && [[ ! -e $tmp/$stale ]] &&
        ! ls -A "$tmp" | grep -q '\.tmp\.' &&
        ok "the next run writes v.st and removes the dead writer's $stale" ||
        fail "next run: exit $rc, $(ls -lA "$tmp"): $(tail -3 "$tmp/o")"
}

# expect_data_error DIR WANT: exit 1 and WANT in the message.
expect_data_error() {
    run "$tmp/o" --model=softmax --train_steps=1 --data_dir="$1"
    if [[ $rc -ne 1 ]] || ! grep -qF -- "$2" "$tmp/o" ||
        ! grep -q "cannot load Fashion-MNIST" "$tmp/o"; then
        fail "--data_dir=$1: exit $rc, want 1 and '$2': $(cat "$tmp/o")"
    else
        ok "--data_dir=$1: $(head -c 300 "$tmp/o" | grep '^rf-trainer:')"
    fi
}

case_data_dir() {
    expect_data_error "$tmp/missing" "$tmp/missing/train-images-idx3-ubyte"
    mkdir -p "$tmp/junk" "$tmp/trunc"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte \
        t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        echo "not an IDX file" | gzip >"$tmp/junk/$f.gz"
        [[ -r $data/$f.gz ]] && head -c 20000 "$data/$f.gz" >"$tmp/trunc/$f.gz"
    done
    expect_data_error "$tmp/junk" "train-images-idx3-ubyte"
    echo plain >"$tmp/plain"
    expect_data_error "$tmp/plain" "$tmp/plain is not a directory"
    # a FIFO in place of a file: refused, never read (which would block)
    mkdir "$tmp/fifo"
    mkfifo "$tmp/fifo/train-images-idx3-ubyte.gz"
    timeout "$(t 60)" "$trainer" --model=softmax --train_steps=1 \
        --data_dir="$tmp/fifo" >"$tmp/o" 2>&1
    rc=$?
    [[ $rc -eq 1 ]] && grep -q "train-images-idx3-ubyte.gz is not a regular file" "$tmp/o" &&
        ok "a FIFO as input: $(grep '^rf-trainer' "$tmp/o")" ||
        fail "a FIFO as input: exit $rc (124: blocked): $(cat "$tmp/o")"
    need_data
    expect_data_error "$tmp/trunc" "train-images-idx3-ubyte"
    # a complete file followed by garbage; a trailer with a wrong CRC32
    mkdir -p "$tmp/garbage" "$tmp/crc"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte \
        t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        cp "$data/$f.gz" "$tmp/garbage/$f.gz"
        cp "$data/$f.gz" "$tmp/crc/$f.gz"
    done
    printf 'junk' >>"$tmp/garbage/train-labels-idx1-ubyte.gz"
    expect_data_error "$tmp/garbage" \
        "train-labels-idx1-ubyte.gz: trailing garbage: 4 bytes after the end of the gzip stream"
    python3 - "$tmp/crc/train-labels-idx1-ubyte.gz" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-8] ^= 0xFF  # first byte of the trailer's CRC32
open(p, "wb").write(b)
PY
    expect_data_error "$tmp/crc" \
        "train-labels-idx1-ubyte.gz: damaged gzip data: incorrect data check"
}

# On a terminal (script(1) gives the run a pseudo-terminal) progress is
# one line redrawn in place ("\r\033[K" before each state, step G/LAST,
# ETA), ended by a newline at the last step; through a pipe the same run
# prints plain "step N, loss" lines and no carriage return.
case_terminal() {
    command -v script >/dev/null ||
        { fail "script (util-linux) is needed for a pseudo-terminal"; return; }
    local args="--model=mlp:16 --train_steps=400 --batch_size=50 --threads=1 --log_every=100"
    timeout "$(t 90)" script -qec "$trainer $args" /dev/null >"$tmp/tty" 2>&1
    rc=$?
    local draws last
    draws=$(grep -o $'\r\e\[Kstep [0-9]*/400, loss [0-9.]*, [0-9]* examples/s, ETA [0-9hms]*' "$tmp/tty" | wc -l)
    last=$(tr '\r' '\n' <"$tmp/tty" | grep -c '^.\[Kstep 400/400, loss')
    if [[ $rc -eq 0 && $draws -ge 1 && $last -eq 1 ]] &&
        ! grep -q '^step [0-9]*, loss' "$tmp/tty" &&
        grep -q 'test accuracy: ' "$tmp/tty"; then
        ok "terminal: $draws redraws of one progress line, the last at 400/400"
    else
        fail "terminal: exit $rc, $draws redraws, $last final lines"
        cat -v "$tmp/tty" | head -20
    fi
    timeout "$(t 90)" "$trainer" $args >"$tmp/pipe" 2>&1
    rc=$?
    local n
    n=$(grep -c '^step [0-9]*, loss [0-9.]*, [0-9]* examples/s$' "$tmp/pipe")
    if [[ $rc -eq 0 && $n -eq 5 ]] && ! grep -q $'\r' "$tmp/pipe"; then
        ok "pipe: 5 plain progress lines (steps 1, 100, 200, 300, 400), no carriage return"
    else
        fail "pipe: exit $rc, $n plain progress lines"
        head -20 "$tmp/pipe"
    fi
}

case "$case_name" in
flags)
    case_flags
    need_data
    case_forms
    ;;
determinism)
    need_data
    determinism --model=mlp:32 --train_steps=200 --batch_size=50 \
        --threads=2 --log_every=50
    ;;
determinism_cnn)
    need_data
    determinism --model=cnn:4,8,16 --train_steps=20 --batch_size=32 \
        --threads=2 --log_every=10 --eval_batch_size=2000
    ;;
loss_decreases)
    need_data
    case_loss_decreases
    ;;
trace)
    need_data
    case_trace
    ;;
outputs)
    need_data
    case_outputs
    ;;
data_dir) case_data_dir ;;
wide_deep_auc) case_wide_deep_auc ;;
wide_deep_determinism) case_wide_deep_determinism ;;
wide_deep_partitions) case_wide_deep_partitions ;;
wide_deep_trace) case_wide_deep_trace ;;
terminal)
    need_data
    case_terminal
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
