#!/usr/bin/env bash
# tests/integration/attack/restart_gap_test.sh RF_TRAINER RF_LAUNCH ATTACKER:
# issue 26 item 1, the issue's reproduction. A real rf-launch job WITHOUT
# a cluster secret (RF_CLUSTER_SECRET_FILE set and empty for rf-launch,
# unset for the tasks; 2 ps x
# 2 workers, --restart_on_failure) on sock; each task's token derives from
# the RF_JOB_TOKEN rf-launch makes for the job (no task writes a token file
# into RF_TOKEN_DIR, a folder of the test: checked; the attacker, a raw
# client speaking the sock wire format and the ps protocol, has neither).
# Worker 1 and then
# the chief are killed with kill -9; each restart is held before it
# reconnects, and in that gap ATTACKER ("gap" of attack_peer.c) claims the
# task's id (the chief's role for the chief), without a task token and
# with one of its own, on both ps tasks, and if let in writes global_step
# := $evil_step, zeroes the first variable and (as the chief) sends
# SHUTDOWN. Checks: every attempt refused at connect, each refusal logged
# by the ps with the attacker's address, the restarted tasks take their
# slots back (logged with their address), the ps tasks are shut down by the
# chief, the job exits 0 at an accuracy >= $min_acc with global_step never
# near $evil_step. Exit 0, 1 on a failure, 77 without the dataset.
set -uo pipefail
case_name=attack.restart_gap
trainer=${1:?path to rf-trainer}
launch=${2:?path to rf-launch}
attacker=${3:?path to rf_attack_peer}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
host=${RF_TEST_HOST:-127.0.0.1}
export RF_FABRIC=${RF_FABRIC:-sock}
unset TF_CONFIG RF_REQUIRE_SECRET RF_JOB_TOKEN
# set and empty: rf-launch makes no secret (task.sh unsets it: the tasks
# have none)
export RF_CLUSTER_SECRET_FILE=
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../common/job.sh"
tmp=$(mktemp -d)
keep=${RESTART_GAP_KEEP:-}
trap cleanup EXIT
need_data
if [[ $RF_FABRIC != sock ]]; then
    echo "SKIP: the attacker speaks the sock wire format (RF_FABRIC=$RF_FABRIC)"
    exit 77
fi
export RF_TOKEN_DIR=$tmp/tokens

steps=6000
min_acc=0.83
evil_step=299000
train=(--model=mlp:64 --batch_size=100 --train_steps="$steps" --threads=1
    --seed=3 --log_every=500 --max_wait_secs="$(t 60)")

# A worker's restart says so ($tmp/restarted.NAME) and waits for
# $tmp/go.NAME, so the attacker comes while its slot is free.
cat >"$tmp/task.sh" <<EOF2
#!/usr/bin/env bash
name=\${RF_LAUNCH_TASK:-?}
unset RF_CLUSTER_SECRET_FILE
case \$name in
worker*)
    if [[ -e $tmp/started.\$name ]]; then
        touch "$tmp/restarted.\$name"
        for ((i = 0; i < $(t 600); i++)); do
            [[ -e $tmp/go.\$name ]] && break
            sleep 0.1
        done
    fi
    touch "$tmp/started.\$name" ;;
esac
exec "$trainer" "\$@"
EOF2
chmod +x "$tmp/task.sh"

froms=()
# gap WHAT PORT ARGS...: the attacker on one ps; every attempt refused
gap() {
    local what=$1 port=$2 line r
    shift 2
    line=$(timeout "$(t 60)" "$attacker" gap --ps "$host:$port" \
        --count "$evil_step" --timeout_ms "$(t 5000)" "$@" 2>>"$tmp/attacker.err")
    r=$?
    echo "attacker, $what, on port $port: ${line:-no output (exit $r)}"
    if [[ $r == 0 && $line == refused:* && $line != *GOT* ]]; then
        ok "$what on port $port: every attempt refused"
    else
        fail "$what on port $port: exit $r: ${line:-no output}"
    fi
    local f=${line##*\[from }
    f=${f%]}
    froms+=("$port ${f//,/ }")
}

