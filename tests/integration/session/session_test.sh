#!/usr/bin/env bash
# tests/integration/session/session_test.sh CASE RF_SESSION_TASK: one case of
# the session tests (CMakeLists.txt): real ps and worker processes of
# rf_session_task on loopback, through rdmaflow/session.h, on synthetic
# data. Exits 0 when every check passed, 1 otherwise.
#   oracle_ps       one worker, apply=ps: variables byte-identical to local
#                   training (1 ps; 2 ps with the variables spread)
#   oracle_worker   the same with apply=worker
#   oracle_locking  the same with apply=worker and use_locking
#   async           2 ps x 2 workers: global_step == the sum of the steps,
#                   the loss goes down, every task exits 0
#   checkpoint      one worker saves every 10 steps on 1 ps; the newest
#                   checkpoint is corrupted (a flipped byte); a new cluster
#                   of 2 ps restores the one before, names the skipped one,
#                   and trains on: variables byte-identical to local
#                   training of the same number of steps
#   refusals        a worker whose model differs is refused naming the
#                   variable and both shapes while the cluster goes on; a
#                   variable on a ps that nothing trains is refused by name
#   sync_oracle     sync replicas (SyncReplicasOptimizer): 1 worker, N=1 is
#                   byte-identical to local training; 2 workers on 2 ps
#                   (N=2) and 3 workers on 1 ps (N=3) equal local training
#                   on each step's N worker batches within a float
#                   tolerance (see sync_tolerance); no gradient stale, the
#                   workers in lockstep
#   sync_stale      3 workers, N=2 of M=3; worker 2 pushes only after the
#                   step it computed for was published, so every gradient
#                   of it is stale: dropped and counted (its acks, the
#                   shards' stale words, the ps's shutdown log agree), and
#                   the variables equal the 2-worker oracle
#   sync_backup     3 workers, N=2 of M=3; worker 2 SIGSTOPs itself at step
#                   5: the others reach the last step and exit 0 (the chief
#                   does not wait for the stopped backup), then it is killed
#   sync_restore    2 sync workers save at step 10 on 1 ps; a new cluster
#                   of 2 ps restores it (the chief sets every shard's sync
#                   step to the restored global_step) and trains on to 25:
#                   the variables equal 25 local steps on both workers'
#                   batches within the sync tolerance
#   secret          a cluster secret (RF_CLUSTER_SECRET_FILE): one worker on
#                   1 ps trains byte-identically to local training; a
#                   worker without the secret, or with another, fails at
#                   once (not retried) saying why, and so does a ps whose
#                   secret file is group-readable
#   sync_refusals   bad replicas_to_aggregate / total_num_replicas and
#                   sync with apply=worker refused before connecting; a
#                   worker whose sync config differs from the shards' (or
#                   async) refused naming both; the cluster trains on; a
#                   chief alone (N=2) times out waiting for step 0, saying
#                   which shards lack gradients
#   emb_oracle_ps   an embedding table partitioned over 2 ps (mod) and the
#                   dense layers, one worker, apply=ps: variables
#                   byte-identical to local training for sgd, adagrad,
#                   ftrl, momentum and adam
#   emb_oracle_worker the same with apply=worker (sgd, adagrad, ftrl,
#                   momentum; adam apply=worker is refused by name)
#   emb_async       2 ps x 2 workers with the table: global_step is the sum
#                   of the steps, the chief's loss goes down
#   emb_bad_ids     a batch with an id past the vocabulary fails the run
#                   naming the lookup and the id before any row is read;
#                   the worker trains on
#   emb_memory      a 1 GiB table (4M x 64 floats, sgd) on 2 ps, trained
#                   by 2 workers: the non-chief worker, whose graph never
#                   initialised the table, peaks far below it (< 256 MiB)
#   emb_checkpoint  the chief saves the table on 2 ps; a cluster of 3 ps
#                   restores it and trains on: byte-identical to local
#   emb_sync        sync replicas with the table: 1 worker (N=M=1) on 2 ps
#                   byte-identical to local training; 2 ps x 2 workers in
#                   lockstep, every gradient taken, global_step once per
#                   step, the loss goes down
#   emb_sync_backup N=1 of M=2 with the table: the backup worker stops
#                   itself at step 5, the chief trains on to the end and
#                   finishes without it
#   emb_lookup_ways the lookups' ways (rf_session_options.embedding_lookup):
#                   rows, gather and auto each byte-identical to local
#                   training (apply=ps, adagrad, 2 ps), rows and gather
#                   byte-identical to each other with equal losses; a forced
#                   way is the only one taken (the session's per-table
#                   counts); auto measured both ways, says which it takes
#                   and why (rf_session_lookup_info, and one info log line
#                   per table); gather with apply=worker (ftrl) and with
#                   sync replicas (N=M=1) byte-identical to local; a
#                   checkpoint saved with gather restores into 3 ps with
#                   auto, byte-identical to local
#   ssp             stale synchronous parallel, 1 ps x 2 workers of 20
#                   steps each, worker 1 sleeping before each step: with
#                   staleness K (1, then 0) worker 0's step s+K+1 never ends
#                   before worker 1 could have finished step s (its call
#                   time + the sleep, rf_now_ns in both processes) and
#                   worker 0 waited; worker 1 fast and its session
#                   recreated after step 10 (a restarted worker continues
#                   from its clock word) keeps the bound too; with
#                   staleness -1 worker 0 gets further ahead than K (so
#                   the check can fail)
#   ssp_finish      a worker that finished does not hold the other (K=1,
#                   one worker 5 steps, the other 30; the chief first, then
#                   the other worker); alone, the chief's wait times out
#                   naming the missing worker and both clocks
#   ssp_refusals    staleness with sync_replicas, staleness below -1 and a
#                   negative staleness_wait_ms are refused before
#                   connecting
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default 127.0.0.1),
# RF_TEST_TIME_SCALE (multiplies every timeout). Needs only bash and
# coreutils (or busybox), so it also runs in the rxe guest (rxe.session).
set -uo pipefail
case_name=${1:?case}
task=${2:?path to rf_session_task}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p c
    # each pid is a timeout(1) process: its task first, or it outlives it
    for p in "${pids[@]}"; do
        for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
            kill -9 "$c" 2>/dev/null
        done
        kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

