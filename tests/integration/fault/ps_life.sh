#!/usr/bin/env bash
# tests/integration/fault/ps_life.sh CASE RF_TRAINER RF_LAUNCH RF_CKPT:
# issue 25 item 2, a ps task's life is bounded without its chief. Tasks
# started by hand (no rf-launch, no secret, 2 ps x 2 workers of
# rf-trainer on loopback, --max_wait_secs=$mw), real kill -9:
#   ps_chief_gone  the chief killed for good: both ps tasks exit 138 within
#                  --max_wait_secs + $slack s of the kill, each naming why
#                  ("no chief connection for ...").
#   ps_ps_gone     ps 1 killed for good: the workers give up after
#                  --max_wait_secs naming it (138), and then ps 0, without
#                  its chief, exits 138 within --max_wait_secs + $slack s.
#   ps_idle        a ps no chief ever connects to: with --ps_idle_exit_secs
#                  3 it exits 138 after 3 s (within $slack s more); without
#                  the flag it is still serving after 3 + $slack s.
# Exit 0, 1 on a failure, 77 without the dataset.
set -uo pipefail
case=${1:?case}
trainer=${2:?path to rf-trainer}
case_name=fault.$case
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
export RF_TOKEN_DIR=$tmp/tokens

mw=$(t 8)        # --max_wait_secs
slack=$(t 6)     # what a loaded machine may add to a bound
free_port p0 && free_port p1 && free_port w0 && free_port w1 ||
    { fail "no free ports"; rft_finish; }
C=(--ps_hosts="$host:$p0,$host:$p1" --worker_hosts="$host:$w0,$host:$w1")
train=(--model=mlp:16 --batch_size=50 --train_steps=400000 --threads=1
    --log_every=200 --max_wait_secs="$mw" --data_dir="$data")
declare -A pid

# start NAME JOB INDEX [ARGS...]: a task in the background, its output in
# $tmp/NAME.out
start() {
    local name=$1 job=$2 index=$3
    shift 3
    "$trainer" "${C[@]}" --job_name="$job" --task_index="$index" \
        --max_wait_secs="$mw" "$@" >"$tmp/$name.out" 2>&1 &
    pid[$name]=$!
    started+=("$!")
}

# exited NAME: the task has exited (its status in st_NAME)
exited() { ! kill -0 "${pid[$1]}" 2>/dev/null; }

# expect_exit NAME WANT WITHIN T0 WHY: NAME exits WANT within WITHIN s of
# T0, its output holding WHY
expect_exit() {
    local name=$1 want=$2 within=$3 t0=$4 why=$5 rc
    local deadline
    deadline=$(awk -v a="$t0" -v w="$within" 'BEGIN { printf "%.2f", a + w }')
    while ! exited "$name"; do
        awk -v a="$deadline" -v b="$(now)" 'BEGIN { exit !(b > a) }' && break
        sleep 0.1
    done
    if ! exited "$name"; then
        fail "$name still running $within s after the fault"
        show "$tmp/$name.out" 8
        kill -9 "${pid[$name]}" 2>/dev/null
        return
    fi
    wait "${pid[$name]}"
    rc=$?
    local took
    took=$(elapsed "$t0")
    if [[ $rc == "$want" ]] && grep -q -- "$why" "$tmp/$name.out"; then
        ok "$name exited $rc after $took s (bound $within s): $(grep -m1 -- "$why" "$tmp/$name.out" | cut -c1-200)"
    else
        fail "$name exited $rc after $took s (want $want and '$why')"
        show "$tmp/$name.out" 8
    fi
}

chief_at() { [[ $(grep -c '^\[worker0\] step [0-9]*, loss' "$tmp/worker0.out") -ge $1 ]]; }

start_job() {
    start ps0 ps 0
    start ps1 ps 1
    start worker0 worker 0 "${train[@]}"
    start worker1 worker 1 "${train[@]}"
    if ! wait_until "$(t 120)" "${pid[worker0]}" chief_at 2; then
        fail "the chief never trained"
        show "$tmp/worker0.out"
        rft_finish
    fi
    ok "the job trains: $(grep '^\[worker0\] step' "$tmp/worker0.out" | tail -n 1)"
}

case $case in
ps_chief_gone)
    start_job
    kill -9 "${pid[worker0]}"
    t0=$(now)
    echo "killed the chief (pid ${pid[worker0]})"
    for k in 0 1; do
        expect_exit "ps$k" 138 $((mw + slack)) "$t0" \
            "ps $k: stopping: no chief connection for"
    done
    grep -q "rf-trainer: exit 138 (retryable): ps task 0" "$tmp/ps0.out" &&
        ok "ps0's last line names the retryable exit" ||
        fail "ps0's last line: $(tail -n 1 "$tmp/ps0.out")"
    ;;
ps_ps_gone)
    start_job
    kill -9 "${pid[ps1]}"
    t0=$(now)
    echo "killed ps1 (pid ${pid[ps1]})"
    # the workers: --max_wait_secs naming ps 1 (a bound this issue keeps)
    for w in worker0 worker1; do
        expect_exit "$w" 138 $((mw + slack)) "$t0" "/job:ps/task:1"
    done
    t1=$(now)
    expect_exit ps0 138 $((mw + slack)) "$t1" \
        "ps 0: stopping: no chief connection for"
    ;;
ps_idle)
    start ps0 ps 0 --ps_idle_exit_secs=3
    start ps1 ps 1
    t0=$(now)
    expect_exit ps0 138 $((3 + slack)) "$t0" \
        "no chief connected within [0-9.]* s of the start (--ps_idle_exit_secs)"
    took=$(elapsed "$t0")
    awk -v a="$took" 'BEGIN { exit !(a >= 3) }' &&
        ok "ps0 waited its 3 s ($took s)" || fail "ps0 left after $took s, before its 3 s"
    sleep $((3 + slack - ${took%.*} > 0 ? 3 + slack - ${took%.*} : 0))
    exited ps1 && fail "ps1 (no --ps_idle_exit_secs) exited: $(tail -n 2 "$tmp/ps1.out")" ||
        ok "ps1 (no --ps_idle_exit_secs) still serves after $(elapsed "$t0") s"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
rft_finish
