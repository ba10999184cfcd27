#!/usr/bin/env bash
# tests/integration/slurm/slurm_test.sh CASE RF_TRAINER SBATCH_SCRIPT:
# rf-trainer under a real Slurm on this machine: Debian's munged, slurmctld
# and two slurmd (22.05), nodes 127.0.0.1 and 127.0.0.2, started by hand in
# a temporary folder with their own slurm.conf (SLURM_CONF), munge key and
# socket, on free loopback ports; nothing of /etc/slurm or /etc/munge is
# used. Each node declares 4 CPUs (SlurmdParameters=config_overrides: the
# machine may have fewer; TaskPlugin=task/none binds nothing) and tracks
# processes without cgroups (proctrack/linuxproc), so it runs in a
# container without systemd. Cases:
#   srun    srun -n 4 rf-trainer --num_ps=2 on one node, the README's
#           srun -N 2 --ntasks-per-node=2 over both, and
#           --distribution=cyclic refused (exit 2, naming both places)
#   sbatch  sbatch --wait --nodes=2 --ntasks-per-node=2 of
#           deploy/slurm/rdmaflow.sbatch, the README's recipe, unchanged
# Each run's checks: what slurmstepd's SLURM_* variables made of the 4
# tasks (ps 0-1, the chief, worker 1, on their nodes and ports), the global
# steps done, the chief's test accuracy, every task's exit 0 and the ps
# tasks shut down by the chief. Exits 0 on success, 1 on failure (also when
# the Slurm or munge packages are missing: tools/rf-setup deps installs
# them), 77 when not root (slurmd runs jobs as their users) or without the
# Fashion-MNIST dataset.
set -uo pipefail
case_name=${1:?case}
trainer=$(realpath "${2:?path to rf-trainer}")
script=$(realpath "${3:?path to deploy/slurm/rdmaflow.sbatch}")
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=127.0.0.1
nodes=(127.0.0.1 127.0.0.2)
steps=600
# a Slurm job around this test (or SBATCH_*/SRUN_* input variables) must
# not reach the test's cluster
while read -r v; do
    unset "$v"
done < <(compgen -e | grep -E '^(SLURM|SLURMD|SBATCH|SRUN|SALLOC|SQUEUE|SINFO|SCONTROL)_')
unset TF_CONFIG OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMIX_RANK \
    RF_MPI_HOSTS RF_CLUSTER_SECRET_FILE
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