# cluster NPS NW: sets ps_hosts and worker_hosts on free ports.
cluster() {
    local i port list=
    for ((i = 0; i < $1; i++)); do
        free_port port || { fail "no free port"; return 1; }
        list+=${list:+,}$host:$port
    done
    ps_hosts=$list
    list=
    for ((i = 0; i < $2; i++)); do
        free_port port || { fail "no free port"; return 1; }
        list+=${list:+,}$host:$port
    done
    worker_hosts=$list
}

# start NAME ROLE ARGS...: a task in the background (output in $tmp/NAME).
start() {
    local name=$1 role=$2
    shift 2
    timeout "$(t 60)" "$task" "$role" --ps_hosts="$ps_hosts" \
        --worker_hosts="$worker_hosts" "$@" >"$tmp/$name" 2>&1 &
    pids+=($!)
    eval "pid_$name=$!"
}

# finish NAME WANT: waits for task NAME and checks its exit status.
finish() {
    local pid_var=pid_$1 rc
    wait "${!pid_var}"
    rc=$?
    if [[ $rc -ne $2 ]]; then
        fail "$1 exited $rc, want $2"
        show "$tmp/$1"
        return 1
    fi
    return 0
}

# finish_fail NAME NEEDLE: task NAME must exit non-zero within its timeout
# saying NEEDLE.
finish_fail() {
    local pid_var=pid_$1 rc
    wait "${!pid_var}"
    rc=$?
    if [[ $rc -eq 0 || $rc -eq 124 ]] || ! grep -qF "$2" "$tmp/$1"; then
        fail "$1 exited $rc, want a failure saying '$2'"
        show "$tmp/$1"
        return 1
    fi
    ok "$1 refused: $(grep -m1 -F "$2" "$tmp/$1")"
}

# the embedding table of the emb_* cases
emb=(--vocab=1000 --max_lookup_ids=768)
# emb_checkpoint's saving worker's extra options (emb_lookup_ways)
emb_ckpt_save=()

case_emb_async() {
    cluster 2 2 || return
    local common=(--steps=300 --optim=adagrad --seed=5 "${emb[@]}")
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}"
    local all=1 n
    for n in w0 w1 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    local s0 s1 g
    s0=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w0")
    s1=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w1")
    g=$(sed -n 's/^final global_step \([0-9]*\)$/\1/p' "$tmp/w0")
    if [[ -n $s0 && -n $s1 && -n $g ]] && ((s0 + s1 == g && s0 > 0 && s1 > 0)); then
        ok "table on 2 ps x 2 workers: global_step $g == $s0 + $s1 steps"
    else
        fail "global_step '$g' is not the sum of the steps '$s0' + '$s1'"
    fi
    if awk '/^loss/ { exit !($3 < $2) }' "$tmp/w0"; then
        ok "chief's loss went down: $(grep '^loss' "$tmp/w0"); $(grep '^table' "$tmp/w0")"
    else
        fail "chief's loss did not go down: $(grep '^loss' "$tmp/w0")"
    fi
}

# backup_not_waited I PID: kills the stopped backup worker I (pid PID);
# the chief must have said it went on without it.
backup_not_waited() {
    local pv=pid_w$1
    kill -KILL "$2" 2>/dev/null
    { wait "${!pv}"; } 2>/dev/null
    if grep -q "not waiting for /job:worker/task:$1 (backup worker" "$tmp/w0"; then
        ok "the chief went on without the stopped backup worker: $(grep -m1 -o 'session: .*' "$tmp/w0")"
    else
        fail "the chief did not say it went on without the backup worker"
        show "$tmp/w0"
    fi
}

# emb_sync: sync replicas with the table (TF's SparseConditionalAccumulator
# on the ps): 1 worker (N=M=1) byte-identical to local training; 2 ps x 2
# workers (N=2) in lockstep, global_step advanced once per step.
case_emb_sync() {
    oracle 2 adagrad "${emb[@]}" --sync_replicas
    cluster 2 2 || return
    local common=(--steps=25 --optim=adagrad --seed=5 --sync_replicas "${emb[@]}")
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}"
    local all=1 n i
    for n in w0 w1 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    for i in 0 1; do
        local k acc st
        k=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w$i")
        acc=$(field "$tmp/w$i" accepted)
        st=$(field "$tmp/w$i" stale)
        if [[ $k == 25 && -n $acc && $acc -gt 0 && $((acc % 25)) == 0 && $st == 0 ]]; then
            ok "worker $i: 25 steps, $acc gradients taken ($((acc / 25)) per step, the table's among them), none stale"
        else
            fail "worker $i: $k steps, $acc gradients taken, $st stale (want 25 steps, every gradient of each taken, 0 stale)"
            show "$tmp/w$i"
        fi
    done
    if grep -q '^final global_step 25$' "$tmp/w0"; then
        ok "2 workers x 25 sync steps with the table: global_step 25, once per step"
    else
        fail "final global_step: $(grep '^final' "$tmp/w0") (want 25)"
    fi
    if awk '/^loss/ { exit !($3 < $2) }' "$tmp/w0"; then
        ok "chief's loss went down: $(grep '^loss' "$tmp/w0"); $(grep '^table' "$tmp/w0")"
    else
        fail "chief's loss did not go down: $(grep '^loss' "$tmp/w0")"
    fi
}

# emb_sync_backup: N=1 of M=2 with the table; worker 1 SIGSTOPs itself at
# global step >= 5 and the chief, enough alone, trains on to the last step
# and finishes without the stopped backup worker.
case_emb_sync_backup() {
    cluster 1 2 || return
    local common=(--steps=30 --optim=adagrad --seed=17 --sync_replicas
        --replicas_to_aggregate=1 --total_num_replicas=2 "${emb[@]}"
        --op_timeout_ms=$(($(t 6) * 1000)))
    start ps0 ps --task_index=0 "${common[@]}"
    # the chief creates the table and is enough alone (N=1); it runs slowly
    # so worker 1 joins, trains, and stops itself while the chief trains on
    start w0 worker --task_index=0 "${common[@]}" --sleep_ms=100
    wait_line w0 '^sync session ready at global_step \([0-9]*\)$' >/dev/null ||
        { fail "the chief's session never became ready"; show "$tmp/w0"; return; }
    start w1 worker --task_index=1 "${common[@]}" --stop_at_step=5
    local pid
    if ! pid=$(wait_line w1 '^stopping at step [0-9]* pid \([0-9]*\)$'); then
        fail "worker 1 never reached step 5"
        show "$tmp/w1"
        return
    fi
    local all=1 n
    for n in w0 ps0; do finish "$n" 0 || all=0; done
    if [[ $all -eq 1 ]] && grep -q '^final global_step 30$' "$tmp/w0"; then
        ok "N=1 of M=2 with the table: the chief reached global_step 30 with the backup stopped"
    else
        fail "the job did not complete without the backup worker: $(grep '^final' "$tmp/w0")"
    fi
    backup_not_waited 1 "$pid"
}

