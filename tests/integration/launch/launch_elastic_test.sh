#!/usr/bin/env bash
# tests/integration/launch/launch_elastic_test.sh RF_TRAINER RF_LAUNCH: an
# elastic async rf-trainer job run by rf-launch (issue 24 item 4) whose
# workers a second rf-launch changes through the job's control socket,
# real processes on $host and real signals:
#   - rf-launch --ps 2 --workers 2 -- rf-trainer --elastic ...; its line
#     "elastic job PID: ... --add_worker [N] DIR" names the run folder and
#     the job id;
#   - once the chief passed a tenth of --train_steps, rf-launch
#     --add_worker 2 DIR starts worker2 and worker3 (exit 0; each trains
#     steps, with the worker list the launcher gives: its own entry last);
#   - once both trained, rf-launch --remove_worker 3 JOB_ID stops worker3,
#     worker2 and worker1 (SIGTERM): each leaves the job (rf-trainer's
#     "left the job after", exit 0) and rf-launch says it left, not failed,
#     and restarts none of them (--restart_on_failure is on);
#   - the chief trains alone to --train_steps, does not wait for the
#     departed workers, and the launch exits 0 with the async accuracy
#     (0.80-0.87), rf-launch's restarts all 0, the run folder gone.
# Refusals on the same running job: removing the chief (--task worker:0),
# removing more workers than can go, a malformed count (exit 2). Exits 0,
# 1 on a failed check, 77 without the Fashion-MNIST dataset.
set -uo pipefail
case_name=launch.elastic
trainer=${1:?path to rf-trainer}
launch=${2:?path to rf-launch}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG RF_CLUSTER_SECRET_FILE
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../common/job.sh"
tmp=$(mktemp -d)
keep=${RF_ELASTIC_KEEP:-}
trap cleanup EXIT
need_data
# the run folder goes into $tmp/run, so its removal is checked there
export TMPDIR=$tmp/run
mkdir "$TMPDIR"

steps=${RF_ELASTIC_STEPS:-24000}
out=$tmp/job.out
launch_timeout=$(t 200)
start_launch "$out" 2 2 --restart_on_failure -- \
    --elastic --model=softmax --optimizer=adagrad --learning_rate=0.05 \
    --batch_size=100 --threads=1 --train_steps="$steps" \
    --log_every=$((steps / 24)) --max_wait_secs="$(t 30)" \
    --member_timeout_secs=2 --stop_grace_secs=25 --data_dir="$data"

# ctl ARGS...: a second rf-launch; its status in crc, output in $tmp/ctl
ctl() {
    "$launch" "$@" >"$tmp/ctl" 2>&1
    crc=$?
    sed 's/^/    ctl| /' "$tmp/ctl"
}
# check MSG CMD...: ok MSG if CMD succeeds, else fail MSG
check() {
    local msg=$1
    shift
    if "$@"; then ok "$msg"; else fail "$msg"; fi
}
# shellcheck disable=SC2317 # called through wait_until
announced() { has_line "$out" "" "rf-launch: elastic job [0-9]*: "; }
# shellcheck disable=SC2317
trained() { has_line "$out" "$1" "^[0-9.]* step [0-9]*, loss"; }
# shellcheck disable=SC2317
left() { has_line "$out" "" "rf-launch: $1 exited with status 0: it left the job"; }

wait_until "$(t 20)" "$lpid" announced || fail "rf-launch did not name the elastic job"
line=$(lines_of "$out" "" | grep -m1 'rf-launch: elastic job ')
job_id=$(sed -n 's/.*elastic job \([0-9]*\): .*/\1/p' <<<"$line")
run_dir=$(sed -n 's/.*--add_worker \[N\] \([^ ]*\) .*/\1/p' <<<"$line")
check "the job id $job_id is rf-launch's pid" test "$job_id" = "$lpid"
[[ $run_dir == "$TMPDIR"/rf-launch.?????? ]] || fail "run folder '$run_dir'"
check "the control socket is mode 600" \
    test "$(stat -c %a "$run_dir/control" 2>/dev/null)" = 600
