#!/usr/bin/env bash
# tests/integration/prometheus/prometheus_test.sh CASE BUILD_DIR: one case of
# the Prometheus metrics tests (see CMakeLists.txt). Prints what it checks;
# exits 0 on success, 1 on failure, 77 when the dataset or Debian's
# prometheus, promtool or curl is missing (tools/rf-setup deps installs
# them; tests/run-all counts a skip as a failure as root).
set -uo pipefail
case_name=${1:?case}
build=${2:?build directory}
trainer=$build/tools/rf-trainer
launch=$build/tools/rf-launch
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
host=127.0.0.1
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source-path=SCRIPTDIR source=../../common/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"

need() {
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        exit 77
    fi
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            { echo "SKIP: no $tool (tools/rf-setup deps installs it)"; exit 77; }
    done
}

# scrape PORT OUT: GET /metrics into OUT; its HTTP status on stdout.
scrape() {
    curl -s -o "$2" -w '%{http_code}' --max-time 5 "http://$host:$1/metrics"
}

# sample FILE NAME: the value of the sample NAME (name and labels as
# written) in an exposition file.
sample() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }

# query EXPR: Prometheus' instant query, one "labels value" line per
# series of the vector (jq-free: Debian's python3 reads the JSON).
query() {
    curl -s --max-time 5 -G "http://$host:$prom_port/api/v1/query" \
        --data-urlencode "query=$1" |
        /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in r["data"]["result"]:
    m = s["metric"]
    print(m.get("instance", "-"), s["value"][1])
'
}