case_emb_bad_ids() {
    cluster 2 1 || return
    local common=(--steps=8 --optim=adagrad --seed=5 "${emb[@]}")
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --bad_id_at=3
    finish w0 0 && finish ps0 0 && finish ps1 0 || return
    if grep -q "^bad id run: RF_ERR_INVALID_ARG: .*lookup.*ids\[5,3\] = 1249 is not in \[0, 1000)" "$tmp/w0" &&
        grep -q "^trained on after the bad id" "$tmp/w0"; then
        ok "$(grep -m1 '^bad id run' "$tmp/w0")"
    else
        fail "the bad id was not refused as expected"
        show "$tmp/w0"
    fi
}

case_emb_memory() {
    cluster 2 2 || return
    local common=(--steps=40 --optim=sgd --seed=5 --vocab=4194304 --emb_dim=64
        --max_lookup_ids=768)
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    # Each worker trains 20 steps of its own: up to a shared global step,
    # a chief that got through all of them before worker 1's session was
    # up left it nothing to do (seen under load).
    start w0 worker --task_index=0 "${common[@]}" --my_steps=20
    start w1 worker --task_index=1 "${common[@]}" --my_steps=20 \
        --table_uninitialized
    local all=1 n
    for n in w1 w0 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    local rss
    rss=$(sed -n 's/^peak_rss_kib \([0-9]*\)$/\1/p' "$tmp/w1")
    if [[ -n $rss ]] && ((rss < 262144)); then
        ok "1 GiB table: the non-chief worker peaked at $((rss / 1024)) MiB; $(grep '^table' "$tmp/w1")"
    else
        fail "the non-chief worker peaked at '${rss}' KiB (a 1 GiB table)"
        show "$tmp/w1"
    fi
}

# emb_lookup_ways: see the top.
case_emb_lookup_ways() {
    local way
    for way in rows gather auto; do
        RF_LOG_LEVEL=info oracle 2 adagrad "${emb[@]}" --embedding_lookup=$way
        cp "$tmp/dist.bin" "$tmp/dist-$way.bin" 2>/dev/null
        cp "$tmp/w0" "$tmp/w0-$way"
        grep '^loss' "$tmp/w0" >"$tmp/loss-$way"
    done
    if cmp -s "$tmp/dist-rows.bin" "$tmp/dist-gather.bin" &&
        cmp -s "$tmp/loss-rows" "$tmp/loss-gather"; then
        ok "rows and gather: variables and losses bit-identical ($(cat "$tmp/loss-gather"))"
    else
        fail "rows and gather differ: $(cmp "$tmp/dist-rows.bin" "$tmp/dist-gather.bin" 2>&1 | head -n 1); losses '$(cat "$tmp/loss-rows")' '$(cat "$tmp/loss-gather")'"
    fi
    local part n
    for part in 0 1; do
        grep -q "^lookup emb/part_$part below rows above rows switch 0 read [1-9][0-9]* gathered 0: .*row READs, as embedding_lookup=rows" "$tmp/w0-rows" &&
            grep -q "^lookup emb/part_$part below gather above gather switch 0 read 0 gathered [1-9][0-9]*: .*the ps-side gather, as embedding_lookup=gather" "$tmp/w0-gather" ||
            fail "part $part: a forced way was not the only one taken: $(grep "^lookup emb/part_$part " "$tmp/w0-rows" "$tmp/w0-gather")"
        grep -Eq "^lookup emb/part_$part below (rows|gather) above (rows|gather) switch [0-9]+ read [0-9]+ gathered [0-9]+: table 'emb/part_$part' \(ps [01]\): auto: row READs [0-9.]+ us \+ [0-9.]+ us/row, gather [0-9.]+ us \+ [0-9.]+ us/row" "$tmp/w0-auto" ||
            fail "part $part: auto does not say what it measured and chose: $(grep "^lookup emb/part_$part " "$tmp/w0-auto")"
        n=$(grep -c "session: embedding lookups of table 'emb/part_$part'" "$tmp/w0-auto")
        [[ $n -eq 1 ]] || fail "part $part: auto's choice logged $n times, want once"
    done
    ok "auto: $(grep -m1 '^lookup emb/part_0 ' "$tmp/w0-auto" | sed 's/^lookup //'); $(grep -m1 '^lookup ways' "$tmp/w0-auto")"
    oracle 2 ftrl "${emb[@]}" --apply=worker --embedding_lookup=gather
    oracle 2 adagrad "${emb[@]}" --sync_replicas --embedding_lookup=gather
    emb_ckpt_save=(--embedding_lookup=gather)
    case_emb_checkpoint
    emb_ckpt_save=()
}

case_emb_checkpoint() {
    local common=(--optim=adagrad --seed=9 "${emb[@]}")
    timeout "$(t 60)" "$task" local "${common[@]}" --steps=30 \
        --out="$tmp/local.bin" >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    local dir=$tmp/ckpt
    mkdir -p "$dir"
    cluster 2 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --steps=15 --save_every=15 \
        --checkpoint_dir="$dir" ${emb_ckpt_save:+"${emb_ckpt_save[@]}"}
    finish w0 0 && finish ps0 0 && finish ps1 0 || return
    cluster 3 1 || return
    local i
    for i in 0 1 2; do start "ps$i" ps --task_index=$i "${common[@]}"; done
    start w0 worker --task_index=0 "${common[@]}" --steps=30 \
        --checkpoint_dir="$dir" --out="$tmp/dist.bin"
    finish w0 0 && finish ps0 0 && finish ps1 0 && finish ps2 0 || return
    grep -q "^restored from $dir/model.ckpt-15.safetensors" "$tmp/w0" ||
        fail "not restored: $(grep -m1 '^restored' "$tmp/w0")"
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "the table saved on 2 ps, restored into 3 ps: byte-identical to 30 local steps"
    else
        fail "restored into 3 ps: variables differ from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
}

