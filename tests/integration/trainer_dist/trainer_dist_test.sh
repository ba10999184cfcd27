#!/usr/bin/env bash
# tests/integration/trainer_dist/trainer_dist_test.sh CASE RF_TRAINER RF_LAUNCH
# TDIST_CHECK: one case of the distributed rf-trainer integration tests (see
# CMakeLists.txt): real ps and worker processes, started by rf-launch or by
# hand. Prints what it checks; exits 0 on success, 1 on failure, 77 when
# the Fashion-MNIST dataset is missing.
#
# Environment: RF_FABRIC (default sock; the tasks inherit it), RF_TEST_HOST
# (default 127.0.0.1: the address every task listens on; 10.77.0.1 in the
# rxe guest), RF_TEST_TIME_SCALE (multiplies every timeout; TCG needs more),
# RF_FASHION_MNIST_DIR (the dataset). Needs only bash, coreutils (or busybox)
# and TDIST_CHECK (tdist_check.c, json-c), so it runs in the rxe guest too.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
launch=${3:?path to rf-launch}
check=${4:?path to tdist_check}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset TF_CONFIG
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}


# run_local OUT ARGS...: rf-trainer in local mode; sets rc.
run_local() {
    local out=$1 t0
    shift
    t0=$(now)
    timeout "$(t 120)" "$trainer" "$@" >"$out" 2>&1
    rc=$?
    echo "local: exit $rc in $(secs "$t0") s: rf-trainer $*"
}

# run_launch OUT NPS NWORKERS [LAUNCH_ARGS... --] TRAINER_ARGS...: a cluster
# through rf-launch on $host; sets rc. Launch flags (--trace FILE) come
# before a "--" if there is one.
run_launch() {
    local out=$1 nps=$2 nw=$3 t0
    shift 3
    local largs=()
    if [[ " $* " == *" -- "* ]]; then
        while [[ $1 != -- ]]; do
            largs+=("$1")
            shift
        done
        shift
    fi
    t0=$(now)
    "$launch" --host "$host" --ps "$nps" --workers "$nw" \
        --timeout "$(t "${launch_secs:-150}")" "${largs[@]}" -- "$trainer" "$@" >"$out" 2>&1
    rc=$?
    echo "rf-launch --ps $nps --workers $nw ${largs[*]}: exit $rc in $(secs "$t0") s: rf-trainer $*"
}

# tline OUT TASK PREFIX: TASK's first output line starting with PREFIX,
# without the "[TASK] " prefix rf-launch adds.
tline() {
    sed -n "s/^\[$2\] \($3\)/\1/p" "$1" | head -n 1
}
# first_line OUT PREFIX: the first line of a single-process output (a
# hand-started task's own "[name] " dropped).
first_line() { sed 's/^\[[a-z]*[0-9]*\] //' "$1" | grep -m1 "^$2" || true; }
# progress losses "step N, loss L" (without examples/s) of a task or a file
losses() {
    if [[ -n $2 ]]; then
        sed -n "s/^\[$2\] \(step [0-9]*, loss [^,]*\),.*/\1/p" "$1"
    else
        sed -n 's/^\(step [0-9]*, loss [^,]*\),.*/\1/p' "$1"
    fi
}

# st_value FILE KEY: a line KEY=VALUE printed by "tdist_check st"
st_value() { sed -n "s/^$2=//p" "$1"; }

# The oracle model: small enough for TCG, with hidden layers so that the
# placement spreads over several ps tasks (7 variables).
oracle_flags=(--model=mlp:32,16 --optimizer=adam --batch_size=50
    --train_steps=60 --threads=1 --seed=3 --log_every=20)

# oracle APPLY_ARGS...: one worker reproduces local training bitwise, with 1
# ps and with 2 ps (placement spread), for the given --apply flags.
oracle() {
    run_local "$tmp/local.out" "${oracle_flags[@]}" \
        --variables_out="$tmp/local.st"
    if [[ $rc -ne 0 || ! -s $tmp/local.st ]]; then
        fail "local run: exit $rc, variables $(ls -l "$tmp/local.st" 2>&1)"
        show "$tmp/local.out"
        return
    fi
    "$check" st "$tmp/local.st" >"$tmp/local.keys"
    local st=$? gs
    gs=$(st_value "$tmp/local.keys" global_step)
    # the file must hold trained variables with their Adam slots, else
    # comparing two of them proves little
    if [[ $st -eq 0 && $gs == 60 ]] &&
        grep -q '^dense/kernel/Adam_1 F32 \[784,32\]$' "$tmp/local.keys" &&
        grep -q '^logits/bias F32 \[10\]$' "$tmp/local.keys" &&
        grep -q '^beta1_power ' "$tmp/local.keys"; then
        ok "local variables: $(st_value "$tmp/local.keys" tensors) tensors, global_step $gs"
    else
        fail "local variables file: exit $st, global_step '$gs'"
        sed 's/^/    | /' "$tmp/local.keys"
    fi
    local want_loss want_steps
    want_loss=$(first_line "$tmp/local.out" "final loss:")
    want_steps=$(losses "$tmp/local.out" "")
    [[ -n $want_loss && -n $want_steps ]] ||
        fail "local run printed no 'final loss:' or progress lines"
    # 1 ps, 2 ps, and 2 ps with dense/kernel (100352 bytes) in two parts
    # of 392 rows (min_max_variable_partitioner, min_slice_size 32768):
    # partitioning moves variables, not numbers, and --variables_out holds
    # the whole tensors under their own names
    local nps spec
    for spec in 1 2 2:32768; do
        nps=${spec%%:*}
        local part=()
        [[ $spec != *:* ]] || part=(--partition_min_slice_bytes="${spec#*:}")
        local o=$tmp/d${spec/:/p}.out v=$tmp/d${spec/:/p}.st
        run_launch "$o" "$nps" 1 "${oracle_flags[@]}" "$@" "${part[@]}" \
            --explain --variables_out="$v"
        if [[ $rc -ne 0 ]]; then
            fail "$nps ps + 1 worker $* ${part[*]}: exit $rc"
            show "$o" 25
            continue
        fi
        if [[ -n ${part[*]} ]]; then
            grep -q '^\[worker0\]   dense/kernel/part_1 .*\[392,32\]' "$o" &&
                ok "${part[*]}: dense/kernel in two parts of 392 rows" ||
                fail "${part[*]}: no dense/kernel/part_1 [392,32] in --explain"
        fi
        if cmp "$tmp/local.st" "$v"; then
            ok "$nps ps $*: variables bitwise equal to local ($(wc -c <"$v") bytes)"
        else
            fail "$nps ps $*: variables differ from the local run"
            "$check" st "$v" | diff "$tmp/local.keys" - | head -n 10
        fi
        local got
        got=$(tline "$o" worker0 "final loss:.*")
        [[ -n $want_loss && $got == "$want_loss" ]] &&
            ok "$nps ps $*: '$got'" ||
            fail "$nps ps $*: worker0 '$got', local '$want_loss'"
        if [[ $(losses "$o" worker0) == "$want_steps" ]]; then
            ok "$nps ps $*: same progress losses ($(echo "$want_steps" | wc -l) lines)"
        else
            fail "$nps ps $*: progress losses differ"
            echo "$want_steps" >"$tmp/want_steps"
            losses "$o" worker0 | diff "$tmp/want_steps" - | head -n 6
        fi
        got=$(tline "$o" worker0 "global_step at the end: .*")
        [[ $got == "global_step at the end: 60" ]] &&
            ok "$nps ps $*: '$got'" ||
            fail "$nps ps $*: '$got', want global_step 60"
        local k served=0 shut=0
        for ((k = 0; k < nps; k++)); do
            [[ -n $(tline "$o" "ps$k" "ps task $k: serving on .*") ]] &&
                served=$((served + 1))
            [[ -n $(tline "$o" "ps$k" "ps task $k: shut down by the chief") ]] &&
                shut=$((shut + 1))
        done
        [[ $served == "$nps" && $shut == "$nps" ]] &&
            ok "$nps ps $*: every ps served and was shut down by the chief" ||
            fail "$nps ps $*: $served of $nps ps served, $shut shut down by the chief"
    done
}

# "training: M steps of ..." of TASK in OUT -> M; "nothing to do" -> 0;
# nothing -> empty.
steps_of() {
    local l
    l=$(tline "$1" "$2" "training: \(nothing to do\|[0-9]* steps of\).*")
    case $l in
    "training: nothing to do"*) echo 0 ;;
    "training: "[0-9]*" steps of"*) l=${l#training: } && echo "${l%% *}" ;;
    esac
}

# wd_auc OUT: "AUC HIDDEN" from the chief's test line.
wd_auc() {
    sed -n 's/^.*test AUC \([0-9.]*\) (hidden model \([0-9.]*\)).*/\1 \2/p' "$1"
}