tmp=$(mktemp -d)
munged_pid='' ctld_pid='' slurmd_pids=()
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    local p i
    # jobs first (their slurmstepd and tasks), then the daemons
    if [[ -n $ctld_pid ]] && kill -0 "$ctld_pid" 2>/dev/null; then
        scancel --quiet --user=root 2>/dev/null
        for ((i = 0; i < 50; i++)); do
            [[ -z $(squeue --noheader 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    for p in "${slurmd_pids[@]}" $ctld_pid $munged_pid; do
        kill "$p" 2>/dev/null
    done
    for p in "${slurmd_pids[@]}" $ctld_pid $munged_pid; do
        for ((i = 0; i < 50; i++)); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

train=(--train_steps="$steps" --batch_size=100 --log_every=100
    --log_step_count_steps=100 --threads=1 --max_wait_secs="$(t 60)")

# expect FILE PATTERN WHAT: a line of FILE matches the extended regex.
expect() {
    if grep -Eq -- "$2" "$1"; then
        ok "$3"
    else
        fail "$3: no line matching /$2/ in $1:"
        show "$1" 25
    fi
}

# need: what every case needs; exits (1 or 77) when something is missing.
need() {
    local c missing=()
    for c in munged mungekey slurmctld slurmd srun sbatch sinfo squeue \
        scontrol scancel; do
        command -v "$c" >/dev/null || missing+=("$c")
    done
    if ((${#missing[@]})); then
        fail "no ${missing[*]} (packages munge slurmctld slurmd slurm-client: tools/rf-setup deps)"
        rft_finish
    fi
    if [[ $(id -u) != 0 ]]; then
        echo "SKIP: slurmd runs as root (it starts jobs as their users)"
        exit 77
    fi
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
}

# start_slurm: munged on its own socket and key; slurmctld and two slurmd
# (nodes 127.0.0.1 and 127.0.0.2, both on this machine) in the foreground
# on free loopback ports, all state in $tmp; waits (bounded) until sinfo
# shows both nodes idle. A failure to start is a test failure.
start_slurm() {
    local d=$tmp/slurm cp p1 p2 i n idle
    # munged wants every folder above its socket searchable by all
    mkdir -p "$d/state" "$d/spool/${nodes[0]}" "$d/spool/${nodes[1]}" &&
        chmod 755 "$tmp" "$d" || return 1
    mungekey --create --bits=1024 --keyfile="$d/munge.key" || {
        fail "mungekey failed"
        return 1
    }
    munged --foreground --socket="$d/munge.sock" --key-file="$d/munge.key" \
        --pid-file="$d/munged.pid" --seed-file="$d/munged.seed" \
        --log-file="$d/munged.log" 2>"$d/munged.err" &
    munged_pid=$!
    for ((i = 0; i < 50; i++)); do
        munge --socket="$d/munge.sock" --no-input 2>/dev/null |
            unmunge --socket="$d/munge.sock" >/dev/null 2>&1 && break
        sleep 0.1
    done
    ((i < 50)) || {
        fail "munged did not start on $d/munge.sock:"
        show "$d/munged.err"
        return 1
    }
    if ! free_port cp || ! free_port p1 || ! free_port p2; then
        fail "no free ports for slurmctld and slurmd"
        return 1
    fi
    # Each node declares 4 CPUs whatever the machine has (config_overrides),
    # so that srun -n 4 fits on one node; with task/none nothing is bound.
    cat >"$d/slurm.conf" <<EOC
ClusterName=rdmaflow-test
SlurmctldHost=localhost($host)
SlurmctldPort=$cp
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.%n.pid
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=${nodes[0]} NodeAddr=${nodes[0]} Port=$p1 CPUs=4 State=UNKNOWN
NodeName=${nodes[1]} NodeAddr=${nodes[1]} Port=$p2 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=${nodes[0]},${nodes[1]} Default=YES MaxTime=5 State=UP
EOC
    export SLURM_CONF=$d/slurm.conf
    slurmctld -D -i 2>"$d/slurmctld.log" &
    ctld_pid=$!
    for n in 0 1; do
        slurmd -D -N "${nodes[n]}" 2>"$d/slurmd.$n.log" &
        slurmd_pids+=($!)
    done
    for ((i = 0; i < 100; i++)); do
        idle=$(sinfo --noheader --Node --format=%t 2>/dev/null | grep -c '^idle$')
        ((idle == 2)) && break
        for n in $ctld_pid "${slurmd_pids[@]}"; do
            kill -0 "$n" 2>/dev/null || i=100
        done
        sleep 0.2
    done
    if ((idle != 2)); then
        fail "$idle of 2 nodes idle after $((i / 5)) s:"
        sinfo --Node 2>&1 | show /dev/stdin
        show "$d/slurmctld.log"
        show "$d/slurmd.0.log"
        return 1
    fi
    ok "slurmctld on $host:$cp, slurmd ${nodes[0]}:$p1 and ${nodes[1]}:$p2: both nodes idle"
}

# check_job OUT BASE PS_HOST: the 4 tasks' lines in OUT show ranks 0-1 as
# ps 0-1 on PS_HOST:BASE and BASE + 1, ranks 2-3 as the chief and worker
# 1; the steps done, the chief's test accuracy, the ps tasks shut down.
check_job() {
    local out=$1 base=$2 ph=$3 gs acc
    expect "$out" "^\[ps0\] ps task 0: serving on $ph:$base " \
        "task 0 is ps task 0 on $ph:$base"
    expect "$out" "^\[ps1\] ps task 1: serving on $ph:$((base + 1)) " \
        "task 1 is ps task 1 on $ph:$((base + 1))"
    expect "$out" '^\[worker0\] worker 0 of 2 workers \(chief\), 2 ps tasks' \
        "task 2 is worker 0, the chief"
    expect "$out" '^\[worker1\] worker 1 of 2 workers, 2 ps tasks' \
        "task 3 is worker 1"
    gs=$(sed -n 's/^\[worker0\] global_step at the end: \([0-9]*\)$/\1/p' "$out")
    if [[ -n $gs && $gs -ge $steps ]]; then
        ok "the chief saw global_step $gs >= $steps at the end"
    else
        fail "global_step at the end: '$gs' (want >= $steps)"
        show "$out" 25
    fi
    # 600 async steps of 100 reach 0.822-0.856 (README "Launchers and
    # cluster managers")
    acc=$(sed -n 's/^\[worker0\] test accuracy: \(0\.[0-9]*\) .*/\1/p' "$out")
    if [[ -n $acc ]] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.80) }'; then
        ok "the chief's test accuracy $acc >= 0.80"
    else
        fail "the chief's test accuracy: '$acc' (want >= 0.80)"
        show "$out" 25
    fi
    expect "$out" '^\[ps0\] ps task 0: shut down by the chief' \
        "ps 0 shut down by the chief"
    expect "$out" '^\[ps1\] ps task 1: shut down by the chief' \
        "ps 1 shut down by the chief"
    expect "$out" '^\[worker0\] chief: ps tasks shut down' \
        "the chief saw the ps tasks go"
}

# run_srun WHAT OUT SRUN_ARGS...: srun (bounded) of rf-trainer with the
# test's training flags; its status is the highest of its tasks' (0: all
# 4 exited 0).
run_srun() {
    local what=$1 out=$2 rc
    shift 2
    timeout "$(t 90)" srun --kill-on-bad-exit=1 "$@" >"$out" 2>&1
    rc=$?
    if [[ $rc == 0 ]] && ! grep -q '^srun: error' "$out"; then
        ok "$what: exit 0"
    else
        fail "$what: exit $rc"
        grep -m3 '^srun: error' "$out"
    fi
}

case_srun() {
    local base out=$tmp/srun.out rc
    free_port_range base 4 || {
        fail "no 4 free consecutive ports"
        return
    }
    run_srun "srun -n 4 rf-trainer --num_ps=2 (one node)" "$out" \
        --nodelist="${nodes[0]}" -n 4 "$trainer" --num_ps=2 \
        --port_base="$base" "${train[@]}"
    check_job "$out" "$base" "${nodes[0]}"

    run_srun "srun -N 2 --ntasks-per-node=2 rf-trainer --num_ps=2" "$out" \
        -N 2 --ntasks-per-node=2 "$trainer" --num_ps=2 --port_base="$base" \
        "${train[@]}"
    check_job "$out" "$base" "${nodes[0]}"

    # cyclic: rank 1 is on the second node, where its address is not
    timeout "$(t 60)" srun --kill-on-bad-exit=1 -N 2 -n 4 \
        --distribution=cyclic "$trainer" --num_ps=2 --port_base="$base" \
        "${train[@]}" >"$out" 2>&1
    rc=$?
    if [[ $rc != 0 ]]; then
        ok "srun --distribution=cyclic: exit $rc"
    else
        fail "srun --distribution=cyclic: exit 0 (want a failure)"
    fi
    # which ranks cyclic puts where is Slurm's choice (seen: rank 1 alone
    # on the second node, or ranks 2 and 3 beside rank 0); a misplaced
    # rank says so and exits 2, and srun (--kill-on-bad-exit) may kill
    # the others before they do: at least one, named exactly
    expect "$out" "^rf-trainer: SLURM_PROCID=[1-3] runs as task [0-3] of node \"(${nodes[0]}|${nodes[1]})\" \(SLURM_LOCALID, SLURMD_NODENAME\) but .* makes it task [0-3] of node \"(${nodes[0]}|${nodes[1]})\": run srun with --distribution=block" \
        "a misplaced rank names where it runs and where block order puts it"
    expect "$out" "^srun: error: (${nodes[0]}|${nodes[1]}): tasks? [0-9,-]+: Exited with exit code 2" \
        "that rank exits 2"
}

case_sbatch() {
    local base out=$tmp/job.out rc id
    free_port_range base 4 || {
        fail "no 4 free consecutive ports"
        return
    }
    # the script as the README gives it: its settings in the environment,
    # rf-trainer's flags as its arguments; submitted from $tmp (the
    # cluster secret goes in a private folder of the submit directory)
    id=$(cd "$tmp" && RF_TRAINER=$trainer RF_PORT_BASE=$base \
        timeout "$(t 90)" sbatch --wait --parsable --nodes=2 \
        --ntasks-per-node=2 --output="$out" "$script" "${train[@]}" \
        2>"$tmp/sbatch.err")
    rc=$?
    if [[ $rc == 0 ]]; then
        ok "sbatch --wait rdmaflow.sbatch: job $id, exit 0"
    else
        fail "sbatch --wait: exit $rc"
        show "$tmp/sbatch.err"
    fi
    scontrol show job "$id" >"$tmp/job.state" 2>&1
    expect "$tmp/job.state" 'JobState=COMPLETED ' "slurmctld: job $id COMPLETED"
    expect "$tmp/job.state" ' ExitCode=0:0' "slurmctld: job $id's exit code 0:0"
    expect "$tmp/job.state" '^ +NodeList=127\.0\.0\.\[1-2\]$' \
        "slurmctld: the job ran on both nodes"
    check_job "$out" "$base" "${nodes[0]}"
    if grep -q 'unauthenticated' "$out"; then
        fail "a task warned: $(grep -m1 unauthenticated "$out")"
    else
        ok "the job's tasks shared the script's cluster secret"
    fi
    if compgen -G "$tmp/.rdmaflow-secret.*" >/dev/null; then
        fail "the job's secret is left: $(echo "$tmp"/.rdmaflow-secret.*)"
    else
        ok "the job's secret is gone"
    fi
}

need
start_slurm || rft_finish
case "$case_name" in
srun) case_srun ;;
sbatch) case_sbatch ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