case_secret() {
    head -c 48 /dev/urandom >"$tmp/secret" && chmod 600 "$tmp/secret"
    head -c 48 /dev/urandom >"$tmp/other" && chmod 600 "$tmp/other"
    RF_CLUSTER_SECRET_FILE=$tmp/secret oracle 1 adam
    local common=(--steps=25 --optim=adam --seed=11)
    cluster 1 1 || return
    RF_CLUSTER_SECRET_FILE=$tmp/secret start ps0 ps --task_index=0 "${common[@]}"
    local t0=$SECONDS
    start w0 worker --task_index=0 "${common[@]}"
    finish_fail w0 "requires a cluster secret but this task has none"
    RF_CLUSTER_SECRET_FILE=$tmp/other start w0 worker --task_index=0 "${common[@]}"
    finish_fail w0 "failed authentication"
    ((SECONDS - t0 < $(t 20))) || fail "refusals took $((SECONDS - t0)) s: retried?"
    grep -q "requires a cluster secret and the client has none" "$tmp/ps0" &&
        grep -q "authentication of client 0 (chief) from $host:[0-9]* failed" "$tmp/ps0" &&
        ok "the ps logged both refusals naming the peer" ||
        { fail "the ps did not log both refusals"; show "$tmp/ps0"; }
    RF_CLUSTER_SECRET_FILE=$tmp/secret start w0 worker --task_index=0 "${common[@]}"
    finish w0 0 && finish ps0 0 && ok "with the secret the job completes after the refusals"
    cluster 1 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    RF_CLUSTER_SECRET_FILE=$tmp/secret start w0 worker --task_index=0 "${common[@]}"
    finish_fail w0 "has no cluster secret but this task has one"
    grep -q "the client has a cluster secret but this ps task has none" "$tmp/ps0" &&
        ok "the ps without a secret logged it" ||
        { fail "the ps without a secret did not log it"; show "$tmp/ps0"; }
    kill "$pid_ps0" 2>/dev/null
    chmod 640 "$tmp/secret"
    cluster 1 1 || return
    RF_CLUSTER_SECRET_FILE=$tmp/secret start ps0 ps --task_index=0 "${common[@]}"
    finish_fail ps0 "has mode 0640: group or others may read or write it"
}

# oracle NPS OPTIM ARGS...: local training vs one worker on NPS ps tasks.
oracle() {
    local nps=$1 optim=$2
    shift 2
    local common=(--steps=25 --optim="$optim" --seed=11 "$@")
    timeout "$(t 60)" "$task" local "${common[@]}" --out="$tmp/local.bin" \
        >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    cluster "$nps" 1 || return
    local i
    for ((i = 0; i < nps; i++)); do
        start "ps$i" ps --task_index=$i "${common[@]}"
    done
    start w0 worker --task_index=0 "${common[@]}" --out="$tmp/dist.bin"
    finish w0 0 || return
    for ((i = 0; i < nps; i++)); do
        finish "ps$i" 0 || return
        grep -q "^ps $i: shut down by the chief" "$tmp/ps$i" ||
            fail "ps $i did not report the chief's shutdown"
    done
    local what="$optim on $nps ps, ${*:-apply=ps}"
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "$what: variables byte-identical to local training ($(stat -c %s "$tmp/dist.bin") bytes; $(grep -m1 "^steps" "$tmp/w0"))"
    else
        fail "$what: variables differ from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
    if [[ "$(grep '^loss' "$tmp/local")" != "$(grep '^loss' "$tmp/w0")" ]]; then
        fail "$what: losses differ: local '$(grep '^loss' "$tmp/local")', worker '$(grep '^loss' "$tmp/w0")'"
    fi
}

case_async() {
    cluster 2 2 || return
    local common=(--steps=1000 --optim=adagrad --seed=5)
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --out="$tmp/v.bin"
    local all=1 n
    for n in w0 w1 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    ok "2 ps x 2 workers: every task exited 0"
    local s0 s1 g
    s0=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w0")
    s1=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w1")
    g=$(sed -n 's/^final global_step \([0-9]*\)$/\1/p' "$tmp/w0")
    if [[ -n $s0 && -n $s1 && -n $g ]] && ((s0 + s1 == g && g >= 1000 && s0 > 0 && s1 > 0)); then
        ok "global_step $g == $s0 (worker 0) + $s1 (worker 1) steps"
    else
        fail "global_step '$g' is not the sum of the steps '$s0' + '$s1'"
        show "$tmp/w0"
    fi
    if awk '/^loss/ { exit !($3 < $2) }' "$tmp/w0"; then
        ok "chief's loss went down: $(grep '^loss' "$tmp/w0")"
    else
        fail "chief's loss did not go down: $(grep '^loss' "$tmp/w0")"
    fi
}

case_refusals() {
    cluster 1 2 || return
    local common=(--steps=40 --optim=adam --seed=3)
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}"
    start bad worker --task_index=1 "${common[@]}" --width=8
    finish bad 3
    if grep -q "hidden/kernel" "$tmp/bad" && grep -qF "[24,16]" "$tmp/bad" &&
        grep -qF "[24,8]" "$tmp/bad"; then
        ok "a worker with another model is refused: $(grep -m1 refused "$tmp/bad")"
    else
        fail "the refusal does not name hidden/kernel, [24,16] and [24,8]"
        show "$tmp/bad"
    fi
    start w1 worker --task_index=1 "${common[@]}"
    local all=1 n
    for n in w1 w0 ps0; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] && ok "the cluster trained on after the refusal (every task exited 0)"

    cluster 1 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --extra_ps_variable
    finish w0 3
    if grep -q "variable 'not_trained' on /job:ps/task:0 is neither trainable nor an optimizer slot" "$tmp/w0"; then
        ok "a variable on a ps that nothing trains is refused: $(grep -m1 refused "$tmp/w0")"
    else
        fail "the untrained ps variable was not refused by name"
        show "$tmp/w0"
    fi
    kill "$pid_ps0" 2>/dev/null # timeout(1) passes the TERM on to the ps
    wait "$pid_ps0" 2>/dev/null
}

