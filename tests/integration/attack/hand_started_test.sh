#!/usr/bin/env bash
# tests/integration/attack/hand_started_test.sh RF_TRAINER EXAMPLE_TRAINER:
# issue 21 item 2, tasks started by hand without a cluster secret. A
# 1 ps x 1 worker rf-trainer job started by hand: each task prints exactly
# one warning line, with its "[name] " prefix, saying that the cluster is
# unauthenticated and what that exposes, and the job completes. With
# --require_secret or RF_REQUIRE_SECRET=1 (ps, worker; rf-trainer and the
# example trainer) a task without a secret exits non-zero at once with a
# clear error naming what required it, before serving; a malformed
# RF_REQUIRE_SECRET is refused naming it; with a secret and
# --require_secret the job runs without the warning. Exit 0, 1 on a
# failure, 77 without the dataset.
#
# Environment: RF_FABRIC (default sock), RF_TEST_HOST (default
# 127.0.0.1), RF_TEST_TIME_SCALE, RF_FASHION_MNIST_DIR.
set -uo pipefail
case_name=attack.hand_started
trainer=${1:?path to rf-trainer}
example=${2:?path to rf-example-trainer}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG RF_CLUSTER_SECRET_FILE RF_REQUIRE_SECRET RF_LAUNCH_TASK
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../common/job.sh"
tmp=$(mktemp -d)
keep=
trap cleanup EXIT
need_data

warning='the cluster is unauthenticated, no cluster secret (RF_CLUSTER_SECRET_FILE or --cluster_secret_file): anyone who can reach a ps task'"'"'s port can connect as a worker whose id no task has connected with yet (before that worker first connects; a restarting task keeps its id by its task token, which travels in clear) and read and write every variable and global_step'

free_port pp && free_port wp || { fail "no free ports"; rft_finish; }
C=(--ps_hosts="$host:$pp" --worker_hosts="$host:$wp")
train=(--model=mlp:16 --train_steps=200 --threads=1 --log_every=0
    --max_wait_secs="$(t 30)")

# run_job OUT_PREFIX [ENV...] -- [FLAGS...]: ps and worker by hand; sets
# prc and wrc.
run_job() {
    local o=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    env "${envs[@]}" timeout -s KILL "$(t 60)" "$trainer" "${C[@]}" \
        --job_name=ps --task_index=0 "$@" >"$o.ps" 2>&1 &
    local ps=$!
    started+=("$ps")
    env "${envs[@]}" timeout -s KILL "$(t 60)" "$trainer" "${C[@]}" \
        --job_name=worker --task_index=0 "${train[@]}" "$@" >"$o.w" 2>&1
    wrc=$?
    wait "$ps"
    prc=$?
}

# ---- no secret: one warning line per task, the job runs ----
run_job "$tmp/plain" --
[[ $prc == 0 && $wrc == 0 ]] && ok "a job without a secret runs (exit $prc, $wrc)" ||
    { fail "a job without a secret: ps exit $prc, worker exit $wrc"; show "$tmp/plain.w"; }
for t in ps w; do
    name=$([[ $t == ps ]] && echo ps0 || echo worker0)
    n=$(grep -c 'unauthenticated' "$tmp/plain.$t")
    ((n == 1)) && ok "$name: one line about the unauthenticated cluster" ||
        fail "$name: $n lines about the unauthenticated cluster (want 1)"
    line=$(grep 'unauthenticated' "$tmp/plain.$t")
    [[ $line == "[$name] "*" warn "*"$warning"* ]] &&
        ok "$name: it is a warning, prefixed [$name], naming what is exposed" ||
        fail "$name: the line is '$line'"
done
grep -q '^\[worker0\] test accuracy: ' "$tmp/plain.w" &&
    ok "the worker trained and evaluated" || fail "the worker printed no test accuracy"

# ---- required, no secret: an error at once, before serving ----
# expect_refused LABEL OUT RC WANT: exit non-zero, the message, no serving
expect_refused() {
    if [[ $3 != 0 ]] && grep -qF -- "$4" "$2" && ! grep -q 'serving on' "$2"; then
        ok "$1: exit $3, '$(grep -F -m1 -- "$4" "$2")'"
    else
        fail "$1: exit $3, want non-zero and '$4'"
        show "$2"
    fi
    grep -q 'unauthenticated,' "$2" && fail "$1: the warning as well as the error"
}
t0=$(now)
timeout -s KILL "$(t 20)" "$trainer" "${C[@]}" --job_name=ps --task_index=0 \
    --require_secret >"$tmp/req.ps" 2>&1
expect_refused "ps --require_secret" "$tmp/req.ps" $? \
    "rf-trainer: ps task 0: no cluster secret (RF_CLUSTER_SECRET_FILE or --cluster_secret_file) and --require_secret requires one: refusing to start an unauthenticated cluster"
RF_REQUIRE_SECRET=1 timeout -s KILL "$(t 20)" "$trainer" "${C[@]}" \
    --job_name=worker --task_index=0 "${train[@]}" >"$tmp/req.w" 2>&1
expect_refused "worker with RF_REQUIRE_SECRET=1" "$tmp/req.w" $? \
    "no cluster secret (RF_CLUSTER_SECRET_FILE or --cluster_secret_file) and RF_REQUIRE_SECRET=1 requires one"
RF_REQUIRE_SECRET=1 timeout -s KILL "$(t 20)" "$trainer" "${C[@]}" \
    --job_name=ps --task_index=0 >"$tmp/req.ps2" 2>&1
expect_refused "ps with RF_REQUIRE_SECRET=1" "$tmp/req.ps2" $? \
    "RF_REQUIRE_SECRET=1 requires one"
timeout -s KILL "$(t 20)" "$example" "${C[@]}" --job_name=ps --task_index=0 \
    --require_secret >"$tmp/req.ex" 2>&1
expect_refused "example trainer ps --require_secret" "$tmp/req.ex" $? \
    "--require_secret requires one"
RF_REQUIRE_SECRET=1 timeout -s KILL "$(t 20)" "$example" "${C[@]}" \
    --job_name=worker --task_index=0 >"$tmp/req.ex2" 2>&1
expect_refused "example trainer worker with RF_REQUIRE_SECRET=1" "$tmp/req.ex2" $? \
    "RF_REQUIRE_SECRET=1 requires one"
RF_REQUIRE_SECRET=yes timeout -s KILL "$(t 20)" "$trainer" "${C[@]}" \
    --job_name=ps --task_index=0 >"$tmp/req.bad" 2>&1
expect_refused "RF_REQUIRE_SECRET=yes" "$tmp/req.bad" $? "RF_REQUIRE_SECRET: 'yes'"
secs=$(elapsed "$t0")
awk -v s="$secs" -v l="$(t 10)" 'BEGIN { exit !(s < l) }' &&
    ok "the six refusals took $secs s in all" ||
    fail "the six refusals took $secs s (want < $(t 10))"

# ---- required, with a secret: runs, no warning ----
head -c 32 /dev/urandom >"$tmp/secret" && chmod 600 "$tmp/secret"
run_job "$tmp/sec" RF_REQUIRE_SECRET=1 -- --require_secret \
    --cluster_secret_file="$tmp/secret"
[[ $prc == 0 && $wrc == 0 ]] && ok "with a secret and --require_secret the job runs" ||
    { fail "with a secret: ps exit $prc, worker exit $wrc"; show "$tmp/sec.w"; }
grep -q 'unauthenticated' "$tmp/sec.ps" "$tmp/sec.w" &&
    fail "a warning although the cluster has a secret" ||
    ok "no warning with a secret"
rft_finish