# A 2 ps x 2 worker job under rf-launch with --metrics_port=P: every task
# serves on P + its rank on 127.0.0.1 (ps0 P, ps1 P+1, worker0 P+2,
# worker1 P+3); each answers curl with an exposition promtool accepts and
# the metrics of its job; Prometheus (scrape_interval 1s) scrapes all four
# and its HTTP API gives each worker's global_step, > 0, at most the
# job's --train_steps, and rising between its scrapes.
case_dist() {
    need curl prometheus promtool
    local base prom_port steps=5000
    free_port_range base 4 || { fail "no free ports"; rft_finish; }
    free_port prom_port || { fail "no free port"; rft_finish; }
    cat >"$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rdmaflow
    static_configs:
      - targets: ['$host:$base', '$host:$((base + 1))', '$host:$((base + 2))', '$host:$((base + 3))']
YAML
    promtool check config "$tmp/prometheus.yml" >"$tmp/promtool" 2>&1 ||
        { fail "promtool check config"; show "$tmp/promtool"; }
    prometheus --config.file="$tmp/prometheus.yml" \
        --storage.tsdb.path="$tmp/tsdb" \
        --web.listen-address="$host:$prom_port" >"$tmp/prometheus.log" 2>&1 &
    pids+=("$!")
    local i
    for ((i = 0; i < $(t 30) * 10; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' \
            "http://$host:$prom_port/-/ready") == 200 ]] && break
        sleep 0.1
    done
    ((i < $(t 30) * 10)) && ok "prometheus ready on port $prom_port" ||
        { fail "prometheus not ready"; show "$tmp/prometheus.log"; rft_finish; }

    timeout "$(t 60)" "$launch" --ps 2 --workers 2 -- "$trainer" \
        --train_steps=$steps --partition_min_slice_bytes=0 \
        --metrics_port="$base" >"$tmp/log" 2>&1 &
    local job=$!
    pids+=("$job")
    local task k=0
    for task in ps0 ps1 worker0 worker1; do
        local p=$((base + k)) code=000
        k=$((k + 1))
        for ((i = 0; i < $(t 30) * 10; i++)); do
            code=$(scrape "$p" "$tmp/$task.txt")
            # until a ps has applied a push and both workers connected
            # (under load the second may connect after the first push), a
            # worker has run a step
            local first=rdmaflow_global_step
            [[ $task == ps* ]] && first=rdmaflow_ps_pushes_applied_total
            [[ $code == 200 ]] && (($(sample "$tmp/$task.txt" $first | grep . || echo 0) > 0)) &&
                [[ $task != ps* || $(sample "$tmp/$task.txt" rdmaflow_ps_connections) == 2 ]] &&
                break
            sleep 0.1
        done
        grep -q "^\[$task\] metrics: serving http://$host:$p/metrics$" "$tmp/log" &&
            ok "$task serves on port $p" || fail "$task: no 'serving on $p' line"
        [[ $code == 200 ]] || { fail "$task: GET /metrics answered $code"; continue; }
        promtool check metrics <"$tmp/$task.txt" >"$tmp/promtool" 2>&1 &&
            ok "$task: promtool check metrics accepts its exposition" ||
            { fail "$task: promtool check metrics:"; show "$tmp/promtool"; }
        local idx=${task: -1} job_name=${task%?}
        [[ $(sample "$tmp/$task.txt" "rdmaflow_task_info{task=\"/job:$job_name/task:$idx\"}") == 1 ]] ||
            fail "$task: no rdmaflow_task_info for /job:$job_name/task:$idx"
        if [[ $task == ps* ]]; then
            local conns pushes arena
            conns=$(sample "$tmp/$task.txt" rdmaflow_ps_connections)
            pushes=$(sample "$tmp/$task.txt" rdmaflow_ps_pushes_applied_total)
            arena=$(sample "$tmp/$task.txt" rdmaflow_ps_arena_bytes)
            [[ $conns == 2 ]] && ((pushes > 0 && arena > 0)) &&
                [[ $(sample "$tmp/$task.txt" rdmaflow_ps_auth_failures_total) == 0 &&
                   $(sample "$tmp/$task.txt" rdmaflow_ps_stale_gradients_dropped_total) == 0 ]] &&
                ok "$task: 2 connections, $pushes pushes applied, arena $arena bytes" ||
                fail "$task: connections '$conns', pushes '$pushes', arena '$arena'"
        else
            local gs n steps_total read0 read1 pushed0 pushed1
            gs=$(sample "$tmp/$task.txt" rdmaflow_global_step)
            n=$(sample "$tmp/$task.txt" rdmaflow_worker_step_seconds_count)
            steps_total=$(sample "$tmp/$task.txt" rdmaflow_worker_steps_total)
            read0=$(sample "$tmp/$task.txt" 'rdmaflow_worker_bytes_read_total{ps="/job:ps/task:0"}')
            read1=$(sample "$tmp/$task.txt" 'rdmaflow_worker_bytes_read_total{ps="/job:ps/task:1"}')
            pushed0=$(sample "$tmp/$task.txt" 'rdmaflow_worker_bytes_pushed_total{ps="/job:ps/task:0"}')
            pushed1=$(sample "$tmp/$task.txt" 'rdmaflow_worker_bytes_pushed_total{ps="/job:ps/task:1"}')
            ((gs > 0 && gs <= steps + 2 && n == steps_total && n > 0)) &&
                ok "$task: global_step $gs, $n steps timed" ||
                fail "$task: global_step '$gs', step_seconds_count '$n', steps_total '$steps_total'"
            [[ $(sample "$tmp/$task.txt" 'rdmaflow_worker_step_seconds{quantile="0.99"}') != NaN ]] ||
                fail "$task: no step-time quantiles"
            # the MLP's variables are split over both ps tasks
            ((read0 > 0 && read1 > 0 && pushed0 > 0)) &&
                ok "$task: bytes read from ps0 $read0, ps1 $read1; pushed to ps0 $pushed0" ||
                fail "$task: bytes per ps: read '$read0' '$read1', pushed '$pushed0'"
            # their sums are the step's bytes (metrics.dist: the whole MLP's step
            # reads 940584 bytes and pushes 940640) times the steps, give
            # or take the step being counted as the scrape rendered
            local rsteps=$(((read0 + read1) / 940584)) psteps=$(((pushed0 + pushed1) / 940640))
            ((rsteps * 940584 == read0 + read1 && psteps * 940640 == pushed0 + pushed1 &&
                rsteps >= steps_total - 1 && rsteps <= steps_total + 1 &&
                psteps >= steps_total - 1 && psteps <= steps_total + 1)) &&
                ok "$task: the ps split adds up to $rsteps steps' bytes read, $psteps steps' pushed" ||
                fail "$task: bytes read $((read0 + read1)), pushed $((pushed0 + pushed1)) for $steps_total steps"
        fi
    done
    # the server answers what it serves only
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$host:$((base + 2))/")
    [[ $code == 404 ]] || fail "GET / answered $code, want 404"
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$host:$((base + 2))/metrics")
    [[ $code == 405 ]] || fail "POST /metrics answered $code, want 405"

    wait "$job"
    local rc=$?
    [[ $rc == 0 ]] && ok "the job finished (exit 0)" ||
        { fail "rf-launch exited $rc"; show "$tmp/log" 30; }

    # what Prometheus scraped: range selectors still see the samples of
    # the tasks that have exited since
    query 'count(last_over_time(rdmaflow_task_info[5m]))' >"$tmp/q"
    [[ $(awk '{ print $2 }' "$tmp/q") == 4 ]] && ok "prometheus scraped all 4 tasks" ||
        { fail "prometheus scraped $(cat "$tmp/q") tasks, want 4"; show "$tmp/prometheus.log"; }
    query 'last_over_time(rdmaflow_global_step[5m])' >"$tmp/q"
    [[ $(wc -l <"$tmp/q") == 2 ]] || fail "global_step series: $(cat "$tmp/q")"
    local inst v
    while read -r inst v; do
        ((v > 0 && v <= steps + 2)) && ok "prometheus: $inst global_step $v" ||
            fail "prometheus: $inst global_step '$v', want 1..$((steps + 2))"
    done <"$tmp/q"
    query 'count_over_time(rdmaflow_global_step[5m])' >"$tmp/q"
    while read -r inst v; do
        ((v >= 2)) && ok "prometheus: $inst scraped $v times" ||
            fail "prometheus: $inst scraped $v times, want 2 or more"
    done <"$tmp/q"
    query 'max_over_time(rdmaflow_global_step[5m]) - min_over_time(rdmaflow_global_step[5m])' >"$tmp/q"
    while read -r inst v; do
        ((v > 0)) && ok "prometheus: $inst global_step rose by $v between scrapes" ||
            fail "prometheus: $inst global_step did not rise ($v)"
    done <"$tmp/q"
    query 'last_over_time(rdmaflow_ps_pushes_applied_total[5m]) > 0' >"$tmp/q"
    [[ $(wc -l <"$tmp/q") == 2 ]] && ok "prometheus: both ps tasks applied pushes" ||
        fail "ps pushes: $(cat "$tmp/q")"
}

# Configuration errors, each exit 2 naming what was wrong before the task
# does anything: a port another program listens on, a port out of range
# (flag and environment), the flag in a local run; a host name that does
# not resolve, tried again for --max_wait_secs, then exit 138 (retryable:
# README "Exit status"). And Kubernetes'
# layout: two tasks on hosts of their own (127.0.0.2, 127.0.0.3) both
# serve on the port given, no offset.
case_config() {
    need curl
    local busy ps_port w_port rc i
    free_port busy || { fail "no free port"; rft_finish; }
    free_port ps_port
    free_port w_port
    /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
time.sleep(60)
' "$busy" >"$tmp/holder" &
    pids+=("$!")
    for ((i = 0; i < 50; i++)); do
        grep -q listening "$tmp/holder" && break
        sleep 0.1
    done
    local cluster=(--ps_hosts="$host:$ps_port" --worker_hosts="$host:$w_port")
    # expect2 WHAT NEEDLE CMD...: CMD exits 2 with NEEDLE on stderr
    expect2() {
        local what=$1 needle=$2
        shift 2
        timeout "$(t 20)" "$@" >"$tmp/out" 2>&1
        rc=$?
        [[ $rc == 2 ]] && grep -qF -- "$needle" "$tmp/out" &&
            ok "$what: exit 2, '$needle'" ||
            { fail "$what: exit $rc, want 2 with '$needle'"; show "$tmp/out"; }
    }
    expect2 "a port in use" "metrics port $busy on $host is in use" \
        "$trainer" "${cluster[@]}" --job_name=ps --task_index=0 --metrics_port="$busy"
    expect2 "--metrics_port=70000" "--metrics_port" \
        "$trainer" "${cluster[@]}" --job_name=ps --task_index=0 --metrics_port=70000
    expect2 "RF_METRICS_PORT=abc" "RF_METRICS_PORT" \
        env RF_METRICS_PORT=abc "$trainer" "${cluster[@]}" --job_name=ps --task_index=0
    expect2 "--metrics_port in a local run" "--metrics_port" \
        "$trainer" --metrics_port=9100
    # a host name that does not resolve: tried again for --max_wait_secs
    local t0 ms
    t0=$(date +%s%N)
    timeout "$(t 20)" "$trainer" --ps_hosts=nosuchhost.invalid:"$ps_port" \
        --worker_hosts="$host:$w_port" --job_name=ps --task_index=0 \
        --metrics_port="$busy" --max_wait_secs=2 >"$tmp/out" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    [[ $rc == 138 ]] && ((ms >= 1900)) &&
        grep -qF "cannot resolve 'nosuchhost.invalid'" "$tmp/out" &&
        ok "an unresolvable host: retried for ${ms} ms, exit 138" ||
        { fail "an unresolvable host: exit $rc after $ms ms"; show "$tmp/out"; }

    # one task per host: both on the same port, no offset
    need
    local one
    free_port one
    RF_METRICS_PORT=$one timeout "$(t 40)" "$trainer" --ps_hosts=127.0.0.2:"$ps_port" \
        --worker_hosts=127.0.0.3:"$w_port" --job_name=ps --task_index=0 >"$tmp/ps.log" 2>&1 &
    local ps=$!
    pids+=("$ps")
    RF_METRICS_PORT=$one timeout "$(t 40)" "$trainer" --ps_hosts=127.0.0.2:"$ps_port" \
        --worker_hosts=127.0.0.3:"$w_port" --job_name=worker --task_index=0 \
        --train_steps=300 >"$tmp/w.log" 2>&1
    rc=$?
    wait "$ps"
    local rc_ps=$?
    ((rc == 0 && rc_ps == 0)) || { fail "job: worker exit $rc, ps $rc_ps"; show "$tmp/w.log"; show "$tmp/ps.log"; }
    grep -q "metrics: serving http://127.0.0.2:$one/metrics" "$tmp/ps.log" &&
        grep -q "metrics: serving http://127.0.0.3:$one/metrics" "$tmp/w.log" &&
        ok "one task per host: ps and worker both serve on port $one (RF_METRICS_PORT)" ||
        { fail "one task per host: not both on $one"; show "$tmp/ps.log" 5; show "$tmp/w.log" 5; }
}

case "$case_name" in
dist) case_dist ;;
config) case_config ;;
*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
rft_finish