case_checkpoint() {
    local common=(--optim=adam --seed=9)
    timeout "$(t 60)" "$task" local "${common[@]}" --steps=40 \
        --out="$tmp/local.bin" >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    local dir=$tmp/ckpt
    mkdir -p "$dir"
    cluster 1 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --steps=20 --save_every=10 \
        --checkpoint_dir="$dir"
    finish w0 0 && finish ps0 0 || return
    if grep -q "^saved $dir/model.ckpt-10.safetensors" "$tmp/w0" &&
        grep -q "^saved $dir/model.ckpt-20.safetensors" "$tmp/w0"; then
        ok "the chief saved at steps 10 and 20"
    else
        fail "no checkpoints at steps 10 and 20"
        show "$tmp/w0"
        return
    fi
    # one byte flipped in the newest checkpoint's last tensor data
    local f=$dir/model.ckpt-20.safetensors size
    size=$(stat -c %s "$f")
    printf '\x5a' | dd of="$f" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
    cluster 2 1 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --steps=40 \
        --checkpoint_dir="$dir" --out="$tmp/dist.bin"
    finish w0 0 && finish ps0 0 && finish ps1 0 || return
    local line
    line=$(grep -m1 '^restored from' "$tmp/w0")
    if [[ $line == "restored from $dir/model.ckpt-10.safetensors"* &&
        $line == *model.ckpt-20* ]]; then
        ok "the corrupt newest checkpoint was skipped: $line"
    else
        fail "restore line: '$line'"
        show "$tmp/w0"
    fi
    if grep -q '^steps 30 global_step 40' "$tmp/w0"; then
        ok "restored at global_step 10, trained 30 steps to 40"
    else
        fail "did not resume from step 10: $(grep -m1 '^steps' "$tmp/w0")"
    fi
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "save on 1 ps, restore on 2 ps: variables byte-identical to 40 local steps"
    else
        fail "variables differ from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
}

# The tolerance of the sync oracles (absolute, on every float of the
# variables, slots and beta powers): the distributed step applies the mean
# of N per-worker means of B rows, local training one mean of N*B rows; they
# differ by float rounding only (each worker's gradient is reduced over B
# rows, then summed and divided by N on the ps, in another order than the
# one reduction over N*B rows), a few ulps of the gradient per step, which
# the optimizer carries on. After 25 steps of Adam on this model the largest
# difference measured was 6e-8 (one ulp of a weight near 0.5) for N=2 and
# N=3; 1e-6 leaves room for other arrival orders without hiding a wrong
# average: an average off by 0.1% gave 6e-5, one that kept a single
# worker's gradient 4e-2.
sync_tolerance=1e-6

# sync_run NPS NW LOCALN ARGS...: local training on LOCALN workers' batches
# vs a sync cluster of NPS ps and NW workers (ARGS go to every worker; a
# worker's own extra arguments in wargs_I). Workers start from the last;
# with late_w1 set, worker 1 only once every other worker's session is
# ready (a backup worker then takes part from step 0). Leaves outputs in
# $tmp.
sync_run() {
    local nps=$1 nw=$2 localn=$3
    shift 3
    local common=(--steps=25 --optim=adam --seed=13)
    timeout "$(t 60)" "$task" local "${common[@]}" --sync_workers="$localn" \
        --out="$tmp/local.bin" >"$tmp/local" 2>&1 || {
        fail "local run on $localn workers' batches failed"
        show "$tmp/local"
        return 1
    }
    cluster "$nps" "$nw" || return 1
    local i
    for ((i = 0; i < nps; i++)); do
        RF_LOG_LEVEL=info start "ps$i" ps --task_index=$i "${common[@]}"
    done
    for ((i = nw - 1; i >= 0; i--)); do
        [[ $i -eq 1 && -n ${late_w1:-} ]] && continue
        local extra=wargs_$i[@]
        start "w$i" worker --task_index=$i "${common[@]}" --sync_replicas "$@" \
            ${!extra+"${!extra}"} $([[ $i -eq 0 ]] && echo --out="$tmp/dist.bin")
    done
    if [[ -n ${late_w1:-} ]]; then
        for ((i = 0; i < nw; i++)); do
            [[ $i -eq 1 ]] && continue
            wait_line "w$i" '^sync session ready at global_step \([0-9]*\)$' >/dev/null ||
                { fail "worker $i's session never became ready"; show "$tmp/w$i"; return 1; }
        done
        start w1 worker --task_index=1 "${common[@]}" --sync_replicas "$@"
    fi
    local all=0
    for ((i = 0; i < nw; i++)); do finish "w$i" 0 || all=1; done
    for ((i = 0; i < nps; i++)); do finish "ps$i" 0 || all=1; done
    return $all
}

# wait_line NAME PATTERN: until task NAME's output has a line matching the
# sed pattern (within 30 s, scaled); prints the line's first group.
wait_line() {
    local i got
    for ((i = 0; i < $(t 30) * 10; i++)); do
        got=$(sed -n "s/$2/\1/p" "$tmp/$1" | head -n 1)
        [[ -n $got ]] && { echo "$got"; return 0; }
        sleep 0.1
    done
    return 1
}

# field FILE KEY: the number after KEY on FILE's "sync" or "steps" lines.
field() { sed -n "s/.*[ ^]$2 \([0-9]*\).*/\1/p" "$1" | head -n 1; }

# sync_compare WHAT: the chief's variables vs the local oracle's.
sync_compare() {
    if timeout "$(t 60)" "$task" compare "$tmp/local.bin" "$tmp/dist.bin" \
        --optim=adam --seed=13 --tolerance=$sync_tolerance >"$tmp/cmp" 2>&1; then
        ok "$1: $(cat "$tmp/cmp")"
    else
        fail "$1: $(tail -n 1 "$tmp/cmp")"
    fi
}

# lockstep NW: every worker ran 25 steps, all 4 gradients of each taken,
# none stale; the chief ended at global_step 25.
lockstep() {
    local i bad=0
    for ((i = 0; i < $1; i++)); do
        local k acc st
        k=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w$i")
        acc=$(field "$tmp/w$i" accepted)
        st=$(field "$tmp/w$i" stale)
        if [[ $k != 25 || $acc != 100 || $st != 0 ]]; then
            fail "worker $i: $k steps, $acc gradients taken, $st stale (want 25, 100, 0)"
            bad=1
        fi
    done
    [[ $bad -eq 0 ]] && ok "$1 workers in lockstep: 25 steps each, every gradient taken, none stale"
    grep -q '^final global_step 25$' "$tmp/w0" || fail "final global_step: $(grep '^final' "$tmp/w0")"
}

