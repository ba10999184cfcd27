#!/usr/bin/env bash
# tests/integration/launchers/launchers_test.sh CASE RF_TRAINER RF_LAUNCH:
# rf-trainer's tasks started by the launchers users have (see
# CMakeLists.txt): Debian's mpirun (4 ranks, --num_ps 2), Slurm's variables
# set by hand as srun would (no slurmd), on 127.0.0.1; a ps listening on
# 0.0.0.0 (--bind_addr, RF_BIND_ADDR); cluster hosts that never resolve
# (--max_wait_secs). Those that train run a few
# hundred steps to completion; the checks are on what each rank became and
# on the run's end (global_step, accuracy line, ps tasks shut down).
# Exits 0 on success, 1 on failure, 77 without the Fashion-MNIST dataset.
set -uo pipefail
case_name=${1:?case}
trainer=${2:?path to rf-trainer}
launch=${3:?path to rf-launch}
helper=${4:-}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=127.0.0.1
tmp=$(mktemp -d)
pids=()
sshd_pid=
cleanup() {
    local p
    [[ -n $sshd_pid ]] && kill "$sshd_pid" 2>/dev/null
    for p in "${pids[@]}"; do
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
unset TF_CONFIG SLURM_PROCID SLURM_NTASKS SLURM_STEP_NUM_TASKS \
    SLURM_JOB_NODELIST SLURM_STEP_NODELIST SLURM_NODELIST \
    SLURM_TASKS_PER_NODE SLURM_STEP_TASKS_PER_NODE SLURM_NTASKS_PER_NODE \
    SLURM_LOCALID SLURMD_NODENAME \
    OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMIX_RANK RF_MPI_HOSTS
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

# Few steps, small batches: the point is who talks to whom.
train=(--train_steps=300 --batch_size=100 --log_every=100
    --log_step_count_steps=100 --threads=1 --max_wait_secs="$(t 60)")

need_data() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

# expect FILE PATTERN WHAT: a line of FILE matches the extended regex.
expect() {
    if grep -Eq -- "$2" "$1"; then
        ok "$3"
    else
        fail "$3: no line matching /$2/ in $1:"
        show "$1" 25
    fi
}

# check_cluster PREFIX_FMT BASE: the 4 tasks' outputs (PREFIX_FMT turns a
# rank into its lines' prefix, a sed regex) show ranks 0-1 as ps 0-1 on
# BASE, BASE+1 and ranks 2-3 as workers 0 (chief) and 1; training ended.
check_cluster() {
    local out=$1 pfx=$2 base=$3
    expect "$out" "^$(printf "$pfx" 0)\[ps0\] ps task 0: serving on $host:$base " \
        "rank 0 is ps task 0 on port $base"
    expect "$out" "^$(printf "$pfx" 1)\[ps1\] ps task 1: serving on $host:$((base + 1)) " \
        "rank 1 is ps task 1 on port $((base + 1))"
    expect "$out" "^$(printf "$pfx" 2)\[worker0\] worker 0 of 2 workers \(chief\), 2 ps tasks" \
        "rank 2 is worker 0, the chief"
    expect "$out" "^$(printf "$pfx" 3)\[worker1\] worker 1 of 2 workers, 2 ps tasks" \
        "rank 3 is worker 1"
    local gs
    gs=$(sed -n "s/^$(printf "$pfx" 2)\[worker0\] global_step at the end: \([0-9]*\)$/\1/p" "$out")
    if [[ -n $gs && $gs -ge 300 ]]; then
        ok "the chief saw global_step $gs >= 300 at the end"
    else
        fail "global_step at the end: '${gs}' (want >= 300)"
        show "$out" 25
    fi
    expect "$out" "^$(printf "$pfx" 2)\[worker0\] test accuracy: 0\.[5-9]" \
        "the chief evaluated the trained model"
    expect "$out" "^$(printf "$pfx" 0)\[ps0\] ps task 0: shut down by the chief" \
        "ps 0 shut down by the chief"
    expect "$out" "^$(printf "$pfx" 1)\[ps1\] ps task 1: shut down by the chief" \
        "ps 1 shut down by the chief"
}

mpirun_cmd() {
    # as root mpirun needs --allow-run-as-root; 4 ranks on 2 cores need
    # --oversubscribe; only loopback
    timeout "$(t 90)" mpirun --allow-run-as-root --oversubscribe \
        --bind-to none --tag-output -np 4 --mca btl self \
        --mca oob_tcp_if_include lo "$@"
}

case_mpirun() {
    need_data
    command -v mpirun >/dev/null || {
        fail "no mpirun (package openmpi-bin: tools/rf-setup deps)"
        return
    }
    local base out=$tmp/mpirun.out rc
    free_port_range base 4 || {
        fail "no 4 free consecutive ports"
        return
    }
    mpirun_cmd "$trainer" --num_ps=2 --port_base="$base" "${train[@]}" \
        >"$out" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "mpirun -np 4 rf-trainer --num_ps=2: exit 0" ||
        fail "mpirun -np 4: exit $rc"
    check_cluster "$out" '\\[1,%d\\]<stdout>:' "$base"

    # every rank a ps: a usage error naming the flag, exit 2 in each rank
    mpirun_cmd "$trainer" --num_ps=4 --port_base="$base" >"$out" 2>&1
    rc=$?
    [[ $rc == 2 ]] && ok "--num_ps=4 of 4 ranks: exit 2" ||
        fail "--num_ps=4 of 4 ranks: exit $rc (want 2)"
    expect "$out" "rf-trainer: --num_ps: 4 ps tasks leave no worker among the 4 tasks of MPI \(OMPI_COMM_WORLD_RANK [0-3] of OMPI_COMM_WORLD_SIZE 4" \
        "the message names --num_ps and the MPI variables"
}

case_slurm() {
    need_data
    local base out=$tmp/slurm.out rc r
    free_port_range base 4 || {
        fail "no 4 free consecutive ports"
        return
    }
    # srun -n4 on one node: the step's variables, a bracketed node list
    for r in 0 1 2 3; do
        SLURM_PROCID=$r SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=4 \
            SLURM_JOB_NODELIST=127.0.0.[1] SLURM_STEP_NODELIST=127.0.0.[1] \
            SLURM_TASKS_PER_NODE=4 SLURM_STEP_TASKS_PER_NODE=4 \
            timeout "$(t 90)" "$trainer" --num_ps=2 --port_base="$base" \
            "${train[@]}" >"$tmp/slurm.$r" 2>&1 &
        pids+=($!)
    done
    rc=0
    for r in 0 1 2 3; do
        wait "${pids[$r]}" || rc=1
    done
    pids=()
    for r in 0 1 2 3; do
        sed "s/^/[$r] /" "$tmp/slurm.$r"
    done >"$out"
    [[ $rc == 0 ]] && ok "4 tasks with SLURM_PROCID 0-3: all exit 0" ||
        fail "a task with SLURM_PROCID failed"
    check_cluster "$out" '\\[%d\\] ' "$base"

    # a partial Slurm environment: exit 2 naming the missing variables
    SLURM_PROCID=0 SLURM_JOB_NODELIST=127.0.0.1 "$trainer" --num_ps=1 \
        >"$out" 2>&1
    rc=$?
    [[ $rc == 2 ]] && ok "SLURM_PROCID without SLURM_NTASKS: exit 2" ||
        fail "SLURM_PROCID without SLURM_NTASKS: exit $rc (want 2)"
    expect "$out" "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is" \
        "the message names the variables"
}

# A ps whose cluster address is 127.0.0.2 (loopback, but not 127.0.0.1)
# listens on 0.0.0.0 with --bind_addr (ps 0) or RF_BIND_ADDR (ps 1); the
# worker's cluster names them 127.0.0.1, so it reaches them only through
# the wildcard listener. Without it the same worker cannot connect.
case_bind_addr() {
    need_data
    local p0 p1 w out=$tmp/bind.out rc ps_spec wk_spec
    free_port p0 && free_port p1 && free_port w || {
        fail "no free ports"
        return
    }
    ps_spec=(--ps_hosts=127.0.0.2:$p0,127.0.0.2:$p1 --worker_hosts=$host:$w)
    wk_spec=(--ps_hosts=$host:$p0,$host:$p1 --worker_hosts=$host:$w)
    "$trainer" "${ps_spec[@]}" --job_name=ps --task_index=0 \
        --bind_addr=0.0.0.0 "${train[@]}" >"$tmp/ps0" 2>&1 &
    pids+=($!)
    RF_BIND_ADDR=0.0.0.0 "$trainer" "${ps_spec[@]}" --job_name=ps \
        --task_index=1 "${train[@]}" >"$tmp/ps1" 2>&1 &
    pids+=($!)
    timeout "$(t 90)" "$trainer" "${wk_spec[@]}" --job_name=worker \
        --task_index=0 "${train[@]}" >"$out" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "the worker trained through 127.0.0.1: exit 0" ||
        fail "the worker: exit $rc"
    expect "$out" "^\[worker0\] global_step at the end: 3[0-9][0-9]$" "training ended"
    wait "${pids[0]}" && wait "${pids[1]}" && ok "both ps tasks exit 0" ||
        fail "a ps task failed"
    pids=()
    expect "$tmp/ps0" "^\[ps0\] ps task 0: serving on 127\.0\.0\.2:$p0, listening on 0\.0\.0\.0 " \
        "ps 0 (--bind_addr) says where it listens"
    expect "$tmp/ps1" "^\[ps1\] ps task 1: serving on 127\.0\.0\.2:$p1, listening on 0\.0\.0\.0 " \
        "ps 1 (RF_BIND_ADDR) says where it listens"
    expect "$tmp/ps0" "^\[ps0\] ps task 0: shut down by the chief" "ps 0 shut down"

    # the control: listening on its cluster address only, the ps is out of
    # the worker's reach (the run above depended on the bind address)
    "$trainer" --ps_hosts=127.0.0.2:$p0 --worker_hosts=$host:$w \
        --job_name=ps --task_index=0 "${train[@]}" >"$tmp/ps0" 2>&1 &
    pids+=($!)
    timeout "$(t 60)" "$trainer" --ps_hosts=$host:$p0 --worker_hosts=$host:$w \
        --job_name=worker --task_index=0 "${train[@]}" --max_wait_secs=3 \
        >"$out" 2>&1
    rc=$?
    [[ $rc == 138 ]] && ok "without a bind address the worker fails: exit 138" ||
        fail "without a bind address: exit $rc (want 138)"
    expect "$tmp/ps0" "^\[ps0\] ps task 0: serving on 127\.0\.0\.2:$p0 \(" \
        "that ps listened on its cluster address"
}

# Cluster hosts that never resolve: after --max_wait_secs a worker names
# its ps's host, a ps its own; exit 138 (retryable: the name may appear
# later, as a Kubernetes pod's does).
case_unresolved() {
    local w out=$tmp/unres.out rc
    free_port w || {
        fail "no free port"
        return
    }
    timeout "$(t 60)" "$trainer" --ps_hosts=rf-never-ps.invalid:2222 \
        --worker_hosts=$host:$w --job_name=worker --task_index=0 \
        --max_wait_secs=2 >"$out" 2>&1
    rc=$?
    [[ $rc == 138 ]] && ok "a worker whose ps never resolves: exit 138" ||
        fail "a worker whose ps never resolves: exit $rc (want 138)"
    expect "$out" 'cannot resolve host "rf-never-ps\.invalid" of /job:ps/task:0 \(rf-never-ps\.invalid:2222\) within 2 s \(max_wait_secs\)' \
        "the message names the host, its task and the wait"
    timeout "$(t 60)" "$trainer" --ps_hosts=rf-never-self.invalid:2222 \
        --worker_hosts=$host:$w --job_name=ps --task_index=0 \
        --max_wait_secs=2 >"$out" 2>&1
    rc=$?
    [[ $rc == 138 ]] && ok "a ps whose own host never resolves: exit 138" ||
        fail "a ps whose own host never resolves: exit $rc (want 138)"
    expect "$out" 'cannot resolve host "rf-never-self\.invalid" of /job:ps/task:0 \(rf-never-self\.invalid:2222\) within 2 s' \
        "the message names the ps's own host"
}

# TF_CONFIG as TFJob sets it with a chief and an evaluator: the chief job's
# task is the chief (worker 0 is not), the evaluator is outside the
# training cluster (TFJob leaves it out) and evaluates the chief's
# checkpoints until the last; without --checkpoint_dir it is a usage error.
case_tf_config_roles() {
    need_data
    local pp cp wp out=$tmp/roles.out rc ck=$tmp/ckpt cl
    free_port pp && free_port cp && free_port wp || {
        fail "no free ports"
        return
    }
    cl="\"cluster\": {\"ps\": [\"$host:$pp\"], \"chief\": [\"$host:$cp\"], \"worker\": [\"$host:$wp\"]}"
    local args=("${train[@]}" --checkpoint_dir="$ck" --save_checkpoint_steps=100)
    TF_CONFIG="{$cl, \"task\": {\"type\": \"ps\", \"index\": 0}}" \
        "$trainer" "${args[@]}" >"$tmp/ps" 2>&1 &
    pids+=($!)
    TF_CONFIG="{$cl, \"task\": {\"type\": \"chief\", \"index\": 0}}" \
        "$trainer" "${args[@]}" >"$tmp/chief" 2>&1 &
    pids+=($!)
    TF_CONFIG="{$cl, \"task\": {\"type\": \"worker\", \"index\": 0}}" \
        "$trainer" "${args[@]}" >"$tmp/worker" 2>&1 &
    pids+=($!)
    TF_CONFIG="{$cl, \"task\": {\"type\": \"evaluator\", \"index\": 0}}" \
        timeout "$(t 90)" "$trainer" "${args[@]}" >"$tmp/eval" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "the evaluator: exit 0" || fail "the evaluator: exit $rc"
    local k name
    for k in 0 1 2; do
        name=(ps chief worker)
        wait "${pids[$k]}" && ok "${name[$k]}: exit 0" ||
            fail "${name[$k]}: exit $?"
    done
    pids=()
    expect "$tmp/chief" "^\[chief\] chief 0 of 2 workers \(chief\), 1 ps task" \
        "the chief job's task is the chief"
    expect "$tmp/chief" "^\[chief\] /job:chief/task:0: session ready: initialised the variables" \
        "the chief initialised the variables"
    expect "$tmp/worker" "^\[worker0\] worker 0 of 2 workers, 1 ps task" \
        "worker 0 trains and is not the chief"
    expect "$tmp/worker" "^\[worker0\] /job:worker/task:0: session ready: joined" \
        "worker 0 waited for the chief's variables"
    expect "$tmp/chief" "^\[chief\] chief: ps tasks shut down" "the chief shut the ps down"
    expect "$tmp/eval" "^\[evaluator0\] evaluator 0: not in the training cluster" \
        "the evaluator does not join the training cluster"
    expect "$tmp/eval" "^\[evaluator0\] evaluator 0: .*model\.ckpt-[0-9]+\.safetensors \(global_step [0-9]+\)$" \
        "the evaluator evaluated a checkpoint"
    expect "$tmp/eval" "^\[evaluator0\] test accuracy: 0\.[5-9]" "with a test accuracy"
    expect "$tmp/eval" "^\[evaluator0\] evaluator 0: done: global_step 3[0-9][0-9] reached --train_steps$" \
        "it stopped after the last checkpoint"

    TF_CONFIG="{$cl, \"task\": {\"type\": \"evaluator\", \"index\": 0}}" \
        "$trainer" >"$out" 2>&1
    rc=$?
    [[ $rc == 2 ]] && ok "an evaluator without --checkpoint_dir: exit 2" ||
        fail "an evaluator without --checkpoint_dir: exit $rc (want 2)"
    expect "$out" "^\[evaluator0\] rf-trainer: --checkpoint_dir: required for the evaluator task" \
        "the message names --checkpoint_dir"
}

# start_sshd: Debian's sshd on a free loopback port with its own config,
# host key and authorized key in $tmp/ssh (root logs in with the key);
# sets ssh_cmd (the --ssh value). A failure to start is a test failure.
start_sshd() {
    local d=$tmp/ssh sp i
    command -v ssh >/dev/null && [[ -x /usr/sbin/sshd ]] || {
        fail "no ssh or /usr/sbin/sshd (packages openssh-client, openssh-server: tools/rf-setup deps)"
        return 1
    }
    mkdir -p "$d" && chmod 700 "$d"
    ssh-keygen -q -t ed25519 -N '' -f "$d/host_key" &&
        ssh-keygen -q -t ed25519 -N '' -f "$d/id" &&
        cp "$d/id.pub" "$d/authorized_keys" || {
        fail "ssh-keygen failed"
        return 1
    }
    free_port sp || {
        fail "no free port for sshd"
        return 1
    }
    cat >"$d/sshd_config" <<EOC
Port $sp
ListenAddress 127.0.0.1
HostKey $d/host_key
AuthorizedKeysFile $d/authorized_keys
PidFile $d/sshd.pid
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
PrintMotd no
EOC
    # the privilege separation directory (missing where no sshd ever ran)
    mkdir -p /run/sshd 2>/dev/null
    /usr/sbin/sshd -D -e -f "$d/sshd_config" 2>"$d/log" &
    sshd_pid=$!
    ssh_cmd="ssh -F /dev/null -p $sp -i $d/id -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    for ((i = 0; i < 100; i++)); do
        kill -0 "$sshd_pid" 2>/dev/null || break
        if $ssh_cmd 127.0.0.1 true 2>/dev/null; then
            ok "sshd on 127.0.0.1:$sp accepts our key"
            return 0
        fi
        sleep 0.2
    done
    fail "sshd did not start on 127.0.0.1:$sp:"
    show "$d/log"
    return 1
}

stop_sshd() {
    [[ -n ${sshd_pid:-} ]] || return
    kill "$sshd_pid" 2>/dev/null
    wait "$sshd_pid" 2>/dev/null
    sshd_pid=
}

# rf-launch --hostfile over ssh to this machine under two names: a
# trainer's ps and worker, then a failing task that stops the others
# (their remote processes too), then the TF_CONFIG the remote tasks get.
case_hostfile() {
    need_data
    start_sshd || return
    local hf=$tmp/hosts out=$tmp/hostfile.out rc m=rf-hostfile-$$-$RANDOM
    printf '# two names for this machine\n127.0.0.1 slots=1\n\nlocalhost   # the worker\n' >"$hf"
    mkdir -p "$tmp/tokens"
    RF_TOKEN_DIR=$tmp/tokens timeout "$(t 120)" "$launch" --hostfile "$hf" \
        --ssh "$ssh_cmd" --ps 1 --workers 1 -- "$trainer" "${train[@]}" >"$out" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "rf-launch --hostfile (127.0.0.1, localhost): exit 0" ||
        fail "rf-launch --hostfile: exit $rc"
    expect "$out" "^\[ps0\] ps task 0: serving on 127\.0\.0\.1:[0-9]+ " \
        "ps0 runs on 127.0.0.1, its lines prefixed"
    expect "$out" "^\[worker0\] worker 0 of 1 workers \(chief\), 1 ps task" \
        "worker0 (on localhost) trains, its lines prefixed"
    expect "$out" "^\[worker0\] global_step at the end: 3[0-9][0-9]$" \
        "training ended"
    expect "$out" "^\[ps0\] ps task 0: shut down by the chief" \
        "the chief shut ps0 down"
    # authenticated by default: the job's secret reached both hosts
    if grep -q 'unauthenticated' "$out"; then
        fail "a remote task warned: $(grep -m1 unauthenticated "$out")"
    else
        ok "no remote task warned that its cluster is unauthenticated"
    fi
    # and with the job token rf-launch made: no task kept a token file
    local files
    files=$(find "$tmp/tokens" -type f | wc -l)
    ((files == 0)) && ok "no remote task wrote a token file (the job token)" ||
        fail "$files token file(s) in RF_TOKEN_DIR: no RF_JOB_TOKEN reached the tasks"

    # a failing worker stops the job; ps0's remote process goes too
    timeout "$(t 60)" "$launch" --hostfile "$hf" --ssh "$ssh_cmd" --ps 1 \
        --workers 1 -- "$helper" --marker="$m" --ready --ps-then=forever \
        --exit=worker0:3:1000 --then=forever >"$out" 2>&1
    rc=$?
    [[ $rc == 1 ]] && ok "a worker exiting 3 fails the launch: exit 1" ||
        fail "a failing worker: exit $rc (want 1)"
    expect "$out" "rf-launch: worker0 exited with status 3" \
        "rf-launch names the failed task"
    expect "$out" "^\[ps0\] ready" "ps0 had started remotely"
    local i left=1
    for ((i = 0; i < 50; i++)); do
        pgrep -f -- "--marker=$m" >/dev/null || {
            left=0
            break
        }
        sleep 0.2
    done
    [[ $left == 0 ]] && ok "no task process is left on the hosts" ||
        fail "task processes left: $(pgrep -af -- "--marker=$m")"

    # TF_CONFIG and RF_* travel in the ssh command (its words logged by
    # a wrapper), the job token on ssh's stdin
    printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec ssh "$@"\n' \
        "$tmp/ssh-args" >"$tmp/ssh-log"
    chmod +x "$tmp/ssh-log"
    RF_LAUNCH_TEST_VAR=x timeout "$(t 60)" "$launch" --hostfile "$hf" \
        --ssh "$tmp/ssh-log ${ssh_cmd#ssh }" --tf_config --ps 1 --workers 1 \
        -- "$helper" --echo --runs="$tmp" >"$out" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "--tf_config over ssh: exit 0" ||
        fail "--tf_config over ssh: exit $rc"
    expect "$out" '^\[worker0\] tf_cluster ps 127\.0\.0\.1:[0-9]+$' \
        "TF_CONFIG's ps is on 127.0.0.1"
    expect "$out" '^\[worker0\] tf_cluster worker localhost:[0-9]+$' \
        "TF_CONFIG's worker is on localhost"
    grep -qx 'env RF_LAUNCH_TEST_VAR=x' "$tmp/worker0.1" &&
        ok "RF_* variables reach the remote task" ||
        fail "RF_LAUNCH_TEST_VAR did not reach worker0: $(grep -c . "$tmp/worker0.1" 2>/dev/null) lines recorded"
    # the job's secret went over ssh's stdin into a private file on each
    # host (mode 0600, the same secret for both tasks), gone at the end
    local t s0= p
    for t in ps0 worker0; do
        s=$(grep '^secret_file ' "$tmp/$t.1")
        p=$(sed -n 's/^env RF_CLUSTER_SECRET_FILE=//p' "$tmp/$t.1")
        if [[ $s =~ ^secret_file\ 600\ 65\ [0-9a-f]{16}$ && $p == */rf-task.??????/secret ]]; then
            ok "$t got the job's secret on its host: $p, mode 600, 65 bytes"
        else
            fail "$t: '$s' at '$p' (want mode 600, 65 bytes, rf-task.XXXXXX/secret)"
        fi
        [[ -z $s0 ]] && s0=${s##* }
        [[ ${s##* } == "$s0" ]] || fail "$t has another secret than ps0"
        [[ -n $p && ! -e $p && ! -e ${p%/secret} ]] &&
            ok "$t's copy of the secret is gone" || fail "$t's copy $p is left"
    done
    job_token_over_stdin "" ps0 worker0
    # a job token of the user's takes the same way
    mkdir -p "$tmp/given"
    RF_JOB_TOKEN=the-users-token timeout "$(t 60)" "$launch" --hostfile "$hf" \
        --ssh "$tmp/ssh-log ${ssh_cmd#ssh }" --ps 1 --workers 1 \
        -- "$helper" --echo --runs="$tmp/given" >"$out" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ok "RF_JOB_TOKEN given, over ssh: exit 0" ||
        fail "RF_JOB_TOKEN given, over ssh: exit $rc"
    job_token_over_stdin the-users-token given/ps0 given/worker0
    stop_sshd
}

# The job token each remote task got (records $tmp/TASK.1 of --echo):
# the same one for all, WANT or else 32 hex digits, and its value never in
# the ssh command lines logged in $tmp/ssh-args (which carry the RF_*
# variables, and the watcher that reads the token from stdin).
job_token_over_stdin() { # WANT TASK...
    local want=$1 t tok first=
    shift
    for t in "$@"; do
        tok=$(sed -n 's/^env RF_JOB_TOKEN=//p' "$tmp/$t.1")
        if [[ -n $want && $tok == "$want" ]] ||
            [[ -z $want && $tok =~ ^[0-9a-f]{32}$ ]]; then
            ok "$t has the job token ${want:-rf-launch made}"
        else
            fail "$t: RF_JOB_TOKEN '$tok' (want ${want:-32 hex digits})"
        fi
        [[ -z $first ]] && first=$tok
        [[ $tok == "$first" ]] || fail "$t has another job token than $1"
    done
    if ! grep -q RF_LAUNCH_TASK= "$tmp/ssh-args"; then
        fail "the ssh wrapper logged no command line: $(head -c 300 "$tmp/ssh-args")"
    elif [[ -z $first ]] || grep -qF -- "$first" "$tmp/ssh-args"; then
        fail "the job token is on an ssh command line"
    else
        ok "no ssh command line carries the job token"
    fi
    : >"$tmp/ssh-args"
}

case "$case_name" in
hostfile) case_hostfile ;;
tf_config_roles) case_tf_config_roles ;;
mpirun) case_mpirun ;;
slurm) case_slurm ;;
bind_addr) case_bind_addr ;;
unresolved) case_unresolved ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