# held NAME: the restart of NAME is waiting at its gate
held() { [[ -e $tmp/restarted.$1 ]]; }

out=$tmp/job.out
trainer=$tmp/task.sh start_launch "$out" 2 2 --restart_on_failure -- \
    "${train[@]}"
wait_ps_ports "$out"

# kill_held JOB INDEX NAME AT: kill -9 the task once the chief is at
# global_step AT, and wait for its restart to be held
kill_held() {
    if ! wait_until "$(t 120)" "$lpid" gs_at_least "$out" worker0 "$4"; then
        fail "the chief never reached global_step $4"
        show "$out" 20
        rft_finish
    fi
    local victim
    victim=$(task_pid "$1" "$2")
    kill -9 "$victim"
    echo "killed $3 (pid $victim) at global_step $(last_gs "$out" worker0)"
    if wait_until "$(t 60)" "$lpid" held "$3"; then
        ok "$3 was restarted and is held before it reconnects"
    else
        fail "$3 was not restarted"
    fi
}

kill_held worker 1 worker1 $((steps / 6))
gap "worker 1's gap" "$p0" --id 1
gap "worker 1's gap" "$p1" --id 1
touch "$tmp/go.worker1"
kill_held worker 0 worker0 $((steps / 2))
gap "the chief's gap" "$p0" --id 0 --chief
gap "the chief's gap" "$p1" --id 0 --chief
touch "$tmp/go.worker0"

finish_launch "$out"
if [[ $rc == 0 ]]; then
    ok "job exit 0"
else
    fail "job exit $rc"
    show "$out" 30
fi
expect_restarts "$out" "ps0 0, ps1 0, worker0 1, worker1 1"
for k in 0 1; do
    if has_line "$out" "ps$k" "ps task $k: shut down by the chief"; then
        ok "ps$k was shut down by the chief"
    else
        fail "ps$k printed no 'shut down by the chief'"
    fi
done
acc=$(accuracy "$out" worker0)
if [[ -n $acc ]] && awk -v a="$acc" -v m="$min_acc" 'BEGIN { exit !(a >= m) }'; then
    ok "test accuracy $acc >= $min_acc"
else
    fail "test accuracy '${acc}' (want >= $min_acc)"
fi
maxgs=$(lines_of "$out" worker0 | awk "$gs_awk"'
    { $1 = ""; sub(/^ /, ""); g = gs($0); if (g + 0 > m) m = g + 0 }
    END { print m + 0 }')
if ((maxgs >= steps && maxgs < 2 * steps)); then
    ok "the chief's global_step reached $maxgs (train_steps $steps; the attacker's $evil_step never)"
else
    fail "the chief's largest global_step is $maxgs (want $steps..$((2 * steps)))"
fi
# each attempt is in the ps's log with the attacker's address
for f in "${froms[@]}"; do
    read -r port addrs <<<"$f"
    k=$([[ $port == "$p0" ]] && echo 0 || echo 1)
    for a in $addrs; do
        if lines_of "$out" "ps$k" | grep -q "refusing client [01].* from $a: "; then
            ok "ps$k logged the refusal of $a"
        else
            fail "ps$k did not log a refusal of $a"
        fi
    done
done
for k in 0 1; do
    for c in "client 1 from" "client 0 (chief) from"; do
        n=$(lines_of "$out" "ps$k" | grep -c "ps $k: $c [0-9.:]* takes its slot back")
        ((n >= 1)) && ok "ps$k: '$c ... takes its slot back' logged ($n)" ||
            fail "ps$k: no '$c ... takes its slot back'"
    done
done
# rf-launch's job token, not token files (a launch on free ports would
# leave new ones in /tmp/rdmaflow-UID every time)
files=$(find "$tmp/tokens" -type f 2>/dev/null | wc -l)
((files == 0)) && ok "no task wrote a token file (rf-launch's RF_JOB_TOKEN)" ||
    fail "$files token file(s) in RF_TOKEN_DIR: rf-launch gave no RF_JOB_TOKEN"
if [[ -s $tmp/attacker.err ]]; then
    echo "attacker stderr:"
    show "$tmp/attacker.err" 10
fi
rft_finish