case_sync_oracle() {
    sync_run 1 1 1 || return
    if cmp -s "$tmp/local.bin" "$tmp/dist.bin"; then
        ok "1 worker, replicas_to_aggregate=1: byte-identical to local training"
    else
        fail "1 worker, replicas_to_aggregate=1 differs from local training: $(cmp "$tmp/local.bin" "$tmp/dist.bin" 2>&1 | head -n 1)"
    fi
    lockstep 1
    sync_run 2 2 2 || return
    sync_compare "2 ps x 2 workers, replicas_to_aggregate=2 vs local on both workers' batches"
    lockstep 2
    sync_run 1 3 3 --replicas_to_aggregate=3 --total_num_replicas=3 || return
    sync_compare "1 ps x 3 workers, replicas_to_aggregate=3 vs local on the 3 workers' batches"
    lockstep 3
}

case_sync_stale() {
    # workers 0 and 2 first: the chief cannot pass step 0 alone (worker 2
    # never helps), so worker 2 is there from the start
    wargs_2=(--push_stale)
    late_w1=1
    sync_run 2 3 2 --replicas_to_aggregate=2 --total_num_replicas=3 || return
    unset wargs_2 late_w1
    sync_compare "N=2 of M=3, worker 2 always stale: variables vs local on workers 0 and 1"
    local k2 acc2 st2 i
    k2=$(sed -n 's/^steps \([0-9]*\) .*/\1/p' "$tmp/w2")
    acc2=$(field "$tmp/w2" accepted)
    st2=$(field "$tmp/w2" stale)
    if [[ -n $k2 && $k2 -gt 0 && $acc2 == 0 && $st2 == $((4 * k2)) ]]; then
        ok "worker 2: $k2 runs, all $st2 of its gradients dropped as stale"
    else
        fail "worker 2: $k2 runs, $acc2 taken, $st2 stale (want all 4 per run stale)"
        show "$tmp/w2"
    fi
    for i in 0 1; do
        [[ $(field "$tmp/w$i" stale) == 0 && $(field "$tmp/w$i" accepted) == 100 ]] ||
            fail "worker $i: $(grep '^sync' "$tmp/w$i") (want 100 taken, 0 stale)"
    done
    local onps
    onps=$(field "$tmp/w0" stale_on_ps)
    if [[ $onps == "$st2" ]]; then
        ok "the shards' stale counters (READ by the chief) sum to $onps, worker 2's dropped gradients"
    else
        fail "the shards' stale counters sum to '$onps', worker 2 had $st2 dropped"
    fi
    local logged
    logged=$(sed -n 's/.*sync replicas .* \([0-9]*\) dropped as stale.*/\1/p' "$tmp/ps0" "$tmp/ps1" |
        awk '{ s += $1 } END { print s + 0 }')
    if [[ $logged == "$st2" ]]; then
        ok "the ps tasks' shutdown lines count $logged stale gradients"
    else
        fail "the ps tasks' shutdown lines count '$logged' stale gradients, want $st2"
        show "$tmp/ps0"
    fi
    grep -q '^final global_step 25$' "$tmp/w0" || fail "final global_step: $(grep '^final' "$tmp/w0")"
}

case_sync_backup() {
    # workers 0 and 2 train steps 0-4 (2 of 3 needed); worker 2 stops
    # itself at step 5, where the chief waits until worker 1 starts; the
    # chief and worker 1 train on to 30
    cluster 1 3 || return
    local common=(--steps=30 --optim=adagrad --seed=17 --sync_replicas
        --replicas_to_aggregate=2 --total_num_replicas=3
        --op_timeout_ms=$(($(t 6) * 1000)))
    start ps0 ps --task_index=0 "${common[@]}"
    start w2 worker --task_index=2 "${common[@]}" --stop_at_step=5
    start w0 worker --task_index=0 "${common[@]}"
    local pid
    if ! pid=$(wait_line w2 '^stopping at step 5 pid \([0-9]*\)$'); then
        fail "worker 2 never reached step 5"
        show "$tmp/w2"
        return
    fi
    start w1 worker --task_index=1 "${common[@]}"
    sleep 0.2
    local state
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null)
    if [[ $state == T ]]; then
        ok "worker 2 (pid $pid) is stopped (SIGSTOP) at step 5"
    else
        fail "worker 2 (pid $pid) is in state '$state', not stopped"
    fi
    local all=1 n
    for n in w1 w0 ps0; do finish "$n" 0 || all=0; done
    if [[ $all -eq 1 ]] && grep -q '^final global_step 30$' "$tmp/w0"; then
        ok "with worker 2 stopped, the others reached global_step 30 and every other task exited 0"
    else
        fail "the job did not complete without the stopped worker: $(grep '^final' "$tmp/w0")"
    fi
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null)
    [[ $state == T ]] || fail "worker 2 was not stopped all along (state '$state')"
    backup_not_waited 2 "$pid"
}

case_sync_restore() {
    local common=(--optim=adam --seed=13)
    timeout "$(t 60)" "$task" local "${common[@]}" --steps=25 --sync_workers=2 \
        --out="$tmp/local.bin" >"$tmp/local" 2>&1 || {
        fail "local run failed"
        show "$tmp/local"
        return
    }
    local dir=$tmp/ckpt
    mkdir -p "$dir"
    cluster 1 2 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}" --sync_replicas --steps=10
    start w0 worker --task_index=0 "${common[@]}" --sync_replicas --steps=10 \
        --save_every=10 --checkpoint_dir="$dir"
    finish w0 0 && finish w1 0 && finish ps0 0 || return
    grep -q "^saved $dir/model.ckpt-10.safetensors" "$tmp/w0" || {
        fail "no checkpoint at step 10"
        show "$tmp/w0"
        return
    }
    cluster 2 2 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start ps1 ps --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}" --sync_replicas --steps=25
    start w0 worker --task_index=0 "${common[@]}" --sync_replicas --steps=25 \
        --checkpoint_dir="$dir" --out="$tmp/dist.bin"
    local all=1 n
    for n in w0 w1 ps0 ps1; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return
    if grep -q "^restored from $dir/model.ckpt-10.safetensors" "$tmp/w0" &&
        grep -q '^steps 15 global_step 25' "$tmp/w0" &&
        grep -q '^steps 15 global_step 25' "$tmp/w1"; then
        ok "restored at global_step 10 on 2 ps; both workers tagged from 10 and ran 15 steps to 25"
    else
        fail "restore: $(grep -m1 '^restored' "$tmp/w0"); chief $(grep -m1 '^steps' "$tmp/w0"); worker 1 $(grep -m1 '^steps' "$tmp/w1")"
    fi
    sync_compare "saved at 10 on 1 ps, restored on 2 ps, trained to 25 vs 25 local steps on both workers' batches"
}

