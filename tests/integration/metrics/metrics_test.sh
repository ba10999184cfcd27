#!/usr/bin/env bash
# tests/integration/metrics/metrics_test.sh CASE BUILD_DIR METRICS_CHECK: one
# case of the metrics tests (see CMakeLists.txt). Prints what it checks;
# exits 0 on success, 1 on failure, 77 when the dataset (or, for pictures,
# gnuplot/jq) is missing.
set -uo pipefail
case_name=${1:?case}
build=${2:?build directory}
check=${3:?path to metrics_check}
trainer=$build/tools/rf-trainer
launch=$build/tools/rf-launch
example=$build/examples/rf-example-trainer
plot=$build/tools/rf-plot
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
host=127.0.0.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}
need_plot() {
    if ! "$plot" --check; then
        echo "SKIP: rf-plot cannot draw here (tools/rf-setup deps installs jq and gnuplot-nox)"
        exit 77
    fi
}

# checked WHAT ARGS...: metrics_check ARGS..., its output kept in $tmp/check;
# a failure is counted and shown.
checked() {
    local what=$1
    shift
    if "$check" "$@" >"$tmp/check" 2>&1; then
        ok "$what: $(tail -1 "$tmp/check")"
    else
        fail "$what:"
        show "$tmp/check" 20
    fi
}
# val KEY: KEY=VALUE from the last metrics_check file line.
val() { tail -1 "$tmp/check" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# pngs DIR: every picture rf-plot draws is there and a valid PNG, and each
# data file matches the metrics file it came from.
pngs() {
    local dir=$1 p
    shift
    for p in loss_step loss_time accuracy_step accuracy_time throughput; do
        checked "$p.png" png "$dir/$p.png"
    done
    while (($#)); do
        checked "$(basename "$1") matches $(basename "$2")" dat "$1" "$2"
        shift 2
    done
}

# A local run: lines at steps 1, 50, ..., 300 with the summary's counts
# and the test accuracy and final loss the log prints; rf-plot's pictures.
case_local() {
    need_data
    local out=$tmp/m.jsonl
    "$trainer" --model=softmax --train_steps=300 --metrics_out="$out" \
        --metrics_every_steps=50 >"$tmp/log" 2>&1 ||
        { fail "rf-trainer exited $?"; show "$tmp/log"; }
    checked "local metrics" file "$out" local --every 50 --batch 250
    [[ $(val steps) == 300 && $(val lines) == 8 ]] ||
        fail "want 300 steps in 7 step lines + summary: $(cat "$tmp/check")"
    local acc loss
    acc=$(sed -n 's/^test accuracy: \([0-9.]*\) .*/\1/p' "$tmp/log")
    loss=$(sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$tmp/log")
    [[ -n $acc && $(val test_accuracy) == "$acc" ]] &&
        ok "summary test_accuracy $acc as printed" ||
        fail "summary test_accuracy $(val test_accuracy), log '$acc'"
    [[ -n $loss && $(val final_loss) == "$loss" ]] &&
        ok "final loss $loss as printed" ||
        fail "final_loss $(val final_loss), log '$loss'"
    [[ $(val bytes_read) == 0 ]] || fail "a local run read $(val bytes_read) bytes"
    grep -q '"type":"step".*"accuracy":' "$out" || fail "no batch accuracy"
    need_plot
    mkdir "$tmp/p"
    "$plot" --out "$tmp/p" "$out" >"$tmp/plot" 2>&1 ||
        { fail "rf-plot exited $?"; show "$tmp/plot"; }
    pngs "$tmp/p" "$tmp/p/local.dat" "$out"
    rft_finish
}

# 2 ps + 2 workers under rf-launch --plot: every task's file, the workers'
# steps adding up to the job's, the bytes a step of the model moves, the
# chief's test accuracy
# and cluster rates, the pictures and their data files.
case_dist() {
    need_data
    need_plot
    local d=$tmp/run w
    timeout "$(t 100)" "$launch" --ps 2 --workers 2 --plot "$d" -- \
        "$trainer" --train_steps=1000 --partition_min_slice_bytes=0 \
        --metrics_every_steps=20 >"$tmp/log" 2>&1 ||
        { fail "rf-launch exited $?"; show "$tmp/log" 30; }
    local sum=0 last=0
    for w in 0 1; do
        checked "worker$w metrics" file "$d/worker$w.jsonl" "worker:$w" \
            --every 20 --batch 250
        sum=$((sum + $(val steps)))
        (($(val global_step) > last)) && last=$(val global_step)
        # the MLP 784-256-128-10, whole (no partitioner): 235146 float32
        # on the ps tasks. A step READs them all (940584 bytes) and,
        # apply=ps, pushes the 6 gradients with an 8-byte ack each, then
        # FETCH_AND_ADDs global_step (8): 940640 bytes.
        [[ $(val bytes_read) == 940584 && $(val bytes_pushed) == 940640 ]] &&
            ok "worker$w moves 940584 bytes read and 940640 pushed per step" ||
            fail "worker$w per step: read $(val bytes_read) pushed $(val bytes_pushed), want 940584 and 940640"
        if [[ $w == 0 ]]; then
            local acc
            acc=$(sed -n 's/^\[worker0\] test accuracy: \([0-9.]*\) .*/\1/p' "$tmp/log")
            [[ -n $acc && $(val test_accuracy) == "$acc" ]] &&
                ok "the chief's summary has the test accuracy $acc" ||
                fail "chief test_accuracy $(val test_accuracy), log '$acc'"
        else
            [[ $(val test_accuracy) == none ]] ||
                fail "worker1 has a test accuracy $(val test_accuracy)"
        fi
    done
    ((sum >= 1000 && sum <= 1002 && last >= 1000)) &&
        ok "the workers' steps add up to the job's: $sum, global_step $last" ||
        fail "the workers ran $sum steps, last global_step $last (want 1000..1002)"
    for w in 0 1; do
        checked "ps$w metrics (a summary only)" file "$d/ps$w.jsonl" "ps:$w"
        [[ $(val lines) == 1 && $(val steps) == 0 ]] || fail "ps$w: $(cat "$tmp/check")"
    done
    grep -q '^\[worker0\] step [0-9]*, loss .*, cluster: [0-9.e+]* global_step/sec, [0-9]* examples/s$' "$tmp/log" &&
        grep -q '^\[worker0\] cluster: global_step 0 -> [0-9]* in .* s, .* global_step/sec, [0-9]* examples/s$' "$tmp/log" &&
        ok "the chief logs the cluster's global_step/sec and examples/s" ||
        fail "no cluster rates in the chief's log: $(grep '^\[worker0\]' "$tmp/log" | tail -5)"
    grep -q "cluster:" <(grep '^\[worker1\]' "$tmp/log") &&
        fail "worker1 (not the chief) logs cluster rates"
    pngs "$d" "$d/worker_0.dat" "$d/worker0.jsonl" "$d/worker_1.dat" "$d/worker1.jsonl"
    [[ ! -e $d/ps_0.dat ]] || fail "a data file for ps0, which trains nothing"
    rft_finish
}

# The example trainer (MetricsHook on the public API) under rf-launch
# --metrics_dir: 1 ps, 2 workers.
case_example() {
    need_data
    local d=$tmp/ex w
    timeout "$(t 100)" "$launch" --ps 1 --workers 2 --metrics_dir "$d" -- \
        "$example" --train_steps=400 >"$tmp/log" 2>&1 ||
        { fail "rf-launch exited $?"; show "$tmp/log" 30; }
    for w in 0 1; do
        checked "example worker$w" file "$d/worker$w.jsonl" "worker:$w" \
            --every 100 --batch 100
        (($(val bytes_read) > 0)) || fail "worker$w read no bytes"
    done
    checked "example ps0" file "$d/ps0.jsonl" "ps:0"
    rft_finish
}

# expect_usage PROG "MESSAGE" ARGS...: exit status 2, MESSAGE in stderr.
expect_usage() {
    local prog=$1 want=$2
    shift 2
    timeout "$(t 60)" "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    local st=$?
    if [[ $st -ne 2 ]]; then
        fail "$(basename "$prog") $* exited $st, want 2 ($(head -c 300 "$tmp/err"))"
    elif ! grep -qF -- "$want" "$tmp/err"; then
        fail "$(basename "$prog") $*: stderr lacks '$want': $(cat "$tmp/err")"
    else
        ok "$(basename "$prog") $* -> 2: $(head -1 "$tmp/err")"
    fi
}

# Bad paths fail before any work with exit 2 naming the flag; a file that
# is not a metrics file is never clobbered, an old metrics file is
# replaced.
case_bad_paths() {
    local C p1 p2
    free_port p1
    free_port p2
    C="--ps_hosts=$host:$p1 --worker_hosts=$host:$p2 --job_name=worker --task_index=0"
    echo "precious" >"$tmp/notes.txt"
    for prog in "$trainer" "$example"; do
        local extra=()
        [[ $prog == "$example" ]] && extra=($C)
        expect_usage "$prog" "--metrics_out: $tmp is a directory" \
            "${extra[@]}" --metrics_out="$tmp"
        expect_usage "$prog" "--metrics_out: $tmp/none/m.jsonl: directory $tmp/none does not exist" \
            "${extra[@]}" --metrics_out="$tmp/none/m.jsonl"
        expect_usage "$prog" "--metrics_out: $tmp/notes.txt exists and is not a metrics file" \
            "${extra[@]}" --metrics_out="$tmp/notes.txt"
        expect_usage "$prog" "--metrics_out: /dev/null is not a regular file" \
            "${extra[@]}" --metrics_out=/dev/null
    done
    # distributed tasks check it as early
    expect_usage "$trainer" "--metrics_out: $tmp is a directory" $C --metrics_out="$tmp"
    expect_usage "$trainer" "name the same file" --metrics_out="$tmp/x" --trace="$tmp/x"
    expect_usage "$trainer" "--metrics_every_steps" --metrics_every_steps=0
    [[ $(cat "$tmp/notes.txt") == precious ]] && ok "notes.txt untouched" ||
        fail "notes.txt was changed"
    expect_usage "$launch" "--metrics_dir: $tmp/notes.txt is not a directory" \
        --ps 1 --workers 1 --metrics_dir "$tmp/notes.txt" -- "$trainer"
    expect_usage "$launch" "--plot: cannot make directory $tmp/none/p" \
        --ps 1 --workers 1 --plot "$tmp/none/p" -- "$trainer"
    mkdir "$tmp/md" && echo precious >"$tmp/md/worker0.jsonl"
    expect_usage "$launch" "--metrics_dir: $tmp/md/worker0.jsonl exists and is not a metrics file" \
        --ps 1 --workers 1 --metrics_dir "$tmp/md" -- "$trainer"
    [[ $(cat "$tmp/md/worker0.jsonl") == precious ]] ||
        fail "rf-launch changed a task's file that was not a metrics file"
    [[ -z $(ls -A "$tmp/none" 2>/dev/null) ]] || fail "something made $tmp/none"
    if [[ -r $data/train-images-idx3-ubyte.gz ]]; then
        # an existing metrics file (of an earlier run) is replaced
        local m=$tmp/old.jsonl
        "$trainer" --model=softmax --train_steps=20 --metrics_out="$m" >/dev/null 2>&1
        "$trainer" --model=softmax --train_steps=10 --metrics_out="$m" \
            --metrics_every_steps=5 >"$tmp/log" 2>&1 || fail "second run exited $?"
        checked "a metrics file replaced" file "$m" local --every 5 --batch 250
        [[ $(val steps) == 10 ]] || fail "the old lines are still there: $(cat "$m")"
    fi
    rft_finish
}

# A second writer of a file being written is refused (exit 2); the writer
# killed (SIGKILL) mid-run leaves whole lines only: every line parses;
# there is no summary.
case_killed() {
    need_data
    local m=$tmp/k.jsonl pid i
    "$trainer" --model=softmax --train_steps=1000000 --metrics_out="$m" \
        --metrics_every_steps=1 >"$tmp/log" 2>&1 &
    pid=$!
    for ((i = 0; i < $(t 60) * 10; i++)); do
        [[ -s $m && $(wc -l <"$m") -ge 200 ]] && break
        sleep 0.1
    done
    # a second task given the same file while the first writes it
    expect_usage "$trainer" "--metrics_out: $m is being written by another process" \
        --model=softmax --train_steps=10 --metrics_out="$m"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    checked "a killed writer's lines" file "$m" local --every 1 --batch 250 --partial
    (($(val lines) >= 200)) || fail "only $(val lines) lines before the kill"
    grep -q '"type":"summary"' "$m" && fail "a summary from a killed task"
    rft_finish
}

# bench/plot-fabric on rf-bench's text and --json output (sock, shm) and
# on a sample of perftest's format: both pictures valid PNGs, each data
# file the rows of its input.
case_bench_plot() {
    need_plot
    local bench=$build/bench/rf-bench pf=$src/bench/plot-fabric
    local fixture=$src/tests/integration/metrics/perftest-format.txt d=$tmp/bp
    mkdir "$d"
    "$bench" --loopback --provider sock -a -n 50 read_lat >"$tmp/sock.txt" 2>&1 &&
        "$bench" --loopback --provider shm -a -n 50 --json read_lat >"$tmp/shm.json" 2>&1 &&
        "$bench" --loopback --provider sock -a -n 50 read_bw >"$tmp/sockbw.txt" 2>&1 ||
        { fail "rf-bench failed"; show "$tmp/sock.txt"; rft_finish; }
    "$pf" --out "$d" sock="$tmp/sock.txt" shm="$tmp/shm.json" \
        sock="$tmp/sockbw.txt" perftest="$fixture" >"$tmp/plot" 2>&1 ||
        { fail "plot-fabric exited $?"; show "$tmp/plot"; }
    checked "latency.png" png "$d/latency.png"
    checked "bandwidth.png" png "$d/bandwidth.png"
    # rows: bytes and the columns plotted, as the input's table has them
    rows() { awk -v n="$2" '$1 ~ /^[0-9]+$/ && NF >= n' "$1"; }
    dat() { grep -v '^#' "$1" | tr '\t' ' '; }
    [[ $(rows "$tmp/sock.txt" 9 | awk '{ print $1, $3, $5, $6, $8, $9 }') == "$(dat "$d/sock.read_lat.lat.dat")" ]] &&
        ok "sock.read_lat.lat.dat is rf-bench's latency table" ||
        fail "sock.read_lat.lat.dat differs from rf-bench's rows"
    [[ $(rows "$tmp/sockbw.txt" 5 | awk '{ print $1, $3, $4, $5 }') == "$(dat "$d/sock.read_bw.bw.dat")" ]] &&
        ok "sock.read_bw.bw.dat is rf-bench's bandwidth table" ||
        fail "sock.read_bw.bw.dat differs from rf-bench's rows"
    [[ $(grep -c . "$tmp/shm.json") == "$(dat "$d/shm.read_lat.lat.dat" | wc -l)" &&
        $(jq -r -s 'map(.bytes | tostring) | join(" ")' "$tmp/shm.json") == "$(dat "$d/shm.read_lat.lat.dat" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }')" ]] &&
        ok "shm.read_lat.lat.dat has a row per --json line" ||
        fail "shm.read_lat.lat.dat rows differ from the --json lines"
    [[ $(awk '/t_typical/ { on = 1; next } /^-/ { on = 0 } on && $1 ~ /^[0-9]+$/ { print $1, $3, $5, $6, $8, $9 }' "$fixture") == "$(dat "$d/perftest.read_lat_perftest.lat.dat")" ]] &&
        ok "perftest.read_lat_perftest.lat.dat is the perftest table" ||
        fail "perftest.read_lat_perftest.lat.dat differs from the perftest rows"
    echo "no table here" >"$tmp/empty.txt"
    "$pf" --out "$d" x="$tmp/empty.txt" >"$tmp/out" 2>&1
    local st=$?
    [[ $st == 2 ]] && grep -q "x: $tmp/empty.txt has no rf-bench or perftest rows" "$tmp/out" &&
        ok "a file without rows: exit 2 naming it" ||
        fail "a file without rows: exit $st: $(cat "$tmp/out")"
    rft_finish
}

# rf-trace-plot: one step of a 2 ps + 2 worker job's merged trace as a
# PNG, and its data file is that step: worker0's READs (one per variable
# part: 7 for the default MLP over 2 ps), its pushes, the ps tasks' applies,
# every span named as in the trace.
case_trace_plot() {
    local tplot=$build/tools/rf-trace-plot
    "$launch" --host "$host" --ps 2 --workers 2 --timeout "$(t 120)" \
        --trace "$tmp/t.json" -- "$trainer" --train_steps=40 --trace_steps=20 \
        --log_every=0 --threads=1 >"$tmp/launch.out" 2>&1 ||
        { fail "rf-launch --trace: exit $?"; show "$tmp/launch.out" 10; return; }
    "$tplot" --step 5 "$tmp/t.json" "$tmp/step.png" >"$tmp/tp.out" 2>&1 ||
        { fail "rf-trace-plot: exit $?"; show "$tmp/tp.out" 10; return; }
    checked "step.png" png "$tmp/step.png"
    local lanes reads names missing=0 n
    lanes=$(cut -d' ' -f1 "$tmp/step.png.dat" | sort -u | wc -l)
    reads=$(awk '$4 == "read"' "$tmp/step.png.dat" | awk '{ print $5 }' | sort -u | wc -l)
    ((lanes >= 4 && reads >= 7)) && ok "$lanes lanes, $reads distinct READs in the step" ||
        fail "$lanes lanes, $reads distinct READs (want >= 4 and >= 7)"
    for k in push apply compute; do
        n=$(awk -v k="$k" '$4 == k' "$tmp/step.png.dat" | wc -l)
        ((n > 0)) && ok "$n $k spans" || fail "no $k span in the step"
    done
    while read -r name; do
        jq -e --arg n "$name" '[.traceEvents[] | select(.ph == "X") | .name | gsub(" "; "_")] | index($n) != null' \
            "$tmp/t.json" >/dev/null || missing=$((missing + 1))
    done < <(awk '{ print $5 }' "$tmp/step.png.dat" | sort -u)
    ((missing == 0)) && ok "every span drawn is named in the trace" ||
        fail "$missing span names drawn are not in the trace"
    "$tplot" --step 999 "$tmp/t.json" "$tmp/x.png" >"$tmp/tp2.out" 2>&1
    [[ $? -eq 1 ]] && grep -q "traced fewer than 1000 steps" "$tmp/tp2.out" &&
        ok "a step past the trace: $(cat "$tmp/tp2.out")" ||
        { fail "--step 999 on a 20-step trace"; show "$tmp/tp2.out" 5; }
    "$tplot" "$tmp/launch.out" "$tmp/x.png" >"$tmp/tp3.out" 2>&1
    [[ $? -eq 1 ]] && grep -q "is not a Chrome trace" "$tmp/tp3.out" &&
        ok "not a trace: $(cat "$tmp/tp3.out")" ||
        { fail "a non-trace input"; show "$tmp/tp3.out" 5; }
}

# tools/rf-run-main, the README's main job, as a new user runs it (on the
# built tree, --no-build, with fewer steps): it must leave the trained model
# (checkpoints rf-ckpt verifies), every task's metrics file, rf-plot's
# pictures, the merged trace and the picture of one step; the job is
# authenticated (no task warns that its cluster is not, and rf-launch's
# secret is gone from $TMPDIR at the end); an --out directory holding
# something else is refused, untouched.
case_run_main() {
    local d=$tmp/main-run w
    mkdir -p "$tmp/td"
    TMPDIR=$tmp/td timeout "$(t 200)" "$src/tools/rf-run-main" --build-dir "$build" --no-build \
        --out "$d" --train_steps=300 --metrics_every_steps=20 >"$tmp/log" 2>&1 ||
        { fail "rf-run-main exited $?"; show "$tmp/log" 30; return; }
    if grep -q 'unauthenticated' "$tmp/log"; then
        fail "a task of the main job warned: $(grep -m1 unauthenticated "$tmp/log")"
    else
        ok "the main job is authenticated: no task warned"
    fi
    [[ -z $(ls -A "$tmp/td" | grep '^rf-launch\.') ]] &&
        ok "rf-launch's secret is gone at the end" ||
        fail "left in TMPDIR: $(ls -A "$tmp/td")"
    grep -q '^\[worker0\] test accuracy: 0\.[0-9]*' "$tmp/log" &&
        ok "the chief reports $(grep -o 'test accuracy: [0-9.]*' "$tmp/log" | tail -1)" ||
        fail "no test accuracy from the chief"
    # strict (no --allow-unchecked): every line says every CRC32C matches
    "$build/tools/rf-ckpt" verify "$d/model" >"$tmp/verify" 2>&1 &&
        ! grep -qv ': [0-9]* tensors, every CRC32C matches$' "$tmp/verify" &&
        "$build/tools/rf-ckpt" list "$d/model" >"$tmp/list" 2>&1 &&
        grep -q "dense/kernel" "$tmp/list" &&
        ok "the trained model in model/: rf-ckpt verify passes, $(grep -c . "$tmp/list") lines listed" ||
        { fail "model/ is not a valid checkpoint directory"; show "$tmp/verify" 5; }
    for w in 0 1; do
        checked "worker$w metrics" file "$d/worker$w.jsonl" "worker:$w" \
            --every 20 --batch 250
        checked "ps$w metrics" file "$d/ps$w.jsonl" "ps:$w"
    done
    pngs "$d" "$d/worker_0.dat" "$d/worker0.jsonl" "$d/worker_1.dat" "$d/worker1.jsonl"
    jq -e '[.traceEvents[] | select(.ph == "X")] | length > 0' "$d/trace.json" >/dev/null &&
        ok "trace.json: $(jq '[.traceEvents[] | select(.ph == "X")] | length' "$d/trace.json") spans" ||
        fail "trace.json is not a trace with spans"
    checked "one-step.png" png "$d/one-step.png"
    grep -q "rf-run-main: in $d/: the trained model" "$tmp/log" &&
        ok "the last line says where everything is" || fail "no closing line"
    local other=$tmp/other
    mkdir -p "$other" && echo keep >"$other/mine"
    "$src/tools/rf-run-main" --build-dir "$build" --no-build --out "$other" \
        >"$tmp/refused" 2>&1
    [[ $? -eq 2 && $(cat "$other/mine") == keep ]] &&
        grep -q "is not empty and not an earlier rf-run-main's" "$tmp/refused" &&
        ok "an --out directory of someone else's is refused, untouched" ||
        { fail "--out on a foreign directory"; show "$tmp/refused" 5; }
}

# TensorBoard event files of a real job, read back and drawn: a 1 ps x 1
# worker job (summaries are the chief's, in distributed training) with
# --checkpoint_dir, summaries every 50 global steps and checkpoints every
# 100, and an evaluator started beside it (the chief's test accuracy into
# the eval folder). rf-events reads both files (JSON lines parsed by jq);
# rf-plot draws the folder beside the worker's metrics file: valid PNGs,
# the data files' rows the events merged by step, the eval folder as the
# test accuracy's points; a torn event file fails rf-plot (exit 1).
case_events() {
    need_data
    need_plot
    local d=$tmp/ckpt m=$tmp/m pics=$tmp/pics
    local model=(--model=softmax --train_steps=300)
    timeout "$(t 90)" "$trainer" --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 \
        --job_name=evaluator --task_index=0 "${model[@]}" --checkpoint_dir="$d" \
        --max_wait_secs="$(t 60)" >"$tmp/ev" 2>&1 &
    local ev=$!
    timeout "$(t 100)" "$launch" --ps 1 --workers 1 --metrics_dir "$m" -- \
        "$trainer" "${model[@]}" --checkpoint_dir="$d" --save_summaries_steps=50 \
        --save_checkpoint_steps=100 >"$tmp/log" 2>&1 ||
        { fail "rf-launch exited $?"; show "$tmp/log" 30; }
    wait "$ev" || { fail "the evaluator exited $?"; show "$tmp/ev"; }
    local acc
    acc=$(sed -n 's/^\[evaluator0\] test accuracy: \([0-9.]*\) .*/\1/p' "$tmp/ev" | tail -1)
    [[ -n $acc ]] || fail "the evaluator printed no test accuracy"

    # rf-events: the chief's events and the evaluator's
    if "$build/tools/rf-events" --json "$d" >"$tmp/ev.jsonl" 2>"$tmp/err"; then
        ok "rf-events --json $d: $(wc -l <"$tmp/ev.jsonl") events"
    else
        fail "rf-events exited $?"
        show "$tmp/err"
    fi
    # shellcheck disable=SC2016 # jq's variables
    local chief='[.[] | select(.file | test("/eval/") | not)]'
    if jq -e -s "$chief"' as $c
        | ($c[0].kind == "file_version" and $c[0].file_version == "brain.Event:2")
        and any($c[]; .kind == "session_log" and .session_status == "START")
        and ([$c[] | select(.values.loss)] as $l
             | ($l | length) >= 5
             and all($l[]; .values.loss > 0 and .values.accuracy >= 0 and .values.accuracy <= 1)
             and ([range(1; $l | length) as $i | $l[$i].step - $l[$i - 1].step] | all(. >= 50))
             and $l[-1].values.loss < $l[0].values.loss)
        and ([$c[] | select(.values["global_step/sec"])] as $r
             | ($r | length) >= 2
             and all($r[]; .values["global_step/sec"] > 0 and
                 (.values["examples/sec"] / .values["global_step/sec"] - 250 | fabs) < 0.01))' \
        "$tmp/ev.jsonl" >/dev/null; then
        ok "the chief's events: brain.Event:2, SessionLog START, loss and accuracy every >= 50 steps, the loss falling, examples/sec = 250 x global_step/sec"
    else
        fail "the chief's events are not as written"
        show "$tmp/ev.jsonl" 20
    fi
    if jq -e -s --argjson acc "${acc:-null}" '[.[] | select(.file | test("/eval/")) | select(.kind == "summary")]
        | length >= 1 and .[-1].step == 300 and .[-1].values.accuracy == $acc' \
        "$tmp/ev.jsonl" >/dev/null; then
        ok "the eval folder: test accuracy $acc at global_step 300, as the evaluator printed"
    else
        fail "the eval folder's events lack the test accuracy $acc at step 300"
        show "$tmp/ev.jsonl" 5
    fi

    # rf-plot: the folder beside the worker's metrics file
    mkdir "$pics"
    if "$plot" --out "$pics" "$d" "$m/worker0.jsonl" >"$tmp/plot" 2>&1; then
        ok "rf-plot on the event folder and a metrics file"
    else
        fail "rf-plot exited $?"
        show "$tmp/plot"
    fi
    pngs "$pics"
    # ckpt.dat: step, loss, accuracy, global_step/sec, examples/sec of the
    # chief's summaries merged by step, in step order
    jq -r -s "$chief"' | [.[] | select(.kind == "summary")]
        | group_by(.step) | .[] | (reduce .[].values as $v ({}; . + $v)) as $v
        | [.[0].step, ($v.loss // "?"), ($v.accuracy // "?"),
           ($v["global_step/sec"] // "?"), ($v["examples/sec"] // "?")] | @tsv' \
        "$tmp/ev.jsonl" >"$tmp/want.tsv"
    awk -F'\t' '!/^#/ { print $1 "\t" $5 "\t" $6 "\t" $8 "\t" $9 }' "$pics/ckpt.dat" >"$tmp/got.tsv"
    if [[ -s $tmp/want.tsv ]] && cmp -s "$tmp/want.tsv" "$tmp/got.tsv"; then
        ok "ckpt.dat: $(wc -l <"$tmp/got.tsv") rows, the events merged by step"
    else
        fail "ckpt.dat is not the chief's events merged by step"
        diff "$tmp/want.tsv" "$tmp/got.tsv" | head -10
    fi
    awk -F'\t' '!/^#/ { if ($3 < 0 || $3 > 120 || $3 < last) bad = 1; last = $3 } END { exit bad }' \
        "$pics/ckpt.dat" && ok "ckpt.dat: time from 0, never back" ||
        fail "ckpt.dat: time column out of order or range"
    # the evaluator sees the last checkpoint, and maybe earlier ones
    [[ $(awk -F'\t' '!/^#/ { print $1, $6 }' "$pics/ckpt_eval.dat" | tail -1) == "300 $acc" ]] &&
        ok "ckpt_eval.dat: test accuracy $acc at 300, last" ||
        { fail "ckpt_eval.dat:"; show "$pics/ckpt_eval.dat"; }
    grep -q '"ckpt.dat" using 2:5 with lines [^,]* title "ckpt"' "$pics/rf-plot.gp" &&
        grep -q '"ckpt.dat" using 3:9 with lines .* dashtype 2 title "ckpt: cluster"' "$pics/rf-plot.gp" &&
        ok "loss_step.png and throughput.png: the chief's events drawn" ||
        fail "rf-plot.gp does not draw ckpt.dat's loss and cluster rate: $(grep ckpt.dat "$pics/rf-plot.gp")"
    grep -q '"ckpt_eval.dat" using 2:6 with linespoints .* title "ckpt/eval (test accuracy)"' "$pics/rf-plot.gp" &&
        grep -q '"worker_0.dat" using 2:6 with lines .* title "worker:0 (test accuracy' "$pics/rf-plot.gp" &&
        ok "accuracy_step.png: the eval folder's points beside the batch accuracies" ||
        fail "rf-plot.gp lacks the eval points or the worker's line: $(grep 2:6 "$pics/rf-plot.gp")"

    # the event folder alone: the cluster's rate is the only throughput
    mkdir "$tmp/pics3"
    if "$plot" --out "$tmp/pics3" "$d" >"$tmp/plot" 2>&1; then
        pngs "$tmp/pics3"
    else
        fail "rf-plot on the event folder alone exited $?"
        show "$tmp/plot"
    fi

    # a torn event file: rf-plot fails with rf-events' reason
    local chief_file
    chief_file=$(ls "$d"/events.out.tfevents.*)
    truncate -s -3 "$chief_file"
    mkdir "$tmp/pics2"
    "$plot" --out "$tmp/pics2" "$d" >"$tmp/plot" 2>&1
    local rc=$?
    [[ $rc == 1 ]] && grep -q "record .* at offset .*: cut short" "$tmp/plot" &&
        ok "a torn event file: rf-plot exit 1, naming the record" ||
        { fail "a torn event file: rf-plot exit $rc"; show "$tmp/plot"; }
    "$plot" --out "$tmp/pics2" "$m" >"$tmp/plot" 2>&1
    rc=$?
    [[ $rc == 2 ]] && grep -q "without event files" "$tmp/plot" &&
        ok "a folder without event files: rf-plot exit 2" ||
        { fail "a folder without event files: rf-plot exit $rc"; show "$tmp/plot"; }
    rft_finish
}

# rf-plot on event files made by the library's writer (no training): two
# files of one folder whose events share step 7 merge into one row (a
# later file's value of a tag wins), the time counted from the files'
# first event; a file named events.out.tfevents.* given alone is drawn,
# one in an eval folder as that folder's series.
case_events_plot() {
    need_plot
    local mk=$build/tests/unit/tfrecord/rf_test_event_file d=$tmp/syn pics=$tmp/pics
    "$mk" tags "$d" loss global_step/sec examples/sec >/dev/null &&
        "$mk" tags "$d" accuracy loss >/dev/null &&
        "$mk" tags "$d/eval" accuracy >/dev/null ||
        { fail "$mk tags failed"; rft_finish; }
    mkdir "$pics"
    if "$plot" --out "$pics" "$d" >"$tmp/plot" 2>&1; then
        ok "rf-plot on two event files and an eval folder"
    else
        fail "rf-plot exited $?"
        show "$tmp/plot"
    fi
    local row
    row=$(grep -v '^#' "$pics/syn.dat")
    [[ $row == $'7\t7\t7\t?\t1.5\t0.5\t?\t1.5\t2.5\t?\t?' ]] &&
        ok "syn.dat: step 7's events of both files in one row (loss 1.5 of the later file)" ||
        fail "syn.dat: '$row'"
    row=$(grep -v '^#' "$pics/syn_eval.dat")
    [[ $row == $'7\t7\t7\t?\t?\t0.5\t?\t?\t?\t?\t?' ]] &&
        ok "syn_eval.dat: the eval folder's accuracy" || fail "syn_eval.dat: '$row'"
    for p in loss_step accuracy_step throughput; do
        checked "$p.png" png "$pics/$p.png"
    done
    # one file given alone: its folder's name; one of an eval folder
    local f
    f=$(ls "$d"/eval/events.out.tfevents.*)
    mkdir "$tmp/pics2"
    if "$plot" --out "$tmp/pics2" "$f" >"$tmp/plot" 2>&1 &&
        [[ $(grep -v '^#' "$tmp/pics2/syn_eval.dat") == $'7\t7\t7\t?\t?\t0.5\t?\t?\t?\t?\t?' ]]; then
        ok "an eval folder's file alone: syn/eval's series, its time from its own first event"
    else
        fail "rf-plot on $f:"
        show "$tmp/plot"
    fi
    rft_finish
}

case "$case_name" in
local | dist | example | bad_paths | killed | bench_plot | events | events_plot) "case_$case_name" ;;
trace_plot)
    need_data
    need_plot
    case_trace_plot
    rft_finish
    ;;
run_main)
    need_data
    need_plot
    case_run_main
    rft_finish
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