check "the run folder is mode 700" test "$(stat -c %a "$run_dir")" = 700

wait_until "$(t 30)" "$lpid" gs_at_least "$out" worker0 $((steps / 10)) ||
    fail "the chief did not reach global_step $((steps / 10))"
gs_add=$(last_gs "$out" worker0)
ctl --add_worker 2 "$run_dir"
check "--add_worker 2: exit $crc (want 0)" test "$crc" = 0
check "--add_worker 2 names worker2 and worker3" \
    grep -q "started worker2, worker3; the job has 4 workers now" "$tmp/ctl"
wait_until "$(t 20)" "$lpid" trained worker2 || fail "worker2 (added) trained no step"
wait_until "$(t 20)" "$lpid" trained worker3 || fail "worker3 (added) trained no step"
w3_cmd=$(tr '\0' ' ' <"/proc/$(task_pid worker 3)/cmdline" 2>/dev/null)
re='--worker_hosts=([^ ,]+,){3}[^ ,]+ --job_name=worker --task_index=3'
if [[ $w3_cmd =~ $re ]]; then
    ok "worker3's flags: a worker list of 4, itself last"
else
    fail "worker3's flags: '$w3_cmd'"
fi

# refusals on the running job: the chief, too many, a bad count
ctl --remove_worker --task worker:0 "$run_dir"
check "removing the chief: exit $crc (want 1)" test "$crc" = 1
check "removing the chief: named" \
    grep -q "worker0 is the chief (no --chief): it cannot be removed" "$tmp/ctl"
ctl --remove_worker 4 "$job_id"
check "removing 4 of 4: exit $crc (want 1)" test "$crc" = 1
check "removing 4 of 4: says 3 can go" \
    grep -q "cannot remove 4 workers: 3 can go (the chief stays)" "$tmp/ctl"
ctl --remove_worker 0 "$job_id"
check "a count of 0: exit $crc (want 2)" test "$crc" = 2

ctl --remove_worker 3 "$job_id"
check "--remove_worker 3: exit $crc (want 0)" test "$crc" = 0
check "--remove_worker 3 stops worker3, worker2, worker1" \
    grep -q "stopping worker3, worker2, worker1; the job has 1 worker now" "$tmp/ctl"
gs_rm=$(last_gs "$out" worker0)
for w in worker3 worker2 worker1; do
    wait_until "$(t 30)" "$lpid" left "$w" || fail "$w did not leave (exit 0)"
done
finish_launch "$out"
check "rf-launch: exit $rc (want 0)" test "$rc" = 0
if ((gs_add < steps && gs_rm < steps)); then
    ok "added at global_step $gs_add, removed at $gs_rm (of $steps)"
else
    fail "the job was too short: added at $gs_add, removed at $gs_rm of $steps"
fi
for w in worker1 worker2 worker3; do
    check "$w left the job (rf-trainer)" has_line "$out" "$w" "left the job after"
done
check "no task failed or was restarted" \
    bash -c "! grep -qE 'restarting it|stopping the others|did not finish' '$out'"
expect_restarts "$out" "ps0 0, ps1 0, worker0 0, worker1 0, worker2 0, worker3 0"
gs_end=$(lines_of "$out" worker0 | sed -n 's/^[0-9.]* global_step at the end: \([0-9]*\)$/\1/p')
check "global_step at the end '$gs_end' >= $steps" test "${gs_end:-0}" -ge "$steps"
acc=$(accuracy "$out" worker0)
if [[ -n $acc ]] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.80 && a <= 0.87) }'; then
    ok "test accuracy $acc (async range 0.80-0.87)"
else
    fail "test accuracy '$acc', want 0.80-0.87"
fi
check "the run folder is gone" test -z "$(ls -A "$TMPDIR")"
ctl --add_worker "$run_dir"
check "--add_worker after the end: exit $crc (want 1)" test "$crc" = 1
check "--add_worker after the end: no job runs there" \
    grep -q "no rf-launch job runs in $run_dir" "$tmp/ctl"
rft_finish