# refused NAME WANT ARGS...: a worker that rf_session_create refuses (exit
# 3) with a message containing WANT.
refused() {
    local name=$1 want=$2
    shift 2
    start "$name" worker "$@"
    finish "$name" 3 || return
    if grep -qF -- "$want" "$tmp/$name"; then
        ok "$name: $(grep -m1 refused "$tmp/$name")"
    else
        fail "$name: the refusal does not say '$want'"
        show "$tmp/$name"
    fi
}

case_sync_refusals() {
    cluster 1 2 || return
    local common=(--steps=20 --optim=adam --seed=3)
    # before anything connects: no ps is running yet
    refused n_gt_m "replicas_to_aggregate=3 exceeds total_num_replicas=2" \
        --task_index=0 "${common[@]}" --sync_replicas --replicas_to_aggregate=3
    refused m_gt_w "total_num_replicas=3 but the cluster has 2 training workers" \
        --task_index=1 "${common[@]}" --sync_replicas --total_num_replicas=3
    refused m_lt_w "total_num_replicas=1 but all 2 training workers" \
        --task_index=1 "${common[@]}" --sync_replicas --replicas_to_aggregate=1 \
        --total_num_replicas=1
    refused negative "replicas_to_aggregate -1, total_num_replicas 0: negative" \
        --task_index=0 "${common[@]}" --sync_replicas --replicas_to_aggregate=-1
    refused with_worker "apply=worker cannot be combined with it" \
        --task_index=0 "${common[@]}" --sync_replicas --apply=worker
    # a running cluster whose shards aggregate 2 of 2
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --sync_replicas
    refused other_n "this worker's graph has shape [24,16] float32" \
        --task_index=1 "${common[@]}" --sync_replicas --replicas_to_aggregate=1
    grep -qF "sync replicas (replicas_to_aggregate=1, total_num_replicas=2)" "$tmp/other_n" &&
        grep -qF "sync replicas (replicas_to_aggregate=2, total_num_replicas=2)" "$tmp/other_n" ||
        fail "the sync mismatch does not name both configs: $(grep -m1 refused "$tmp/other_n")"
    refused async "no sync replicas" --task_index=1 "${common[@]}"
    start w1 worker --task_index=1 "${common[@]}" --sync_replicas
    local all=1 n
    for n in w1 w0 ps0; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] && grep -q '^final global_step 20$' "$tmp/w0" &&
        ok "the sync cluster trained on after the refusals (global_step 20, every task exited 0)"
    # the wait for the step is bounded: a chief whose second worker never
    # comes fails its first run with RF_ERR_UNAVAILABLE naming who is
    # missing, once the step waited op_timeout_ms (sync_max_wait_ms 0)
    # with fewer than replicas_to_aggregate workers connected
    cluster 1 2 || return
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}" --sync_replicas \
        --op_timeout_ms=$(($(t 2) * 1000))
    finish w0 1
    if grep -q "RF_ERR_UNAVAILABLE" "$tmp/w0" &&
        grep -qF "only 1 of 2 workers connected (missing: /job:worker/task:1)" "$tmp/w0" &&
        grep -qF "no step can complete: 1 of 2 workers connected, step 0 needs replicas_to_aggregate=2; missing /job:worker/task:1" "$tmp/w0"; then
        ok "alone, the chief's wait for step 0 ended naming the missing worker: $(grep -o 'sync_replicas: no step can complete.*)' "$tmp/w0" | head -n 1)"
    else
        fail "the chief alone did not end naming the missing worker"
        show "$tmp/w0"
    fi
    kill "$pid_ps0" 2>/dev/null # timeout(1) passes the TERM on to the ps
    wait "$pid_ps0" 2>/dev/null
}

# ssp_run K SLOW [FAST_ARGS...]: 1 ps x 2 workers, SSP_STEPS steps each;
# worker SLOW (0 or 1) sleeps SSP_SLEEP ms before each step, the other (the
# fast one, with FAST_ARGS) does not. Leaves $tmp/rec_fast, $tmp/rec_slow and
# the fast worker's output in $tmp/fast.
SSP_SLEEP=25
SSP_STEPS=20
ssp_run() {
    local k=$1 slow=$2
    shift 2
    cluster 1 2 || return
    local common=(--optim=adagrad --seed=5 --my_steps=$SSP_STEPS --staleness="$k"
        --staleness_wait_ms=$(($(t 30) * 1000)))
    start ps0 ps --task_index=0 "${common[@]}"
    local w
    for w in 0 1; do
        if ((w == slow)); then
            start "w$w" worker --task_index=$w "${common[@]}" \
                --record="$tmp/rec_slow" --sleep_ms=$SSP_SLEEP
        else
            start "w$w" worker --task_index=$w "${common[@]}" \
                --record="$tmp/rec_fast" "$@"
        fi
    done
    local all=1 n
    for n in w0 w1 ps0; do finish "$n" 0 || all=0; done
    [[ $all -eq 1 ]] || return 1
    cp "$tmp/w$((1 - slow))" "$tmp/fast"
    grep -q "^final global_step $((2 * SSP_STEPS))\$" "$tmp/w0" ||
        { fail "staleness $k: $(grep -m1 '^final' "$tmp/w0"), want $((2 * SSP_STEPS))"; return 1; }
}

# ssp_ahead K: how many of the slow worker's steps s had the fast worker's
# step s+K+1 end before the slow one could have finished s (its call time
# + the sleep).
ssp_ahead() {
    awk -v k="$1" -v sleep_ns=$((SSP_SLEEP * 1000000)) '
        FNR == NR { fast_end[$1] = $3; nf = $1; next }
        { slow_done[$1] = $2 + sleep_ns; ns = $1 }
        END {
            bad = 0
            for (s = 1; s <= ns && s + k + 1 <= nf; s++)
                if (fast_end[s + k + 1] <= slow_done[s]) bad++
            print bad
        }' "$tmp/rec_fast" "$tmp/rec_slow"
}