# --model=wide_deep, one worker, 2 ps (the tables in 2 parts, embedding
# shards on the ps) against local training with --embedding_partitions=2:
# the final loss, the test AUC and --variables_out byte-identical, for
# apply=ps and apply=worker (the lookups' way auto), and apply=ps with
# --embedding_lookup=rows and =gather (through rf-launch), each table's
# way printed as forced
case_wide_deep_oracle() {
    local args=(--model=wide_deep --train_steps=120 --batch_size=256
        --eval_examples=20000 --log_every=40 --threads=1)
    run_local "$tmp/l" "${args[@]}" --embedding_partitions=2 \
        --variables_out="$tmp/l.st"
    [[ $rc -eq 0 ]] || { fail "local: exit $rc"; show "$tmp/l"; return; }
    local spec apply way ll dl la da
    for spec in ps worker ps:rows ps:gather; do
        apply=${spec%%:*}
        way=${spec#"$apply"}
        way=${way#:}
        run_launch "$tmp/d" 2 1 "${args[@]}" --apply=$apply \
            ${way:+--embedding_lookup=$way} --variables_out="$tmp/d.st"
        [[ $rc -eq 0 ]] || { fail "apply=$apply $way: exit $rc"; show "$tmp/d"; continue; }
        apply="$apply${way:+, embedding_lookup=$way}"
        if [[ -n $way ]]; then
            local n took="[1-9][0-9]* lookups by row READs ([1-9][0-9]* rows), 0 by the gather (0 rows)"
            [[ $way == gather ]] &&
                took="0 lookups by row READs (0 rows), [1-9][0-9]* by the gather ([1-9][0-9]* rows)"
            n=$(grep -c "embedding lookups of table '.*/part_[01]' (ps [01]): .*, as embedding_lookup=$way says; $took\$" "$tmp/d")
            ((n >= 2)) && [[ $n -eq $(grep -c "embedding lookups of table" "$tmp/d") ]] &&
                ok "$apply: $n table parts say they took that way: $(grep -m1 "embedding lookups of" "$tmp/d" | sed 's/^.*embedding lookups of //')" ||
                fail "$apply: the tables do not say they took that way: $(grep -m2 "embedding lookups of" "$tmp/d")"
        fi
        ll=$(first_line "$tmp/l" "final loss:")
        dl=$(first_line "$tmp/d" "final loss:")
        la=$(wd_auc "$tmp/l")
        da=$(wd_auc "$tmp/d")
        [[ -n $ll && $ll == "$dl" && -n $la && $la == "$da" ]] &&
            ok "apply=$apply: '$dl', AUC $da as local" ||
            fail "apply=$apply: '$dl' AUC '$da' vs local '$ll' AUC '$la'"
        cmp -s "$tmp/l.st" "$tmp/d.st" &&
            ok "apply=$apply: --variables_out byte-identical to local" ||
            fail "apply=$apply: --variables_out differs from local"
    done
}

# --model=wide_deep, 2 ps x 2 workers with its defaults (each worker on its
# shard of the training split): the chief's test AUC within 0.01 of the
# hidden model's, for apply APPLY (one ctest each, so each has its own
# budget: 15-20 s alone, up to 220 s at load 9 beside a CI run)
case_wide_deep_2x2() {
    local apply auc hid launch_secs=400
    for apply in "$@"; do
        run_launch "$tmp/o" 2 2 --model=wide_deep --log_every=1000 \
            --apply=$apply
        [[ $rc -eq 0 ]] || { fail "apply=$apply: exit $rc"; show "$tmp/o"; continue; }
        read -r auc hid <<<"$(wd_auc "$tmp/o")"
        awk -v a="$auc" -v h="$hid" 'BEGIN { exit !(h > 0.7 && a >= h - 0.01 && a <= h + 0.005) }' &&
            ok "apply=$apply, 2 ps x 2 workers: test AUC $auc within 0.01 of the hidden $hid" ||
            fail "apply=$apply: test AUC '$auc' against the hidden '$hid'"
    done
}

# --model=wide_deep, 2 ps x 2 workers with --sync_replicas (the tables'
# sparse gradients averaged per row on the ps, TF's
# SparseConditionalAccumulator): the chief's test AUC within 0.01 of the
# hidden model's. 1500 global steps of 2 x 256 examples: the examples the
# async cases' 3000 steps see (about 116 s at load 10, 0.7660 against
# 0.7725; each sync step waits for both workers and the ps's applies)
case_wide_deep_sync() {
    local auc hid launch_secs=300
    run_launch "$tmp/o" 2 2 --model=wide_deep --log_every=1000 --sync_replicas \
        --train_steps=1500
    [[ $rc -eq 0 ]] || { fail "sync: exit $rc"; show "$tmp/o"; return; }
    read -r auc hid <<<"$(wd_auc "$tmp/o")"
    awk -v a="$auc" -v h="$hid" 'BEGIN { exit !(h > 0.7 && a >= h - 0.01 && a <= h + 0.005) }' &&
        ok "--sync_replicas, 2 ps x 2 workers: test AUC $auc within 0.01 of the hidden $hid" ||
        fail "--sync_replicas: test AUC '$auc' against the hidden '$hid'"
}

# --model=wide_deep with a 10^6 x 32 table (128 MB) on 2 ps x 1 worker:
# the chief's session initialises it on the ps in chunks (the trainer
# leaves it uninitialised) and never holds it before the final pull, so its
# peak RSS then stays below the table's bytes (not asserted on shm, where
# the rows the chief writes into the ps's segments are mapped in its
# address space and count in its RSS); --variables_out byte-identical to
# local training with the same partitions; the same while it saves
# checkpoints and in a second job that restores one (the table streamed
# both ways)
case_wide_deep_table_memory() {
    local args=(--model=wide_deep "--ctr_spec=vocab=1000,1e6;train=1e5;test=2e4"
        --hash_buckets=1000000 --embedding_dim=32 --train_steps=60
        --batch_size=256 --eval_examples=20000 --log_every=30 --threads=1)
    local table=$((1000000 * 32 * 4)) peak
    run_local "$tmp/l" "${args[@]}" --embedding_partitions=2 \
        --variables_out="$tmp/l.st"
    [[ $rc -eq 0 ]] || { fail "local: exit $rc"; show "$tmp/l"; return; }
    local ck=(--checkpoint_dir="$tmp/ckpt" --save_checkpoint_steps=30)
    run_launch "$tmp/d" 2 1 "${args[@]}" "${ck[@]}" --variables_out="$tmp/d.st"
    [[ $rc -eq 0 ]] || { fail "2 ps x 1 worker: exit $rc"; show "$tmp/d"; return; }
    wd_peak_below "$tmp/d" "$table" "saving checkpoints"
    cmp -s "$tmp/l.st" "$tmp/d.st" &&
        ok "--variables_out byte-identical to local training" ||
        fail "--variables_out differs from local training"
    # restoring the newest checkpoint (global_step 60) streams the table too
    run_launch "$tmp/r" 2 1 "${args[@]/--train_steps=60/--train_steps=90}" "${ck[@]}"
    [[ $rc -eq 0 ]] || { fail "the restoring job: exit $rc"; show "$tmp/r"; return; }
    [[ $(tline "$tmp/r" worker0 "[^ ]*: session ready: .*") == *"model.ckpt-60.safetensors, global_step 60" ]] &&
        ok "the second job restored model.ckpt-60" ||
        fail "the second job did not restore model.ckpt-60"
    wd_peak_below "$tmp/r" "$table" "restoring"
}

# wd_peak_below OUT TABLE_BYTES WHAT: the chief's peak RSS before the final
# pull in OUT is below TABLE_BYTES (not compared on shm)
wd_peak_below() {
    local peak
    peak=$(tline "$1" worker0 "chief: peak RSS before the final pull: .*" |
        sed -n 's/.*pull: \([0-9.]*\) MiB$/\1/p')
    if [[ $RF_FABRIC == shm ]]; then
        ok "$3, shm: the chief's peak before the final pull ${peak:-?} MiB (not compared)"
    elif [[ -n $peak ]] && awk -v p="$peak" -v t="$2" 'BEGIN { exit !(p * 1048576 < t) }'; then
        ok "$3: the chief's peak RSS before the final pull, $peak MiB, is below the table's $2 bytes"
    else
        fail "$3: the chief's peak RSS before the final pull '${peak}' MiB is not below the table's $2 bytes"
        show "$1"
    fi
}

# --model=wide_deep, 2 ps x 1 worker, --embedding_lookup=gather under
# rf-launch --restart_on_failure with --checkpoint_dir: ps1 (holding table
# parts) is killed with SIGKILL once the chief is past a checkpoint and
# trains on; the chief's session is lost mid-lookup or mid-push, recovered
# (a new session: the reply block registered again, the ways chosen again)
# from the checkpoint, and the job reaches --train_steps: rf-launch exits 0
# having restarted ps1 once; every table part still says it took the
# gather only. (recovery with row READs: the fault.* cases' dense models
# and this case's auto runs elsewhere take that path)
case_wide_deep_gather_recovery() {
    local args=(--model=wide_deep "--ctr_spec=vocab=1000,1e5;train=1e5;test=2e4"
        --embedding_dim=16 --batch_size=256 --eval_examples=20000
        --log_every=10 --threads=1 --train_steps=200 --embedding_lookup=gather
        --checkpoint_dir="$tmp/ckpt" --save_checkpoint_steps=40)
    local out=$tmp/o t0 lpid c victim= i
    t0=$(now)
    "$launch" --host "$host" --ps 2 --workers 1 --timeout "$(t 300)" \
        --restart_on_failure -- "$trainer" "${args[@]}" >"$out" 2>&1 &
    lpid=$!
    # until the first checkpoint is written and training goes on
    for ((i = 0; i < 6000; i++)); do
        grep -q "model.ckpt-40" "$out" && grep -Eq '^\[worker0\] step (5|6|7|8|9)[0-9],' "$out" && break
        kill -0 "$lpid" 2>/dev/null || break
        sleep 0.05
    done
    for c in $(cat /proc/"$lpid"/task/*/children 2>/dev/null); do
        tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | grep -q -- "--job_name=ps --task_index=1\( \|$\)" &&
            victim=$c
    done
    if [[ -z $victim ]]; then
        fail "no ps1 to kill (the job: $(tail -n 3 "$out"))"
        kill "$lpid" 2>/dev/null
        wait "$lpid"
        return
    fi
    kill -9 "$victim"
    wait "$lpid"
    rc=$?
    echo "rf-launch --restart_on_failure: exit $rc in $(secs "$t0") s (ps1 killed)"
    local lost rec end
    lost=$(tline "$out" worker0 ".*session lost.*")
    rec=$(tline "$out" worker0 ".*recovered in .*")
    end=$(tline "$out" worker0 "global_step at the end: .*")
    if [[ $rc -eq 0 && -n $lost && -n $rec && $end == "global_step at the end: 200" ]] &&
        grep -q '^rf-launch: restarts: ps0 0, ps1 1, worker0 0' "$out"; then
        ok "ps1 killed: '$lost' -> '$rec'; $end"
    else
        fail "ps1 killed: exit $rc, lost '$lost', recovered '$rec', '$end'"
        show "$out" 30
    fi
    local n all
    n=$(grep -c "embedding lookups of table '.*' (ps [01]): the ps-side gather, as embedding_lookup=gather says; 0 lookups by row READs (0 rows), [1-9][0-9]* by the gather" "$out")
    all=$(grep -c "embedding lookups of table" "$out")
    ((n > 0 && n == all)) &&
        ok "after the recovery $n table parts took the gather only" ||
        fail "$n of $all table parts say they took the gather only"
}

# --model=wide_deep with --checkpoint_dir: 2 ps x 1 worker save every 25
# steps (the tables whole under the whole variables' names, no parts); a
# second job on 3 ps restores the newest checkpoint (the tables into 3
# parts) and its global_step goes on from 60 to 120; rf-ckpt verify passes
# on every file of the directory
case_wide_deep_checkpoint() {
    local d=$tmp/ckpt args=(--model=wide_deep
        "--ctr_spec=vocab=1000,1e5;train=1e5;test=2e4" --embedding_dim=16
        --batch_size=256 --eval_examples=20000 --log_every=30 --threads=1
        --checkpoint_dir="$tmp/ckpt" --save_checkpoint_steps=25)
    local emb=dnn/input_from_feature_columns/C2_embedding/embedding_weights
    run_launch "$tmp/o1" 2 1 "${args[@]}" --train_steps=60
    local f=$d/model.ckpt-60.safetensors
    if [[ $rc -ne 0 || ! -s $f ]]; then
        fail "the first job: exit $rc, $(ls "$d" 2>&1 | tr '\n' ' ')"
        show "$tmp/o1" 20
        return
    fi
    "$check" st "$f" >"$tmp/keys"
    if grep -q "^$emb F32 \[100000,16\]\$" "$tmp/keys" &&
        grep -q "^$emb/Adagrad F32 \[100000,16\]\$" "$tmp/keys" &&
        ! grep -q 'part_' "$tmp/keys"; then
        ok "model.ckpt-60 holds the table and its slot whole, no part names"
    else
        fail "model.ckpt-60's tensors:"
        sed 's/^/    | /' "$tmp/keys"
    fi
    run_launch "$tmp/o2" 3 1 "${args[@]}" --train_steps=120
    local got
    got=$(tline "$tmp/o2" worker0 "[^ ]*: session ready: .*")
    if [[ $rc -eq 0 && $got == *"restored $f"*"global_step 60"* ]] &&
        [[ $(tline "$tmp/o2" worker0 "cluster: global_step .*") == "cluster: global_step 60 -> 120 "* ]] &&
        [[ $(tline "$tmp/o2" worker0 "global_step at the end: .*") == "global_step at the end: 120" ]]; then
        ok "3 ps: '$got', then from global_step 60 to 120"
    else
        fail "3 ps: exit $rc, '$got'"
        show "$tmp/o2" 20
    fi
    local ckpt
    ckpt=$(dirname "$trainer")/rf-ckpt
    if [[ ! -x $ckpt ]]; then
        ok "no rf-ckpt next to rf-trainer: verify not run"
    elif "$ckpt" verify "$d" >"$tmp/verify" 2>&1; then
        ok "rf-ckpt verify $d: $(wc -l <"$tmp/verify") lines, exit 0"
    else
        fail "rf-ckpt verify $d failed:"
        sed 's/^/    | /' "$tmp/verify"
    fi
}

# The small wide_deep of the explain, trace and evaluator cases: 2
# features (vocabularies 1000 and 10^5) and 4 dense ones, 4 tables (wide
# and deep per feature) of 1000 and 100000 rows, each in one part per ps
# task; a job of a few tens of steps takes about a second.
wd_small=(--model=wide_deep "--ctr_spec=vocab=1000,1e5;train=1e5;test=2e4"
    --batch_size=256 --eval_examples=20000 --threads=1 --log_every=0)
wd_tables=(linear/linear_model/C1/weights linear/linear_model/C2/weights
    dnn/input_from_feature_columns/C1_embedding/embedding_weights
    dnn/input_from_feature_columns/C2_embedding/embedding_weights)

# wd_parts TEXT PFX: "NAME PS ROWS" of every table part in the placement
# that starts at the line "PFXplacement (" of TEXT (an --explain text)
wd_parts() {
    sed -n "/^$2placement (/,/^\(\[worker0\] \)\{0,1\}  ps task 0 holds/p" "$1" |
        sed -n 's/^\(\[worker0\] \)\{0,1\}  \([^ ]*\/part_[0-9]*\) .* \/job:ps\/task:\([0-9]*\)  record .*; embedding table: \([0-9]*\) rows .*/\2 \3 \4/p'
}

# --explain_only with --model=wide_deep in a cluster: what it says of
# worker 0 from the flags alone is what a live worker 0 says
# (--explain=json, 2 ps x 1 worker: tables, placement, step); its text for
# 2 ps x 2 workers names each table part's ps task, and that ps task lists
# the part with its rows; the steps read the tables' rows (READ_ROWS), and
# each worker trains on its half of the click-through examples.
case_wide_deep_explain() {
    local launch_secs=60
    run_launch "$tmp/o" 2 1 "${wd_small[@]}" --explain=json --train_steps=1
    sed -n 's/^\[worker0\] \({"explain":.*\)/\1/p' "$tmp/o" | head -n 1 \
        >"$tmp/live.json"
    local ps0 ps1
    ps0=$(tline "$tmp/o" ps0 "ps task 0: serving on .*" | sed -n 's/^ps task 0: serving on \([^ ]*\) .*/\1/p')
    ps1=$(tline "$tmp/o" ps1 "ps task 1: serving on .*" | sed -n 's/^ps task 1: serving on \([^ ]*\) .*/\1/p')
    if [[ $rc -ne 0 || ! -s $tmp/live.json || -z $ps0 || -z $ps1 ]]; then
        fail "live --explain=json: exit $rc"
        show "$tmp/o" 20
        return
    fi
    ok "a live wide_deep worker 0 explained itself (--explain=json)"
    timeout "$(t 60)" "$trainer" --explain_only --explain=json \
        --ps_hosts="$ps0,$ps1" --worker_hosts=127.0.0.1:1 "${wd_small[@]}" \
        --train_steps=1 >"$tmp/off.json" 2>"$tmp/off.err"
    rc=$?
    [[ $rc -eq 0 && $(wc -l <"$tmp/off.json") == 1 ]] &&
        ok "--explain_only --explain=json: exit 0, one JSON line" ||
        { fail "--explain_only --explain=json: exit $rc"; show "$tmp/off.err" 10; }
    "$check" same_explain "$tmp/live.json" "$tmp/off.json" &&
        ok "the offline worker 0 says what the live one says" ||
        fail "offline and live wide_deep explanations differ"

    timeout "$(t 60)" "$trainer" --explain_only \
        --ps_hosts=127.0.0.1:1,127.0.0.1:2 \
        --worker_hosts=127.0.0.1:3,127.0.0.1:4 "${wd_small[@]}" \
        >"$tmp/text" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || { fail "--explain_only (text): exit $rc"; show "$tmp/text"; return; }
    local name task rows n=0 bad= on0=0 on1=0
    while read -r name task rows; do
        n=$((n + 1))
        ((task == 0)) && on0=$((on0 + 1)) || on1=$((on1 + 1))
        sed -n "/^explain: \[ps $task\] listens on/,/^  in all/p" "$tmp/text" |
            grep -qF "  $name record " &&
            sed -n "/^explain: \[ps $task\] listens on/,/^  in all/p" "$tmp/text" |
            grep -F "  $name record " | grep -q "; embedding table: $rows rows of " ||
            bad+=" $name(ps $task)"
        grep -q "^ *[0-9]*\. READ_ROWS  *$name ps $task " "$tmp/text" ||
            bad+=" READ_ROWS:$name"
    done < <(wd_parts "$tmp/text" "explain: \[worker 0\] ")
    if ((n == 2 * ${#wd_tables[@]} && on0 > 0 && on1 > 0)) && [[ -z $bad ]]; then
        ok "--explain_only (text): $n table parts ($on0 on ps 0, $on1 on ps 1), each listed with its rows by the ps task worker 0 places it on, and read by READ_ROWS"
    else
        fail "--explain_only (text): $n table parts ($on0 on ps 0, $on1 on ps 1), wrong:$bad"
        show "$tmp/text" 60
    fi
    local t2
    bad=
    for t2 in "${wd_tables[@]}"; do
        grep -q "^explain: \[worker 0\] placement (.*embedding tables: fixed_size_partitioner(2)" "$tmp/text" &&
            [[ $(wd_parts "$tmp/text" "explain: \[worker 0\] " | grep -c "^$t2/part_[01] ") == 2 ]] ||
            bad+=" $t2"
    done
    [[ -z $bad ]] && ok "every table in 2 parts (fixed_size_partitioner(2))" ||
        fail "tables not in 2 parts:$bad"
    if grep -q '^explain: \[worker 1\] data: 50000 of the 100000 synthetic click-through training examples' "$tmp/text" &&
        grep -q '^explain: \[ps 1\] embedding table shards (wide_deep): each worker READs only the rows' "$tmp/text" &&
        grep -q '^explain: \[worker 0\] as the chief' "$tmp/text" &&
        grep -q 'evaluates the test AUC and log loss' "$tmp/text"; then
        ok "--explain_only (text): each worker's half of the data, the ps tasks' row reads, the chief's AUC"
    else
        fail "--explain_only (text) lacks the data, table or chief lines"
        show "$tmp/text" 40
    fi
}

# --trace with --model=wide_deep in a cluster (2 ps x 1 worker, 6 steps, 3
# traced): the merged trace has every task; each traced step of the worker
# READs the dense variables (their values' bytes), reads rows once per
# lookup (4: wide and deep of 2 features), and has a span for every
# operation --explain lists (pushes of every table part, global_step's
# FETCH_AND_ADD); each ps task traced the applies of every variable
# --explain places on it; and the live --explain (text) places the tables.
case_wide_deep_trace() {
    local launch_secs=60
    # dense/weights [4,1], bias_weights [1], hiddenlayer_0 [2*8+4,64] and
    # [64], hiddenlayer_1 [64,32] and [32], logits [32,1] and [1]
    local read_bytes=$(((4 + 1 + 20 * 64 + 64 + 64 * 32 + 32 + 32 + 1) * 4))
    run_launch "$tmp/o" 2 1 --trace "$tmp/merged.json" -- "${wd_small[@]}" \
        --train_steps=6 --trace_steps=3 --explain
    if [[ $rc -ne 0 || ! -s $tmp/merged.json ]]; then
        fail "exit $rc, merged trace $(ls -l "$tmp/merged.json" 2>&1)"
        show "$tmp/o" 20
        return
    fi
    timeout "$(t 60)" "$trainer" --explain_only --explain=json \
        --ps_hosts=127.0.0.1:1,127.0.0.1:2 --worker_hosts=127.0.0.1:3 \
        "${wd_small[@]}" --train_steps=6 >"$tmp/ex.json" 2>"$tmp/ex.err" ||
        { fail "--explain_only --explain=json: exit $?"; show "$tmp/ex.err"; }
    "$check" trace "$tmp/merged.json" num_ps=2 tasks=ps0,ps1,worker0 \
        ops=READ,READ_ROWS,WRITE_WITH_IMM,FETCH_AND_ADD \
        read_bytes=$read_bytes lookups=4 explain="$tmp/ex.json" &&
        ok "merged trace: every task, the worker's reads of rows and variables, its pushes, the ps tasks' applies" ||
        fail "merged wide_deep trace check"
    local n
    n=$(wd_parts "$tmp/o" "\[worker0\] explain: " | wc -l)
    ((n == 2 * ${#wd_tables[@]})) &&
        ok "the live --explain places $n table parts on ps tasks" ||
        { fail "the live --explain placed $n table parts"; show "$tmp/o" 40; }
}

# The evaluator task on wide_deep checkpoints. A 2 ps x 1 worker job saves
# model.ckpt-40 (every 20 steps); an evaluator started by hand (outside the
# training cluster; given its 2 ps tasks, so its tables are in the
# workers' parts) evaluates it, then the newer ones of a second job
# (restoring model.ckpt-40, on to 80), until global_step 80. Every
# checkpoint it names is followed by its test AUC and log loss; each AUC is
# above 0.6 and at most the hidden model's, each log loss within
# [hidden - 0.01, hidden + 0.1]; on model.ckpt-40 and model.ckpt-80 (the
# variables each chief saved last) the figures are the chief's own.
case_wide_deep_evaluator() {
    local launch_secs=60 d=$tmp/ckpt
    local args=("${wd_small[@]}" --checkpoint_dir="$d" --save_checkpoint_steps=20)
    run_launch "$tmp/o1" 2 1 "${args[@]}" --train_steps=40
    if [[ $rc -ne 0 || ! -s $d/model.ckpt-40.safetensors ]]; then
        fail "the first job: exit $rc, $(ls "$d" 2>&1 | tr '\n' ' ')"
        show "$tmp/o1" 20
        return
    fi
    timeout "$(t 80)" "$trainer" --ps_hosts=127.0.0.1:1,127.0.0.1:2 \
        --worker_hosts=127.0.0.1:3 --job_name=evaluator --task_index=0 \
        "${args[@]}" --train_steps=80 --max_wait_secs="$(t 60)" \
        >"$tmp/ev" 2>&1 &
    local ev=$! i
    for ((i = 0; i < $(t 300); i++)); do # at most 30 s
        grep -q '^\[evaluator0\] test AUC' "$tmp/ev" 2>/dev/null && break
        kill -0 "$ev" 2>/dev/null || break
        sleep 0.1
    done
    run_launch "$tmp/o2" 2 1 "${args[@]}" --train_steps=80
    local rc2=$rc
    wait "$ev"
    local rce=$?
    [[ $rc2 -eq 0 ]] || { fail "the second job: exit $rc2"; show "$tmp/o2" 20; }
    if [[ $rce -eq 0 ]] &&
        grep -q '^\[evaluator0\] evaluator 0: done: global_step 80 reached --train_steps$' "$tmp/ev"; then
        ok "the evaluator: exit 0 after global_step 80"
    else
        fail "the evaluator: exit $rce"
        show "$tmp/ev" 20
    fi
    # "STEP AUC HIDDEN LOSS HIDDEN_LOSS" per evaluated checkpoint, or
    # "MISSING STEP" when its line is not followed by the figures
    awk '
        /^\[evaluator0\] evaluator 0: .*\.safetensors \(global_step [0-9]+\)$/ {
            if (want) print "MISSING", step
            step = $NF; sub(/\)$/, "", step); want = 1; next
        }
        want && match($0, /^\[evaluator0\] test AUC [0-9.]+ \(hidden model [0-9.]+\), log loss [0-9.]+ \(hidden [0-9.]+\) on 20000 examples/) {
            split($0, w, /[ (),]+/)
            print step, w[4], w[7], w[10], w[12]; want = 0; next
        }
        want { print "MISSING", step; want = 0 }
        END { if (want) print "MISSING", step }' "$tmp/ev" >"$tmp/evals"
    local step auc hid loss hloss n=0 bad=
    while read -r step auc hid loss hloss; do
        if [[ $step == MISSING ]]; then
            bad+=" model.ckpt-$auc: no AUC and log loss line;"
            continue
        fi
        n=$((n + 1))
        awk -v a="$auc" -v h="$hid" -v l="$loss" -v hl="$hloss" \
            'BEGIN { exit !(a > 0.6 && a <= h && l >= hl - 0.01 && l <= hl + 0.1) }' ||
            bad+=" model.ckpt-$step: AUC $auc (hidden $hid), log loss $loss (hidden $hloss);"
    done <"$tmp/evals"
    if ((n >= 2)) && [[ -z $bad ]] && grep -q '^40 ' "$tmp/evals" &&
        grep -q '^80 ' "$tmp/evals"; then
        ok "the evaluator evaluated $n checkpoints, each with a sane test AUC and log loss: $(awk '{ printf "%s%s: AUC %s, log loss %s", (NR > 1 ? "; " : ""), $1, $2, $4 }' "$tmp/evals")"
    else
        fail "the evaluator's checkpoints ($n evaluated, want 40 and 80 among them):$bad"
        cat "$tmp/evals"
        show "$tmp/ev" 20
    fi
    local o want got
    for o in 1:40 2:80; do
        want=$(tline "$tmp/o${o%%:*}" worker0 "test AUC .*" | sed 's/ in [0-9.]* s$//')
        got=$(sed -n "/^\[evaluator0\] evaluator 0: .*model\.ckpt-${o#*:}\.safetensors (global_step ${o#*:})\$/{n;p;}" "$tmp/ev" |
            sed 's/^\[evaluator0\] //; s/ in [0-9.]* s$//')
        [[ -n $want && $got == "$want" ]] &&
            ok "model.ckpt-${o#*:}: the evaluator's '$got' is the chief's" ||
            fail "model.ckpt-${o#*:}: the evaluator's '$got', the chief's '$want'"
    done
}

case_async_converges() {
    # 2 async workers sharing 2000 updates of 100 examples (3.3 epochs).
    # Measured here (mlp:64, adam, batch 100, --threads=1): local runs
    # reach 0.68-0.75 after 50 steps and 0.81-0.83 after 400 (seeds 1-4);
    # this async run with 1500 steps gave 0.835-0.848 (seeds 1-3). 0.78
    # leaves a margin for async staleness, while a run whose updates are
    # lost (weights stay at their random init: ~0.10) or that applies only
    # a few percent of them cannot reach it. Enough steps that the second
    # worker, which may start a second later (data load), still trains.
    run_launch "$tmp/o" 2 2 --model=mlp:64 --optimizer=adam --batch_size=100 \
        --train_steps=2000 --threads=1 --seed=2 --log_every=500
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc"
        show "$tmp/o" 30
        return
    fi
    local acc first final g m0 m1
    acc=$(tline "$tmp/o" worker0 "test accuracy: .*" |
        sed -n 's/^test accuracy: \([0-9.]*\) .*/\1/p')
    first=$(sed -n 's/^\[worker0\] step [0-9]*, loss \([0-9.]*\),.*/\1/p' "$tmp/o" |
        head -n 1)
    final=$(tline "$tmp/o" worker0 "final loss: .*" |
        sed -n 's/^final loss: \([^ ]*\).*/\1/p')
    g=$(tline "$tmp/o" worker0 "global_step at the end: .*")
    m0=$(steps_of "$tmp/o" worker0)
    m1=$(steps_of "$tmp/o" worker1)
    echo "accuracy $acc, first loss $first, final loss $final, $g, worker steps $m0 + $m1"
    [[ -n $acc ]] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.78) }' &&
        ok "test accuracy $acc >= 0.78" ||
        fail "test accuracy '$acc' < 0.78"
    [[ -n $first && -n $final ]] &&
        awk -v a="$first" -v b="$final" 'BEGIN { exit !(a > b) }' &&
        ok "loss fell from $first to $final" ||
        fail "loss did not fall: first '$first', final '$final'"
    [[ -n $m0 && -n $m1 ]] && ((m0 > 0 && m1 > 0)) &&
        ok "both workers trained ($m0 and $m1 steps)" ||
        fail "worker steps '$m0' and '$m1': both should train"
}

case_global_step() {
    # T=90 global steps shared by 3 async workers; each worker's steps come
    # from its "training:" line. One FETCH_AND_ADD per update makes the
    # chief's final global_step their sum. StopAtStepHook stops a worker once
    # the global_step it fetched reaches T, so each of the other W-1 workers
    # can overshoot by at most the step it had in flight: G <= T + W - 1.
    local T=90 W=3
    run_launch "$tmp/o" 2 "$W" --model=mlp:16 --optimizer=sgd --batch_size=50 \
        --train_steps=$T --threads=1 --log_every=0 \
        --variables_out="$tmp/v.st"
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc"
        show "$tmp/o" 30
        return
    fi
    local i m sum=0 desc= g
    for ((i = 0; i < W; i++)); do
        m=$(steps_of "$tmp/o" "worker$i")
        if [[ -z $m ]]; then
            fail "worker$i printed no 'training:' line"
            m=0
        fi
        desc+="${desc:+ + }$m"
        sum=$((sum + m))
        if ((i > 0)); then
            local d
            d=$(tline "$tmp/o" "worker$i" "worker $i: done after .*")
            [[ $d == "worker $i: done after $m steps" ]] &&
                ok "worker$i: '$d'" ||
                fail "worker$i: '$d', want 'worker $i: done after $m steps'"
        fi
    done
    g=$(tline "$tmp/o" worker0 "global_step at the end: .*")
    g=${g#global_step at the end: }
    echo "global_step at the end: '$g'; workers: $desc = $sum"
    [[ $g =~ ^[0-9]+$ ]] && ((g == sum)) &&
        ok "global_step $g == sum of worker steps ($desc)" ||
        fail "global_step '$g' != sum of worker steps $desc = $sum"
    [[ $g =~ ^[0-9]+$ ]] && ((g >= T && g <= T + W - 1)) &&
        ok "$T <= global_step $g <= $((T + W - 1))" ||
        fail "global_step '$g' not in [$T, $((T + W - 1))]"
    [[ -n $(tline "$tmp/o" worker0 "test accuracy: 0\.[0-9]\{4\} .*") ]] &&
        ok "the chief evaluated" || fail "no test accuracy from the chief"
    # --variables_out is written after every worker is done: its global_step
    # is the final one
    "$check" st "$tmp/v.st" >"$tmp/v.keys"
    local gs
    gs=$(st_value "$tmp/v.keys" global_step)
    [[ $gs == "$g" ]] && ok "--variables_out global_step $gs" ||
        fail "--variables_out global_step '$gs', want '$g'"
}

# The classic four command lines, workers first: both workers retry
# connecting until the ps tasks are up. Sets rc_w0 rc_w1 rc_p0 rc_p1.
four_lines() {
    local ps0 ps1 w0 w1
    free_port ps0 && free_port ps1 && free_port w0 && free_port w1 || {
        fail "no free ports"
        return 1
    }
    local cluster=(--ps_hosts="$host:$ps0,$host:$ps1"
        --worker_hosts="$host:$w0,$host:$w1")
    local train=(--model=mlp:16 --optimizer=adam --batch_size=50
        --train_steps=40 --threads=1 --log_every=0)
    echo "cluster: ${cluster[*]}"
    local to
    to=$(t 120)
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=0 \
        "${train[@]}" >"$tmp/w0" 2>&1 &
    local pw0=$!
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=1 \
        "${train[@]}" >"$tmp/w1" 2>&1 &
    local pw1=$!
    sleep 2
    local early=
    kill -0 "$pw0" 2>/dev/null || early+=" worker0"
    kill -0 "$pw1" 2>/dev/null || early+=" worker1"
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=ps --task_index=0 \
        "${train[@]}" >"$tmp/p0" 2>&1 &
    local pp0=$!
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=ps --task_index=1 \
        "${train[@]}" >"$tmp/p1" 2>&1 &
    local pp1=$!
    wait "$pw0"
    rc_w0=$?
    wait "$pw1"
    rc_w1=$?
    wait "$pp0"
    rc_p0=$?
    wait "$pp1"
    rc_p1=$?
    echo "exit: worker0 $rc_w0, worker1 $rc_w1, ps0 $rc_p0, ps1 $rc_p1"
    # started by hand, each task names itself on every line (rf-launch's
    # tasks leave that to rf-launch: RF_LAUNCH_TASK)
    local f n bad
    for f in w0:worker0 w1:worker1 p0:ps0 p1:ps1; do
        n=$(wc -l <"$tmp/${f%:*}")
        bad=$(grep -vc "^\[${f#*:}\] " "$tmp/${f%:*}")
        ((n > 0 && bad == 0)) && ok "${f#*:}: all $n lines start with [${f#*:}]" ||
            { fail "${f#*:}: $bad of $n lines lack [${f#*:}]"; show "$tmp/${f%:*}" 5; }
    done
    [[ -z $early ]] ||
        fail "worker(s)$early exited before the ps tasks started (should retry)"
}

case_workers_first() {
    local try t0
    t0=$(now)
    for try in 1 2 3; do
        used_ports=" "
        four_lines || return
        # a port taken between the probe and the bind: try other ports
        if [[ $rc_p0 != 0 || $rc_p1 != 0 ]] &&
            grep -qi "in use" "$tmp/p0" "$tmp/p1"; then
            echo "a ps port was taken (try $try): $(grep -hi 'in use' "$tmp/p0" "$tmp/p1")"
            continue
        fi
        break
    done
    echo "four processes in $(secs "$t0") s"
    local f name
    for name in w0 w1 p0 p1; do
        local var=rc_$name
        if [[ ${!var} -eq 0 ]]; then
            ok "$name exit 0"
        else
            fail "$name exit ${!var}"
            show "$tmp/$name" 15
        fi
    done
    local acc
    acc=$(first_line "$tmp/w0" "test accuracy: 0\.[0-9]\{4\} ")
    [[ -n $acc ]] && ok "chief: $acc" || fail "the chief printed no test accuracy"
    local d
    d=$(first_line "$tmp/w1" "worker 1: done after [0-9]* steps")
    [[ -n $d ]] && ok "worker1: $d" || fail "worker1 printed no 'done after'"
    for f in 0 1; do
        grep -q "^\[ps$f\] ps task $f: serving on $host:[0-9]* (fabric $RF_FABRIC" \
            "$tmp/p$f" && grep -q "^\[ps$f\] ps task $f: shut down by the chief" \
            "$tmp/p$f" &&
            ok "ps$f: served on $host with $RF_FABRIC and was shut down" ||
            { fail "ps$f: no 'serving on $host... (fabric $RF_FABRIC' or shutdown line" &&
                show "$tmp/p$f" 8; }
    done
}

# explain_json NPS CHECK_ARGS -- TRAINER_ARGS...: one --explain=json run,
# checked by tdist_check explain.
explain_json() {
    local nps=$1
    shift
    local cargs=()
    while [[ $1 != -- ]]; do
        cargs+=("$1")
        shift
    done
    shift
    run_launch "$tmp/o" "$nps" 1 --explain=json --train_steps=1 --threads=1 \
        --log_every=0 "$@"
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc"
        show "$tmp/o" 20
        return
    fi
    local n
    n=$(grep -c '^\[worker0\] {"explain":' "$tmp/o")
    [[ $n == 1 ]] && ok "worker0 printed one explain line" ||
        fail "worker0 printed $n lines starting with '{\"explain\":'"
    sed -n 's/^\[worker0\] \({"explain":.*\)/\1/p' "$tmp/o" | head -n 1 \
        >"$tmp/explain.json"
    local ps= k a
    for ((k = 0; k < nps; k++)); do
        a=$(tline "$tmp/o" "ps$k" "ps task $k: serving on .*" |
            sed -n 's/^ps task [0-9]*: serving on \([^ ]*\) .*/\1/p')
        ps+=${ps:+,}$a
    done
    if "$check" explain "$tmp/explain.json" num_ps="$nps" workers=1 \
        provider="$RF_FABRIC" ps="$ps" "${cargs[@]}"; then
        ok "explain JSON ($nps ps, $*)"
    else
        fail "explain JSON ($nps ps, $*)"
        head -c 3000 "$tmp/explain.json"
        echo
    fi
}

case_explain_json() {
    # replica_device_setter's own default placement: every variable whole,
    # round-robin
    local rr=(--ps_strategy=round_robin --partition_min_slice_bytes=0)
    explain_json 3 apply=ps locking=0 slots=Adam,Adam_1 placement=round_robin \
        vars=dense/kernel:784x32,dense/bias:32,dense_1/kernel:32x16,dense_1/bias:16,logits/kernel:16x10,logits/bias:10 \
        -- --model=mlp:32,16 --optimizer=adam "${rr[@]}"
    explain_json 2 apply=ps locking=0 slots=Adam,Adam_1 placement=round_robin \
        vars=logits/kernel:784x10,logits/bias:10 \
        -- --model=softmax --optimizer=adam "${rr[@]}"
    explain_json 2 apply=worker locking=1 slots= placement=round_robin \
        vars=logits/kernel:784x10,logits/bias:10 \
        -- --model=softmax --optimizer=sgd --apply=worker --use_locking "${rr[@]}"
    # greedy by bytes, whole variables
    explain_json 2 apply=ps locking=0 slots=Adam,Adam_1 placement=greedy \
        vars=dense/kernel:784x32,dense/bias:32,dense_1/kernel:32x16,dense_1/bias:16,logits/kernel:16x10,logits/bias:10 \
        -- --model=mlp:32,16 --optimizer=adam --ps_strategy=greedy \
        --partition_min_slice_bytes=0
    # rf-trainer's default (greedy, min_max_variable_partitioner with
    # max_partitions = 3 ps tasks): dense/kernel's 100352 bytes with
    # min_slice_size 32768 give min(3, ceil(3.06)) = 3 parts of 784 rows
    # (262, 261, 261: _iter_slices), the others one part each
    explain_json 3 apply=ps locking=0 slots=Adam,Adam_1 placement=greedy \
        vars=dense/kernel/part_0:262x32,dense/kernel/part_1:261x32,dense/kernel/part_2:261x32,dense/bias/part_0:32,dense_1/kernel/part_0:32x16,dense_1/bias/part_0:16,logits/kernel/part_0:16x10,logits/bias/part_0:10 \
        -- --model=mlp:32,16 --optimizer=adam --partition_min_slice_bytes=32768
    # the text form names the same placement, and is not the JSON line
    run_launch "$tmp/o" 2 1 --explain --train_steps=1 --threads=1 \
        --log_every=0 --model=softmax "${rr[@]}"
    if [[ $rc -eq 0 ]] && grep -q '^\[worker0\] .*logits/kernel.*/job:ps/task:1' "$tmp/o" &&
        grep -q '^\[worker0\] .*global_step.*/job:ps/task:0' "$tmp/o" &&
        grep -q '^\[worker0\] explain: placement (replica_device_setter, ps_strategy round_robin over 2 ps tasks, no partitioner)' "$tmp/o" &&
        ! grep -q '{"explain":' "$tmp/o"; then
        ok "--explain (text) names logits/kernel on /job:ps/task:1"
    else
        fail "--explain (text): exit $rc"
        show "$tmp/o" 30
    fi
}

# --explain_only: from the flags alone, every task, without a connection;
# what it says of worker 0 is what a live worker 0 says (same flags).
case_explain_only() {
    local m=(--model=mlp:32,16 --optimizer=adam --partition_min_slice_bytes=32768
        --threads=1)
    run_launch "$tmp/o" 2 1 --explain=json --train_steps=1 --log_every=0 "${m[@]}"
    sed -n 's/^\[worker0\] \({"explain":.*\)/\1/p' "$tmp/o" | head -n 1 \
        >"$tmp/live.json"
    local ps0 ps1 w0=127.0.0.1:1
    ps0=$(tline "$tmp/o" ps0 "ps task 0: serving on .*" | sed -n 's/^ps task 0: serving on \([^ ]*\) .*/\1/p')
    ps1=$(tline "$tmp/o" ps1 "ps task 1: serving on .*" | sed -n 's/^ps task 1: serving on \([^ ]*\) .*/\1/p')
    [[ $rc -eq 0 && -s $tmp/live.json && -n $ps0 && -n $ps1 ]] &&
        ok "a live worker 0 explained itself" || { fail "live run: exit $rc"; show "$tmp/o" 20; }
    # nothing listens on any of these: nothing is connected to
    local cl=(--ps_hosts="$ps0,$ps1" --worker_hosts="$w0")
    timeout "$(t 60)" "$trainer" --explain_only --explain=json "${cl[@]}" \
        "${m[@]}" >"$tmp/off.json" 2>"$tmp/off.err"
    rc=$?
    local lines
    lines=$(wc -l <"$tmp/off.json")
    [[ $rc -eq 0 && $lines == 1 ]] &&
        ok "--explain_only --explain=json: exit 0, stdout is the one JSON line" ||
        { fail "--explain_only: exit $rc, $lines lines on stdout"; show "$tmp/off.err" 10; }
    if "$check" same_explain "$tmp/live.json" "$tmp/off.json"; then
        ok "the offline worker 0 says what the live one says"
    else
        fail "offline and live explanations differ"
    fi
    # the text names every task and what only the chief does; a ps task's
    # records; without --job_name/--task_index, over TF_CONFIG's cluster too
    timeout "$(t 60)" "$trainer" --explain_only \
        --ps_hosts=127.0.0.1:1,127.0.0.1:2 --worker_hosts=127.0.0.1:3,127.0.0.1:4 \
        "${m[@]}" --apply=worker --checkpoint_dir="$tmp/ck" >"$tmp/text" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]] &&
        grep -q '^explain: /job:ps/task:1 at 127.0.0.1:2: parameter server' "$tmp/text" &&
        grep -q '^explain: \[ps 0\] each step, apply=worker (this run):' "$tmp/text" &&
        grep -q '^explain: /job:worker/task:1 at 127.0.0.1:4: worker 1 of 2$' "$tmp/text" &&
        grep -q '^explain: \[worker 0\] as the chief, beyond the others:' "$tmp/text" &&
        ! grep -q '^explain: \[worker 1\] as the chief' "$tmp/text" &&
        grep -q "restores the newest checkpoint of $tmp/ck" "$tmp/text" &&
        grep -q '^explain: \[worker 1\] data: 30000 of the 60000 training examples' "$tmp/text" &&
        grep -q '^explain: \[worker 0\] each step of this worker (apply=worker):' "$tmp/text" &&
        [[ ! -e $tmp/ck ]]; then
        ok "--explain_only (text): every ps and worker task, the chief's duties, nothing made"
    else
        fail "--explain_only (text): exit $rc"
        show "$tmp/text" 40
    fi
    # --explain_out FILE; local mode; usage errors before any work
    timeout "$(t 60)" "$trainer" --explain_only --explain=json \
        --explain_out="$tmp/local.json" --model=softmax >"$tmp/o2" 2>&1
    rc=$?
    if [[ $rc -eq 0 && ! -s $tmp/o2 ]] && grep -q '^{"explain":{"mode":"local"' "$tmp/local.json" &&
        grep -q '"name":"logits/kernel","dtype":"float32","shape":\[784,10\],"bytes":31360' "$tmp/local.json"; then
        ok "--explain_out holds the local explanation, stdout nothing"
    else
        fail "--explain_out, local: exit $rc"
        show "$tmp/o2" 10
    fi
    local bad
    for bad in "--explain_out=$tmp/x.json" "--explain --explain_out=$tmp" \
        "--explain --explain_out=$tmp/missing/x.json"; do
        # shellcheck disable=SC2086
        timeout "$(t 30)" "$trainer" $bad --model=softmax >"$tmp/o3" 2>&1
        rc=$?
        [[ $rc -eq 2 ]] && grep -q -- "--explain_out" "$tmp/o3" &&
            ok "$bad: usage error naming --explain_out" ||
            { fail "$bad: exit $rc"; show "$tmp/o3" 5; }
    done
}

case_repartition() {
    # A checkpoint saved by 2 ps with dense/kernel in two parts holds the
    # whole tensors under their own names, and restores into 3 ps tasks
    # without a partitioner (and the other way round).
    local d=$tmp/ckpt flags=(--model=mlp:32,16 --optimizer=adam
        --batch_size=50 --threads=1 --log_every=0 --checkpoint_dir="$tmp/ckpt")
    run_launch "$tmp/o1" 2 1 "${flags[@]}" --train_steps=40 \
        --partition_min_slice_bytes=32768 --explain
    local f=$d/model.ckpt-40.safetensors
    if [[ $rc -ne 0 || ! -s $f ]]; then
        fail "the partitioned job: exit $rc, $(ls "$d" 2>&1 | tr '\n' ' ')"
        show "$tmp/o1" 20
        return
    fi
    grep -q '^\[worker0\]   dense/kernel/part_1 .*\[392,32\]' "$tmp/o1" ||
        fail "the first job did not partition dense/kernel"
    "$check" st "$f" >"$tmp/keys"
    if grep -q '^dense/kernel F32 \[784,32\]$' "$tmp/keys" &&
        grep -q '^dense/kernel/Adam_1 F32 \[784,32\]$' "$tmp/keys" &&
        ! grep -q 'part_' "$tmp/keys"; then
        ok "model.ckpt-40 holds dense/kernel and its slots whole, no part names"
    else
        fail "model.ckpt-40's tensors:"
        sed 's/^/    | /' "$tmp/keys"
    fi
    run_launch "$tmp/o2" 3 1 "${flags[@]}" --train_steps=60 \
        --partition_min_slice_bytes=0
    local got
    got=$(tline "$tmp/o2" worker0 "[^ ]*: session ready: .*")
    if [[ $rc -eq 0 && $got == *"restored $f"*"global_step 40"* ]] &&
        [[ $(tline "$tmp/o2" worker0 "global_step at the end: .*") == "global_step at the end: 60" ]]; then
        ok "3 ps, whole variables: '$got', then to global_step 60"
    else
        fail "3 ps, whole variables: exit $rc, '$got'"
        show "$tmp/o2" 20
    fi
    run_launch "$tmp/o3" 2 1 "${flags[@]}" --train_steps=80 \
        --partition_min_slice_bytes=32768
    got=$(tline "$tmp/o3" worker0 "[^ ]*: session ready: .*")
    [[ $rc -eq 0 && $got == *"model.ckpt-60.safetensors"*"global_step 60"* ]] &&
        ok "back to 2 ps in parts: '$got'" ||
        fail "back to 2 ps in parts: exit $rc, '$got'"
}

case_sync() {
    # 2 workers with --sync_replicas on 2 ps: each step the ps tasks apply
    # the mean of both workers' gradients once and every worker waits for
    # the step, so both train every one of the T steps (the first waits at
    # step 0 for the second) and global_step ends at exactly T
    local T=40
    run_launch "$tmp/o" 2 2 --model=mlp:16 --optimizer=adam --batch_size=50 \
        --train_steps=$T --threads=1 --log_every=0 --sync_replicas --explain
    if [[ $rc -ne 0 ]]; then
        fail "exit $rc"
        show "$tmp/o" 30
        return
    fi
    local m0 m1 g
    m0=$(steps_of "$tmp/o" worker0)
    m1=$(steps_of "$tmp/o" worker1)
    g=$(tline "$tmp/o" worker0 "global_step at the end: .*")
    [[ $m0 == "$T" && $m1 == "$T" && $g == "global_step at the end: $T" ]] &&
        ok "sync replicas: both workers trained all $T steps, '$g'" ||
        fail "sync replicas: worker steps '$m0' and '$m1', '$g' (want $T each)"
    if grep -q "^\[worker0\] explain: each step of this worker (sync replicas: the mean of 2 of 2 workers' gradients applied on the ps)" "$tmp/o" &&
        grep -q '^\[worker0\] .*WAIT_GLOBAL_STEP: wait until every shard applied' "$tmp/o" &&
        grep -q '^\[worker0\] .*WRITE_WITH_IMM .*(WRITE of the step tag' "$tmp/o"; then
        ok "--explain names the sync strategy's pushes and its wait for global_step"
    else
        fail "--explain does not describe the sync step"
        grep '^\[worker0\] ' "$tmp/o" | grep -A12 'each step' | head -n 14
    fi
}

# ssp_line OUT TASK: the task's "stale synchronous parallel (staleness K):
# W of N steps waited ..., L steps ahead ..." line.
ssp_line() { tline "$1" "$2" "stale synchronous parallel (staleness .*"; }

case_ssp() {
    # --staleness (stale synchronous parallel): 2 async workers on 1 ps;
    # MODEL mlp (ssp_mlp) with K=1 (--explain shows the clock operations,
    # the metrics lines carry ssp_lead, the trace its spans: worker 0 starts
    # first, so it waits for worker 1 within its first steps), or wide_deep
    # (ssp_wide_deep) with K=0; each worker's end line says it is at most K
    # steps ahead. Two ctests, so a missing dataset skips the MLP's whole
    # test instead of half of one.
    local model=$1 k w l lead
    for model in "$model"; do
        if [[ $model == mlp ]]; then
            k=1
            mkdir -p "$tmp/m"
            run_launch "$tmp/o" 1 2 --metrics_dir "$tmp/m" \
                --trace "$tmp/ssp.json" -- --model=mlp:16 \
                --optimizer=adam --batch_size=50 --train_steps=300 --threads=1 \
                --log_every=0 --staleness=$k --explain
        else
            k=0
            run_launch "$tmp/o" 1 2 --model=wide_deep --train_steps=300 \
                --log_every=0 --staleness=$k
        fi
        if [[ $rc -ne 0 ]]; then
            fail "$model --staleness=$k: exit $rc"
            show "$tmp/o" 30
            continue
        fi
        for w in worker0 worker1; do
            l=$(ssp_line "$tmp/o" $w)
            lead=$(sed -n 's/.*; \([0-9]*\) steps ahead of it at the last step$/\1/p' <<<"$l")
            if [[ $l == "stale synchronous parallel (staleness $k): "* && -n $lead ]] && ((lead <= k)); then
                ok "$model --staleness=$k: $w: $l"
            else
                fail "$model --staleness=$k: $w: '$l'"
            fi
        done
        [[ $model == mlp ]] || continue
        if grep -q '^\[worker0\] .*READ_CLOCKS  *ssp_clocks  *ps 0  16 B' "$tmp/o" &&
            grep -q '^\[worker0\] .*FETCH_AND_ADD  *ssp_clock  *ps 0  8 B' "$tmp/o" &&
            grep -q '^\[worker0\] explain: stale synchronous parallel, staleness 1' "$tmp/o"; then
            ok "--explain shows the clocks READ and the clock's FETCH_AND_ADD"
        else
            fail "--explain does not show the SSP operations"
            grep '^\[worker0\] ' "$tmp/o" | grep -A16 'each step' | head -n 18
        fi
        local span missing=
        for span in "READ ssp_clocks" "ssp_wait" "FETCH_AND_ADD ssp_clock"; do
            grep -qF "\"name\":\"$span\"" "$tmp/ssp.json" || missing+=" '$span'"
        done
        [[ -z $missing ]] && ok "the merged trace has the clocks READ, the waits and the clock's FETCH_AND_ADD" ||
            fail "the merged trace lacks the spans$missing"
        grep -q '"ssp_lead":[0-9]' "$tmp/m/worker1.jsonl" &&
            ok "the metrics lines carry ssp_lead: $(grep -o '"ssp_lead":[0-9]*' "$tmp/m/worker1.jsonl" | sort | uniq -c | tr -s ' \n' ' ')" ||
            fail "no ssp_lead in $tmp/m/worker1.jsonl"
    done
}

# expect_usage "WANT" ARGS...: exit 2 and WANT in stderr (env TF_CONFIG
# from the caller's "tf_config" variable when set).
expect_usage() {
    local want=$1
    shift
    if [[ -n ${tf_config:-} ]]; then
        TF_CONFIG=$tf_config timeout "$(t 30)" "$trainer" "$@" \
            >"$tmp/out" 2>"$tmp/err"
    else
        timeout "$(t 30)" "$trainer" "$@" >"$tmp/out" 2>"$tmp/err"
    fi
    local st=$?
    if [[ $st -ne 2 ]]; then
        fail "rf-trainer $* exited $st, want 2 ($(head -c 300 "$tmp/err"))"
    elif ! grep -qF -- "$want" "$tmp/err"; then
        fail "rf-trainer $*: stderr lacks '$want': $(cat "$tmp/err")"
    elif grep -q '^step \|^model:' "$tmp/out"; then
        fail "rf-trainer $*: started training despite the usage error"
    else
        ok "rf-trainer ${tf_config:+TF_CONFIG='$tf_config' }$* -> 2: $(head -n 1 "$tmp/err")"
    fi
}

case_bad_cluster() {
    local w2=--worker_hosts=127.0.0.1:2,127.0.0.1:3
    tf_config=
    expect_usage "--ps_hosts" --job_name=ps --task_index=0 \
        --worker_hosts=127.0.0.1:2
    expect_usage "--task_index" --job_name=worker --task_index=5 \
        --ps_hosts=127.0.0.1:1 "$w2"
    expect_usage "--apply: 'bogus'" --apply=bogus --job_name=worker \
        --task_index=0 --ps_hosts=127.0.0.1:1 "$w2"
    expect_usage "--total_num_replicas: 3, but the cluster has 2 training workers" \
        --sync_replicas --total_num_replicas=3 --job_name=worker \
        --task_index=0 --ps_hosts=127.0.0.1:1 "$w2"
    expect_usage "--total_num_replicas: 1, but the cluster has 2 training workers" \
        --sync_replicas --total_num_replicas=1 --job_name=ps \
        --task_index=0 --ps_hosts=127.0.0.1:1 "$w2"
    expect_usage "--replicas_to_aggregate: 3 is more than the cluster's 2 training workers" \
        --sync_replicas --replicas_to_aggregate=3 --job_name=worker \
        --task_index=1 --ps_hosts=127.0.0.1:1 "$w2"
    # output paths: refused before the task starts its server (exit 2)
    local cw="--job_name=worker --task_index=0 --ps_hosts=127.0.0.1:1"
    echo plain >"$tmp/plain"
    # shellcheck disable=SC2086
    expect_usage "--checkpoint_dir: " --checkpoint_dir="$tmp/plain" $cw "$w2"
    mkdir -p "$tmp/ckd/checkpoint"
    # shellcheck disable=SC2086
    expect_usage "--checkpoint_dir: $tmp/ckd/checkpoint is a directory" \
        --checkpoint_dir="$tmp/ckd" $cw "$w2"
    # shellcheck disable=SC2086
    expect_usage "--variables_out: /dev/null is not a regular file" \
        --variables_out=/dev/null $cw "$w2"
    expect_usage "--trace: $tmp is a directory" --trace="$tmp" \
        --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:1 "$w2"
    tf_config='{"cluster": {"ps": ["127.0.0.1:1"], "worker": ['
    expect_usage "TF_CONFIG" --model=softmax
    tf_config='{"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 3}}'
    expect_usage "TF_CONFIG" --model=softmax
    tf_config=
}

case_trace() {
    # mlp:16 values read per step: 784*16 + 16 + 16*10 + 10 floats
    local read_bytes=$(((784 * 16 + 16 + 16 * 10 + 10) * 4))
    run_launch "$tmp/o" 1 1 --trace "$tmp/merged.json" -- --model=mlp:16 \
        --optimizer=adam --batch_size=50 --train_steps=4 --threads=1 \
        --log_every=0
    if [[ $rc -ne 0 || ! -s $tmp/merged.json ]]; then
        fail "exit $rc, merged trace $(ls -l "$tmp/merged.json" 2>&1)"
        show "$tmp/o" 20
        return
    fi
    "$check" trace "$tmp/merged.json" num_ps=1 tasks=ps0,worker0 \
        ops=READ,WRITE_WITH_IMM,FETCH_AND_ADD read_bytes=$read_bytes &&
        ok "merged trace: both tasks, the worker's fabric operations" ||
        fail "merged trace check"
}

# A worker whose graph differs from the chief's: its lookup of the chief's
# shard is refused naming the variable and both shapes, it exits 2 (a configuration error), and the
# ps keeps serving the chief's variables (the chief is then stopped by the
# test: it would wait for the failed worker).
# secret: 1 ps x 1 worker with --cluster_secret_file; a worker with another
# secret and one without are refused at once (RF_ERR_AUTH is not retried by
# the monitored session) while the ps serves on; then the job completes.
case_secret() {
    local ps0 w0
    used_ports=" "
    free_port ps0 && free_port w0 || {
        fail "no free ports"
        return
    }
    head -c 32 /dev/urandom >"$tmp/s" && chmod 600 "$tmp/s"
    head -c 32 /dev/urandom >"$tmp/o" && chmod 600 "$tmp/o"
    local cluster=(--ps_hosts="$host:$ps0" --worker_hosts="$host:$w0")
    local train=(--model=softmax --batch_size=50 --threads=1 --log_every=0
        --train_steps=30)
    local to t0 rc
    to=$(t 120)
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=ps --task_index=0 \
        --cluster_secret_file="$tmp/s" >"$tmp/p0" 2>&1 &
    local pp0=$!
    t0=$SECONDS
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=0 \
        "${train[@]}" --cluster_secret_file="$tmp/o" >"$tmp/bad" 2>&1
    rc=$?
    if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "failed authentication" "$tmp/bad"; then
        ok "a worker with another secret exits $rc: $(grep -m1 -o 'ps task 0.*failed authentication' "$tmp/bad")"
    else
        fail "a worker with another secret: exit $rc"
        show "$tmp/bad"
    fi
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=0 \
        "${train[@]}" >"$tmp/none" 2>&1
    rc=$?
    if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "requires a cluster secret but this task has none" "$tmp/none"; then
        ok "a worker without the secret exits $rc, saying the ps requires one"
    else
        fail "a worker without the secret: exit $rc"
        show "$tmp/none"
    fi
    ((SECONDS - t0 < $(t 30))) || fail "the refusals took $((SECONDS - t0)) s: retried?"
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=0 \
        "${train[@]}" --cluster_secret_file="$tmp/s" >"$tmp/w0" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || { fail "the worker with the secret exited $rc"; show "$tmp/w0"; }
    wait "$pp0"
    rc=$?
    [[ $rc -eq 0 ]] && ok "with the secret the job completes and the ps exits 0" ||
        { fail "ps exited $rc"; show "$tmp/p0"; }
}

case_mismatch() {
    local ps0 w0 w1
    used_ports=" "
    free_port ps0 && free_port w0 && free_port w1 || {
        fail "no free ports"
        return
    }
    local cluster=(--ps_hosts="$host:$ps0" --worker_hosts="$host:$w0,$host:$w1")
    local train=(--optimizer=adam --batch_size=50 --threads=1 --log_every=0
        --train_steps=100000)
    local to
    to=$(t 120)
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=ps --task_index=0 \
        >"$tmp/p0" 2>&1 &
    local pp0=$!
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=0 \
        --model=mlp:16 "${train[@]}" >"$tmp/w0" 2>&1 &
    local pw0=$!
    timeout "$to" "$trainer" "${cluster[@]}" --job_name=worker --task_index=1 \
        --model=mlp:32 "${train[@]}" >"$tmp/w1" 2>&1
    local rc1=$?
    local alive=1
    kill -0 "$pp0" 2>/dev/null || alive=0
    kill "$pw0" "$pp0" 2>/dev/null
    wait "$pw0" "$pp0" 2>/dev/null
    # a configuration error (README "Exit status"): 2, never retried
    if [[ $rc1 -eq 2 ]]; then
        ok "worker1 with mlp:32 against the chief's mlp:16 exits 2"
    else
        fail "worker1 exited $rc1, want 2"
        show "$tmp/w1" 10
    fi
    if grep -q "dense/kernel" "$tmp/w1" && grep -qF "[784,16]" "$tmp/w1" &&
        grep -qF "[784,32]" "$tmp/w1"; then
        ok "refusal names the variable and both shapes: $(grep -m1 'dense/kernel' "$tmp/w1")"
    else
        fail "refusal does not name dense/kernel, [784,16] and [784,32]"
        show "$tmp/w1" 10
    fi
    [[ $alive -eq 1 ]] && ok "the ps kept serving after the refused worker" ||
        fail "the ps exited when a worker was refused"
}

case "$case_name" in
oracle_ps)
    need_data
    oracle --apply=ps
    ;;
oracle_worker)
    need_data
    oracle --apply=worker
    oracle --apply=worker --use_locking
    ;;
async_converges)
    need_data
    case_async_converges
    ;;
global_step)
    need_data
    case_global_step
    ;;
workers_first)
    need_data
    case_workers_first
    ;;
explain_json)
    need_data
    case_explain_json
    ;;
bad_cluster) case_bad_cluster ;;
mismatch)
    need_data
    case_mismatch
    ;;
trace)
    need_data
    case_trace
    ;;
sync)
    need_data
    case_sync
    ;;
repartition)
    need_data
    case_repartition
    ;;
explain_only)
    need_data
    case_explain_only
    ;;
wide_deep_oracle) case_wide_deep_oracle ;;
ssp_mlp)
    need_data
    case_ssp mlp
    ;;
ssp_wide_deep) case_ssp wide_deep ;;
wide_deep_2x2) case_wide_deep_2x2 ps ;;
wide_deep_2x2_worker) case_wide_deep_2x2 worker ;;
wide_deep_sync) case_wide_deep_sync ;;
wide_deep_table_memory) case_wide_deep_table_memory ;;
wide_deep_checkpoint) case_wide_deep_checkpoint ;;
wide_deep_gather_recovery) case_wide_deep_gather_recovery ;;
wide_deep_explain) case_wide_deep_explain ;;
wide_deep_trace) case_wide_deep_trace ;;
wide_deep_evaluator) case_wide_deep_evaluator ;;
secret)
    need_data
    case_secret
    ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