# ssp_check K WHAT: the bound held and the fast worker waited.
ssp_check() {
    local k=$1 what=$2 ahead waits
    ahead=$(ssp_ahead "$k")
    waits=$(sed -n 's/^ssp waits \([0-9]*\) .*/\1/p' "$tmp/fast" | awk '{ n += $1 } END { print n + 0 }')
    if [[ $ahead == 0 ]]; then
        ok "staleness $k, $what: the fast worker never ran more than $k steps ahead of the slow one ($(grep '^ssp' "$tmp/fast" | tr '\n' ' '))"
    else
        fail "staleness $k, $what: the fast worker's step s+$((k + 1)) ended before the slow one finished s for $ahead steps"
    fi
    if ((waits > 0)); then
        ok "staleness $k, $what: the fast worker waited in $waits steps"
    else
        fail "staleness $k, $what: the fast worker never waited: $(grep '^ssp' "$tmp/fast")"
    fi
}

case_ssp() {
    local k ahead
    for k in 1 0; do
        ssp_run "$k" 1 || return
        ssp_check "$k" "worker 1 slow"
        grep -q '^ssp waits' "$tmp/w1" || fail "worker 1 printed no ssp line"
    done
    # a worker whose session is recreated (as a restarted worker's) keeps
    # the bound: it continues from its clock word. A clock restarted from 0
    # would let its first step after the recreation run ahead (the word's
    # FETCH_AND_ADD corrects it after that step): the slow worker's long
    # sleep here makes that one step show even when the recreation itself
    # takes most of it (a planted reset failed this check).
    SSP_SLEEP=300 SSP_STEPS=16
    ssp_run 1 0 --recreate_at=10 || return
    grep -q '^session recreated after step 10$' "$tmp/fast" ||
        fail "worker 1 did not recreate its session"
    ssp_check 1 "worker 0 slow, worker 1's session recreated after step 10"
    SSP_SLEEP=25 SSP_STEPS=20
    ssp_run -1 1 || return
    ahead=$(ssp_ahead 1)
    if [[ -n $ahead ]] && ((ahead > 0)); then
        ok "staleness -1: the fast worker got more than 1 step ahead ($ahead of the slow worker's steps)"
    else
        fail "staleness -1: the fast worker never got more than 1 step ahead: the check cannot fail"
    fi
    grep -q '^ssp waits 0 ' "$tmp/fast" || fail "staleness -1: $(grep '^ssp' "$tmp/fast")"
}

case_ssp_finish() {
    local steps0 steps1
    for steps0 in 30 5; do
        steps1=$((35 - steps0))
        cluster 1 2 || return
        local common=(--optim=adagrad --seed=5 --staleness=1
            --staleness_wait_ms=$(($(t 5) * 1000)))
        start ps0 ps --task_index=0 "${common[@]}"
        start w0 worker --task_index=0 "${common[@]}" --my_steps=$steps0
        start w1 worker --task_index=1 "${common[@]}" --my_steps=$steps1
        local all=1 n
        for n in w0 w1 ps0; do finish "$n" 0 || all=0; done
        if [[ $all -eq 1 ]] && grep -q '^final global_step 35$' "$tmp/w0"; then
            ok "worker 0 $steps0 steps, worker 1 $steps1: the one that finished first held nobody (global_step 35)"
        else
            fail "worker 0 $steps0 steps, worker 1 $steps1: $(grep -m1 '^final' "$tmp/w0")"
        fi
    done
    # alone (worker 1 never comes), K=0: the chief's second step waits for
    # worker 1's clock and times out naming it and both clocks
    cluster 1 2 || return
    local common=(--optim=adagrad --seed=5 --staleness=0 --my_steps=3
        --staleness_wait_ms=1000)
    start ps0 ps --task_index=0 "${common[@]}"
    start w0 worker --task_index=0 "${common[@]}"
    finish w0 1
    if grep -q "RF_ERR_TIMEOUT\|waited 1000 ms" "$tmp/w0" &&
        grep -qF "slowest training worker, /job:worker/task:1 at clock 0" "$tmp/w0" &&
        grep -qF "is at clock 1, more than staleness 0 ahead" "$tmp/w0"; then
        ok "alone, the chief's wait timed out: $(grep -o 'stale synchronous parallel: waited.*ahead' "$tmp/w0" | head -n 1)"
    else
        fail "alone, the chief's wait did not time out naming worker 1 and the clocks"
        show "$tmp/w0"
    fi
    kill "$pid_ps0" 2>/dev/null
    wait "$pid_ps0" 2>/dev/null
}

case_ssp_refusals() {
    cluster 1 2 || return
    local common=(--steps=20 --optim=adagrad --seed=3)
    refused ssp_sync "staleness 1 (stale synchronous parallel) is for async training" \
        --task_index=0 "${common[@]}" --staleness=1 --sync_replicas
    refused ssp_negative "staleness -2; want -1 (off) or a bound >= 0" \
        --task_index=0 "${common[@]}" --staleness=-2
    refused ssp_wait "staleness_wait_ms -5; want >= 0" \
        --task_index=1 "${common[@]}" --staleness=1 --staleness_wait_ms=-5
}

case $case_name in
oracle_ps)
    oracle 1 adam
    oracle 2 adam
    oracle 1 momentum
    ;;
oracle_worker)
    oracle 1 adam --apply=worker
    oracle 2 adam --apply=worker
    oracle 2 rmsprop --apply=worker
    ;;
oracle_locking)
    oracle 1 adam --apply=worker --use_locking
    oracle 2 adagrad --apply=worker --use_locking
    ;;
async) case_async ;;
refusals) case_refusals ;;
checkpoint) case_checkpoint ;;
sync_oracle) case_sync_oracle ;;
sync_stale) case_sync_stale ;;
sync_backup) case_sync_backup ;;
sync_restore) case_sync_restore ;;
sync_refusals) case_sync_refusals ;;
secret) case_secret ;;
emb_oracle_ps)
    for o in sgd adagrad ftrl momentum adam; do
        oracle 2 "$o" "${emb[@]}"
    done
    ;;
emb_oracle_worker)
    for o in sgd adagrad ftrl momentum; do
        oracle 2 "$o" "${emb[@]}" --apply=worker
    done
    ;;
emb_async) case_emb_async ;;
emb_bad_ids) case_emb_bad_ids ;;
emb_checkpoint) case_emb_checkpoint ;;
emb_sync) case_emb_sync ;;
emb_sync_backup) case_emb_sync_backup ;;
emb_memory) case_emb_memory ;;
emb_lookup_ways) case_emb_lookup_ways ;;
ssp) case_ssp ;;
ssp_finish) case_ssp_finish ;;
ssp_refusals) case_ssp_refusals ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
