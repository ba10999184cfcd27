#!/usr/bin/env bash
# tests/integration/launch/launch_test.sh CASE RF_LAUNCH HELPER: one test case
# of rf-launch, with launch_helper.c as the program it runs. Every process a
# case starts carries a unique marker in its argv, so "no process left" is
# checked with pgrep -f MARKER. Exit 0 = pass.
set -u
CASE=$1
LAUNCH=$2
HELPER=$3
M="rflt-$$-$RANDOM$RANDOM"
TMP=$(mktemp -d)
trap 'pkill -KILL -f -- "$M" 2>/dev/null; rm -rf "$TMP"' EXIT
OUT=$TMP/out
ERR=$TMP/err

fail() {
  echo "FAIL ($CASE): $*" >&2
  echo "--- stdout (head)" >&2
  head -c 4000 "$OUT" >&2 2>/dev/null
  echo "--- stderr (head)" >&2
  head -c 4000 "$ERR" >&2 2>/dev/null
  exit 1
}

# launch ARGS...: runs rf-launch (killed after 45 s) with stdout and stderr
# in $OUT and $ERR; sets RC and ELAPSED_MS.
launch() {
  local t0 t1
  t0=$(date +%s%N)
  timeout -s KILL 45 "$LAUNCH" "$@" >"$OUT" 2>"$ERR"
  RC=$?
  t1=$(date +%s%N)
  ELAPSED_MS=$(((t1 - t0) / 1000000))
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }
# term_launch PID: SIGTERM to a background rf-launch, which exits 143
term_launch() {
  kill -TERM "$1"
  wait "$1"
  RC=$?
  expect_rc 143
}
expect_err() { grep -qF -- "$1" "$ERR" || fail "stderr lacks: $1"; }
expect_no_err() { ! grep -qF -- "$1" "$ERR" || fail "stderr has: $1"; }
expect_within() { [ "$ELAPSED_MS" -le "$1" ] || fail "took $ELAPSED_MS ms (limit $1)"; }

# No process with the marker may be left (a moment for the kernel to finish
# reaping what rf-launch killed).
no_leftovers() {
  for _ in $(seq 20); do
    pgrep -f -- "$M" >/dev/null || return 0
    sleep 0.1
  done
  ps -o pid,pgid,ppid,stat,args -p "$(pgrep -d, -f -- "$M")" >&2
  fail "processes left behind"
}

# wait_ready N: until N "ready" lines are in $OUT (10 s at most).
wait_ready() {
  for _ in $(seq 100); do
    [ "$(grep -c '] ready$' "$OUT")" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "the tasks did not all get ready"
}

# wait_err TEXT: until $ERR has TEXT (20 s at most).
wait_err() {
  for _ in $(seq 200); do
    grep -qF -- "$1" "$ERR" && return 0
    sleep 0.1
  done
  fail "stderr never got: $1"
}

# The run records of launch_helper --runs=$R: runs TASK is how many times
# TASK started; run_ms TASK K is when its run K started (rf_now_ms).
R=$TMP/runs
runs() { find "$R" -maxdepth 1 -name "$1.*" ! -name '*.t' | grep -c "/$1\.[0-9]*$"; }
run_ms() { cut -d' ' -f1 "$R/$1.$2.t"; }
fresh_runs() { rm -rf "$R" && mkdir "$R"; }
# expect_gap TASK K MS: run K+1 of TASK started at least MS ms after run K.
expect_gap() {
  local gap=$(($(run_ms "$1" $(($2 + 1))) - $(run_ms "$1" "$2")))
  [ "$gap" -ge "$3" ] || fail "$1: run $(($2 + 1)) started $gap ms after run $2 (backoff $3 ms)"
}
# expect_count N PATTERN FILE: N lines of FILE match the fixed string.
expect_count() {
  local c
  c=$(grep -cF -- "$2" "$3")
  [ "$c" = "$1" ] || fail "$c lines with '$2' in $3, expected $1"
}

field() { # field TASK KEY: value of "[TASK] KEY value" in $OUT
  local line
  line=$(grep -F -m1 -- "[$1] $2 " "$OUT")
  echo "${line#"[$1] $2 "}"
}

case_flags() {
  TF_CONFIG='{"bogus":1}' launch --ps 2 --workers 3 -- "$HELPER" --echo \
    --marker="$M"
  expect_rc 0
  local ps_hosts="" worker_hosts="" t job idx
  for t in ps0 ps1 worker0 worker1 worker2; do
    job=${t%[0-9]}
    idx=${t#"$job"}
    [ "$(field $t argc)" = 7 ] || fail "$t: argc $(field $t argc)"
    [ "$(field $t 'argv 1')" = --echo ] || fail "$t: argv 1"
    [ "$(field $t 'argv 2')" = "--marker=$M" ] || fail "$t: argv 2"
    [ "$(field $t 'argv 5')" = "--job_name=$job" ] || fail "$t: job_name"
    [ "$(field $t 'argv 6')" = "--task_index=$idx" ] || fail "$t: task_index"
    [ "$(field $t tf_config)" = "(unset)" ] || fail "$t: TF_CONFIG not removed"
    [ "$(field $t self)" = "$t" ] || fail "$t: self"
    local p w
    p=$(field $t 'argv 3')
    w=$(field $t 'argv 4')
    [ -z "$ps_hosts" ] && ps_hosts=$p && worker_hosts=$w
    [ "$p" = "$ps_hosts" ] || fail "$t: ps_hosts differ: $p"
    [ "$w" = "$worker_hosts" ] || fail "$t: worker_hosts differ: $w"
  done
  [[ $ps_hosts =~ ^--ps_hosts=127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]] ||
    fail "ps_hosts: $ps_hosts"
  [[ $worker_hosts =~ ^--worker_hosts=(127\.0\.0\.1:[0-9]+,){2}127\.0\.0\.1:[0-9]+$ ]] ||
    fail "worker_hosts: $worker_hosts"
  local ports
  ports=$(echo "${ps_hosts#*=},${worker_hosts#*=}" | tr , '\n' | cut -d: -f2)
  [ "$(echo "$ports" | sort -u | wc -l)" = 5 ] || fail "ports not distinct: $ports"
  # --trace appends one more flag; 0 ps tasks: no --ps_hosts at all.
  launch --ps 0 --workers 1 --trace "$TMP/t.json" -- "$HELPER" --echo
  expect_rc 0
  [ "$(field worker0 argc)" = 6 ] || fail "ps 0: argc $(field worker0 argc)"
  [[ $(field worker0 'argv 2') == --worker_hosts=* ]] || fail "ps 0: argv 2"
  [ "$(field worker0 'argv 5')" = "--trace=$TMP/t.json.worker0.json" ] ||
    fail "--trace flag: $(field worker0 'argv 5')"
}

case_tf_config() {
  launch --ps 1 --workers 2 --chief -- "$HELPER" --echo --marker="$M"
  expect_rc 0
  local t cl
  for t in ps0 chief worker0 worker1; do
    [ "$(field $t argc)" = 3 ] || fail "$t: argc $(field $t argc) (cluster flags?)"
    [ "$(field $t self)" = "$t" ] || fail "$t: self $(field $t self)"
    for cl in ps chief worker; do
      [ "$(field $t "tf_cluster $cl")" = "$(field ps0 "tf_cluster $cl")" ] ||
        fail "$t: cluster.$cl differs"
    done
  done
  [[ $(field ps0 'tf_cluster ps') =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "cluster.ps"
  [[ $(field ps0 'tf_cluster chief') =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "cluster.chief"
  [[ $(field ps0 'tf_cluster worker') =~ ^127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]] ||
    fail "cluster.worker"
  [ "$(field worker1 tf_task)" = '{"type":"worker","index":1}' ] || fail "worker1 task"
  [ "$(field chief tf_task)" = '{"type":"chief","index":0}' ] || fail "chief task"
  [ "$(field ps0 tf_task)" = '{"type":"ps","index":0}' ] || fail "ps0 task"
  launch --ps 1 --workers 1 --tf_config -- "$HELPER" --echo
  expect_rc 0
  [ -z "$(field worker0 'tf_cluster chief')" ] || fail "a chief without --chief"
  [ "$(field worker0 argc)" = 2 ] || fail "--tf_config: argc"
}

case_output() {
  local n=1500
  launch --ps 2 --workers 2 -- "$HELPER" --spam=$n --marker="$M"
  expect_rc 0
  local s f
  for s in out err; do
    f=$OUT
    [ $s = err ] && f=$ERR
    awk -v stream=$s -v n=$n '
      BEGIN { letters = "abcdefghijklmnopqrstuvwxyz" }
      {
        if (NF != 5 || $1 != "[" $2 "]" || $3 != stream) { bad = "malformed: " substr($0, 1, 80); exit 1 }
        k = $4 + 0
        if (k != next_k[$2] + 0) { bad = $2 " line " k " after " next_k[$2] - 1; exit 1 }
        next_k[$2] = k + 1
        p = $5
        if (length(p) != 1 + (k * 37) % 3000) { bad = $2 " line " k " has length " length(p); exit 1 }
        gsub(substr(letters, k % 26 + 1, 1), "", p)
        if (p != "") { bad = $2 " line " k " is mixed"; exit 1 }
      }
      END {
        if (bad != "") { print bad; exit 1 }
        split("ps0 ps1 worker0 worker1", tasks, " ")
        for (i = 1; i <= 4; i++)
          if (next_k[tasks[i]] != n) { print tasks[i] " has " next_k[tasks[i]] " lines"; exit 1 }
      }' "$f" >"$TMP/awk" || fail "std$s: $(cat "$TMP/awk")"
  done
}

case_failure() {
  launch --ps 2 --workers 2 -- "$HELPER" --exit=worker1:3:300 --then=forever \
    --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker1 exited with status 3; stopping the others"
  grep -qxF "[worker1] exiting with 3" "$OUT" || fail "worker1's last line"
  expect_within 10000
  no_leftovers
  [ "$(grep -c '^rf-launch:' "$ERR")" = 1 ] || fail "more than one message"
}

case_signal_task() {
  launch --ps 1 --workers 2 -- "$HELPER" --kill=worker0:9:300 --then=forever \
    --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 was killed by signal 9 (SIGKILL); stopping the others"
  expect_within 10000
  no_leftovers
}

case_ignore_term() {
  launch --ps 1 --workers 2 --grace 1 -- "$HELPER" --exit=worker0:3:300 \
    --ignore-term --then=forever --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 exited with status 3; stopping the others"
  expect_err "rf-launch: ps0 did not exit within 1 s of SIGTERM; killing it"
  expect_err "rf-launch: worker1 did not exit within 1 s of SIGTERM; killing it"
  expect_within 8000
  no_leftovers
}

case_grandchild() {
  # A failure with grandchildren in the tasks' groups and in new sessions.
  local g
  for g in --grandchild --grandchild=setsid; do
    launch --ps 1 --workers 2 -- "$HELPER" "$g" --exit=worker1:3:300 \
      --then=forever --marker="$M"
    expect_rc 1
    expect_within 10000
    no_leftovers
  done
  # Success, the grandchildren outliving their tasks.
  launch --ps 1 --workers 1 -- "$HELPER" --grandchild=setsid --then=100 \
    --marker="$M"
  expect_rc 0
  expect_within 10000
  no_leftovers
}

# signal_launch SIG STATUS: rf-launch (as a job of its own, so SIGINT is not
# ignored) gets SIG once the tasks are ready.
signal_launch() {
  set -m
  "$LAUNCH" --ps 2 --workers 2 -- "$HELPER" --ready --then=forever \
    --marker="$M" >"$OUT" 2>"$ERR" &
  local pid=$!
  set +m
  wait_ready 4
  kill -"$1" $pid
  local t0
  t0=$(date +%s)
  wait $pid
  RC=$?
  [ $(($(date +%s) - t0)) -le 8 ] || fail "rf-launch took too long after SIG$1"
  expect_rc "$2"
  expect_err "rf-launch: got SIG$1; stopping the tasks"
  no_leftovers
}

case_sigint() {
  signal_launch INT 130
  signal_launch TERM 143
}

case_pdeathsig() {
  "$LAUNCH" --ps 2 --workers 2 -- "$HELPER" --ready --then=forever \
    --marker="$M" >"$OUT" 2>"$ERR" &
  local pid=$!
  wait_ready 4
  kill -KILL $pid
  wait $pid 2>/dev/null
  no_leftovers
}

case_timeout() {
  launch --ps 1 --workers 2 --timeout 1 -- "$HELPER" --then=forever \
    --marker="$M"
  expect_rc 124
  expect_err "rf-launch: timeout: tasks still running after 1 s; stopping them"
  [ "$ELAPSED_MS" -ge 900 ] || fail "stopped after $ELAPSED_MS ms"
  expect_within 6000
  no_leftovers
}

case_ps_linger() {
  # ps tasks that do not exit: stopped with a warning, the launch succeeds.
  launch --ps 2 --workers 2 --ps_grace 0.5 -- "$HELPER" --ps-then=forever \
    --then=200 --marker="$M"
  expect_rc 0
  expect_err "rf-launch: warning: ps0 still running 0.5 s after every worker finished; stopping it (SIGTERM)"
  expect_err "rf-launch: warning: ps1 still running"
  expect_within 8000
  no_leftovers
  # ps tasks that exit by themselves after the workers: no warning.
  launch --ps 2 --workers 2 -- "$HELPER" --ps-then=500 --then=exit \
    --marker="$M"
  expect_rc 0
  [ ! -s "$ERR" ] || fail "unexpected messages"
  no_leftovers
  # A ps failing once the workers are done fails the launch.
  launch --ps 2 --workers 1 -- "$HELPER" --ps-then=forever \
    --exit=ps1:4:300 --then=exit --marker="$M"
  expect_rc 1
  expect_err "rf-launch: ps1 exited with status 4; stopping the others"
  no_leftovers
}

case_trace() {
  local T=$TMP/t.json
  echo '{"traceEvents":[]}' >"$T.worker1.json" # stale: must be removed
  launch --ps 2 --workers 2 --trace "$T" -- "$HELPER" --write-trace \
    --corrupt-trace=worker1 --no-trace=ps1 --marker="$M"
  expect_rc 0
  expect_err "rf-launch: trace: $T.ps1.json: no trace from ps1 (No such file or directory)"
  expect_err "rf-launch: trace: $T.worker1.json: the trace of worker1 is not valid JSON"
  expect_err "rf-launch: trace: $T: merged the traces of 2 of 4 tasks"
  "$HELPER" --check-trace "$T" >"$TMP/check" || fail "merged trace unreadable"
  grep -qxF "process 1 ps0" "$TMP/check" || fail "ps0 name"
  grep -qxF "process 3 worker0" "$TMP/check" || fail "worker0 name"
  grep -qxF "sort 3 2" "$TMP/check" || fail "worker0 sort index"
  grep -qF "own-" "$TMP/check" && fail "the tasks' own process names kept"
  grep -qxF "thread 1" "$TMP/check" || fail "thread names dropped"
  grep -qxF "events 1 13 first_ts 100.125" "$TMP/check" || fail "ps0 events"
  grep -qxF "events 3 13 first_ts 100.125" "$TMP/check" || fail "worker0 events"
  [ "$(grep -c '^events' "$TMP/check")" = 2 ] || fail "extra pids"
  grep -qxF "nopid 0" "$TMP/check" || fail "events without pid"
  grep -qxF "aligned false" "$TMP/check" || fail "aligned"
  # A symbolic link as --trace: its target is written, the link stays.
  mkdir "$TMP/sub"
  ln -s sub/merged.json "$TMP/link.json"
  launch --ps 1 --workers 1 --trace "$TMP/link.json" -- "$HELPER" \
    --write-trace --marker="$M"
  expect_rc 0
  [ -L "$TMP/link.json" ] && [ -f "$TMP/sub/merged.json" ] ||
    fail "--trace through a link: $(ls -l "$TMP" "$TMP/sub")"
  "$HELPER" --check-trace "$TMP/link.json" >"$TMP/check" ||
    fail "merged trace through a link unreadable"
  ls -A "$TMP" "$TMP/sub" | grep -q '\.tmp\.' && fail "a temporary left"
  # Every task with an epoch: one time origin.
  launch --ps 2 --workers 2 --trace "$T" -- "$HELPER" --write-trace \
    --epoch=1000 --marker="$M"
  expect_rc 0
  expect_no_err "otherData"
  "$HELPER" --check-trace "$T" >"$TMP/check" || fail "merged trace unreadable"
  grep -qxF "aligned true" "$TMP/check" || fail "not aligned"
  grep -qxF "events 1 13 first_ts 100.125" "$TMP/check" || fail "ps0 shift"
  grep -qxF "events 2 13 first_ts 1100.125" "$TMP/check" || fail "ps1 shift"
  grep -qxF "events 3 13 first_ts 10100.125" "$TMP/check" || fail "worker0 shift"
  grep -qxF "events 4 13 first_ts 11100.125" "$TMP/check" || fail "worker1 shift"
  # No traceEvents, the bare array format, an empty file; a failed launch
  # still merges.
  launch --ps 1 --workers 2 --trace "$T" -- sh -c '
    for a; do case $a in --trace=*) f=${a#--trace=};; esac; done
    case $f in
      *ps0*) echo "{\"x\":1}" >"$f";;
      *worker0*) echo "[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":5,\"tid\":1}, 7]" >"$f";;
      *worker1*) : >"$f" # fail once the others have written theirs
        b=${f%worker1.json}
        while [ ! -s "${b}ps0.json" ] || [ ! -s "${b}worker0.json" ]; do
          sleep 0.05
        done
        exit 5;;
    esac' sh
  expect_rc 1
  expect_err "rf-launch: trace: $T.ps0.json: the trace of ps0 has no \"traceEvents\" array"
  expect_err "rf-launch: trace: $T.worker0.json: skipped 1 entries of worker0 that are not objects"
  expect_err "rf-launch: trace: $T.worker1.json: the trace of worker1 is empty"
  expect_err "rf-launch: trace: $T: merged the traces of 1 of 3 tasks"
  "$HELPER" --check-trace "$T" >"$TMP/check" || fail "merged trace unreadable"
  grep -qxF "events 2 3 first_ts 1.000" "$TMP/check" || fail "array format"
}

# restart_launch ARGS...: rf-launch --restart_on_failure ARGS in the
# background, as a job of its own; sets PID.
restart_launch() {
  set -m
  "$LAUNCH" --ps 1 --workers 1 --restart_on_failure "$@" >"$OUT" 2>"$ERR" &
  PID=$!
  set +m
}

# wait_lines N TEXT: until $OUT has N lines with TEXT (10 s at most).
wait_lines() {
  for _ in $(seq 100); do
    [ "$(grep -cF -- "$2" "$OUT")" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "fewer than $1 lines with: $2"
}

case_restart() {
  # ps1 is killed by SIGKILL in its first run; the others wait for its
  # second run, then everyone exits 0.
  fresh_runs
  launch --ps 2 --workers 2 --restart_on_failure -- "$HELPER" --runs="$R" \
    --ready --crash=ps1:9:1 --await-run=ps1:2 --then=exit --marker="$M"
  expect_rc 0
  expect_err "rf-launch: ps1 was killed by signal 9 (SIGKILL); restarting it in 1 s (restart 1 of 3)"
  expect_count 1 "restarting it" "$ERR"
  expect_err "rf-launch: restarts: ps0 0, ps1 1, worker0 0, worker1 0"
  expect_no_err "warning"
  [ "$(runs ps1)" = 2 ] || fail "ps1 started $(runs ps1) times"
  local t
  for t in ps0 worker0 worker1; do
    [ "$(runs $t)" = 1 ] || fail "$t started $(runs $t) times"
  done
  grep -qE '^argv [0-9]+ --job_name=ps$' "$R/ps1.1" || fail "no --job_name in the record"
  grep -qE '^argv [0-9]+ --task_index=1$' "$R/ps1.1" || fail "no --task_index in the record"
  grep -qE '^argv [0-9]+ --ps_hosts=127\.0\.0\.1:[0-9]+,' "$R/ps1.1" || fail "no --ps_hosts in the record"
  grep -q '^env ' "$R/ps1.1" || fail "no environment in the record"
  grep -qx 'pgroup_leader 1' "$R/ps1.2" || fail "restarted ps1 leads no process group"
  grep -qx 'pdeathsig 9' "$R/ps1.2" || fail "restarted ps1 has no PR_SET_PDEATHSIG(SIGKILL)"
  cmp -s "$R/ps1.1" "$R/ps1.2" ||
    fail "ps1's second run differs: $(diff "$R/ps1.1" "$R/ps1.2" | head -5)"
  expect_gap ps1 1 1000
  expect_count 2 "[ps1] ready" "$OUT"
  expect_count 1 "[ps0] ready" "$OUT"
  no_leftovers
  # The chief (TF_CONFIG mode) killed by SIGTERM, --max_restarts=1.
  fresh_runs
  launch --ps 1 --workers 1 --chief --restart_on_failure --max_restarts=1 \
    -- "$HELPER" --runs="$R" --crash=chief:15:1 --await-run=chief:2 \
    --then=exit --marker="$M"
  expect_rc 0
  expect_err "rf-launch: chief was killed by signal 15 (SIGTERM); restarting it in 1 s (restart 1 of 1)"
  expect_err "rf-launch: restarts: ps0 0, chief 1, worker0 0"
  [ "$(runs chief)" = 2 ] || fail "chief started $(runs chief) times"
  grep -qF '"task":{"type":"chief","index":0}' "$R/chief.1" || fail "no TF_CONFIG in the record"
  cmp -s "$R/chief.1" "$R/chief.2" ||
    fail "the chief's second run differs: $(diff "$R/chief.1" "$R/chief.2" | head -5)"
  no_leftovers
  # What is left of a failed run's process group (its child) is killed
  # before the restart.
  fresh_runs
  restart_launch -- "$HELPER" --runs="$R" --grandchild --ready \
    --crash=worker0:9:1 --then=forever --marker="$M"
  wait_lines 2 "[worker0] ready"
  local gc st
  gc=$(cat "$R/worker0.1.gc")
  for _ in $(seq 50); do # gone, or a zombie not yet reaped
    st=$(ps -o stat= -p "$gc")
    [ -z "$st" ] || [[ $st == Z* ]] && break
    sleep 0.1
  done
  [ -z "$st" ] || [[ $st == Z* ]] || fail "worker0's first child still runs ($st)"
  ps -o stat= -p "$(cat "$R/worker0.2.gc")" >/dev/null ||
    fail "worker0's second child is gone"
  kill -TERM $PID
  wait $PID
  RC=$?
  expect_rc 143
  no_leftovers
}

case_restart_fails() {
  # The program is gone when its restart is due: the launch fails.
  local prog=$TMP/self-deleting
  printf '#!/bin/sh\nrm -f "$0"\nkill -KILL $$\n' >"$prog"
  chmod +x "$prog"
  launch --ps 0 --workers 1 --restart_on_failure -- "$prog" --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 was killed by signal 9 (SIGKILL); restarting it in 1 s (restart 1 of 3)"
  expect_err "rf-launch: worker0: restart 1 failed: cannot run '$prog': No such file or directory"
  expect_err "rf-launch: restarts: worker0 0"
  no_leftovers
}

case_max_restarts() {
  fresh_runs
  launch --ps 1 --workers 2 --restart_on_failure --max_restarts 2 -- \
    "$HELPER" --runs="$R" --exit=worker1:3:0 --then=forever --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker1 exited with status 3; restarting it in 1 s (restart 1 of 2)"
  expect_err "rf-launch: worker1 exited with status 3; restarting it in 2 s (restart 2 of 2)"
  expect_err "rf-launch: worker1 exited with status 3 after 2 restarts (--max_restarts 2); stopping the others"
  expect_err "rf-launch: restarts: ps0 0, worker0 0, worker1 2"
  expect_count 2 "restarting it" "$ERR"
  expect_count 3 "[worker1] exiting with 3" "$OUT"
  [ "$(runs worker1)" = 3 ] || fail "worker1 started $(runs worker1) times"
  [ "$(runs worker0)" = 1 ] || fail "worker0 started $(runs worker0) times"
  [ "$(runs ps0)" = 1 ] || fail "ps0 started $(runs ps0) times"
  expect_gap worker1 1 1000
  expect_gap worker1 2 2000
  no_leftovers
  # --max_restarts=0: the first failure stops everything.
  fresh_runs
  launch --ps 1 --workers 1 --restart_on_failure --max_restarts=0 -- \
    "$HELPER" --runs="$R" --crash=worker0:9:1 --then=forever --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 was killed by signal 9 (SIGKILL) after 0 restarts (--max_restarts 0); stopping the others"
  expect_err "rf-launch: restarts: ps0 0, worker0 0"
  expect_no_err "restarting it"
  [ "$(runs worker0)" = 1 ] || fail "worker0 started $(runs worker0) times"
  no_leftovers
}

case_no_restart() {
  # Exits 0 are never restarted: ps0 first (the workers wait until it is
  # gone), then the workers.
  fresh_runs
  launch --ps 1 --workers 2 --restart_on_failure -- "$HELPER" --runs="$R" \
    --await-gone=ps0:1 --then=exit --marker="$M"
  expect_rc 0
  local t
  for t in ps0 worker0 worker1; do
    [ "$(runs $t)" = 1 ] || fail "$t started $(runs $t) times"
  done
  expect_err "rf-launch: restarts: ps0 0, worker0 0, worker1 0"
  [ "$(grep -c '^rf-launch:' "$ERR")" = 1 ] || fail "messages besides the summary"
  no_leftovers
  # DRAIN: ps1 fails once rf-launch has reaped the only worker; it is not
  # restarted and the launch fails, as without the flag.
  fresh_runs
  launch --ps 2 --workers 1 --restart_on_failure -- "$HELPER" --runs="$R" \
    --await-gone=worker0:1 --exit=ps1:4:0 --ps-then=forever --then=exit \
    --marker="$M"
  expect_rc 1
  expect_err "rf-launch: ps1 exited with status 4 once every worker had finished (not restarted); stopping the others"
  expect_no_err "restarting it"
  expect_err "rf-launch: restarts: ps0 0, ps1 0, worker0 0"
  [ "$(runs ps1)" = 1 ] || fail "ps1 started $(runs ps1) times"
  no_leftovers
  # ps0 waits 4 s for its third restart when the only worker exits 0: the
  # job is over, the restart is dropped and the launch succeeds.
  fresh_runs
  launch --ps 1 --workers 1 --restart_on_failure -- "$HELPER" --runs="$R" \
    --crash=ps0:9:3 --await-gone=ps0:3 --then=exit --marker="$M"
  expect_rc 0
  expect_err "rf-launch: ps0 was killed by signal 9 (SIGKILL); restarting it in 4 s (restart 3 of 3)"
  expect_err "rf-launch: ps0: restart cancelled: every worker has finished"
  expect_err "rf-launch: restarts: ps0 2, worker0 0"
  [ "$(runs ps0)" = 3 ] || fail "ps0 started $(runs ps0) times"
  [ "$(runs worker0)" = 1 ] || fail "worker0 started $(runs worker0) times"
  no_leftovers
  # Without --restart_on_failure nothing is restarted and no summary.
  fresh_runs
  launch --ps 1 --workers 1 -- "$HELPER" --runs="$R" --crash=worker0:9:1 \
    --then=forever --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 was killed by signal 9 (SIGKILL); stopping the others"
  expect_no_err "restart"
  [ "$(runs worker0)" = 1 ] || fail "worker0 started $(runs worker0) times"
  no_leftovers
}

case_restart_status() {
  # Exit 2 (a usage or configuration error) is never restarted: the launch
  # stops at once and exits 2, with or without --restart_on_failure.
  fresh_runs
  launch --ps 1 --workers 2 --restart_on_failure -- "$HELPER" --runs="$R" \
    --exit=worker1:2:0 --then=forever --marker="$M"
  expect_rc 2
  expect_err "rf-launch: worker1 exited with status 2 (a usage or configuration error: not restarted); stopping the others"
  expect_no_err "restarting it"
  [ "$(runs worker1)" = 1 ] || fail "worker1 started $(runs worker1) times"
  no_leftovers
  launch --ps 1 --workers 1 -- "$HELPER" --exit=worker0:2:0 --then=forever \
    --marker="$M"
  expect_rc 2
  expect_err "rf-launch: worker0 exited with status 2 (a usage or configuration error); stopping the others"
  no_leftovers
  # Exit 138 (rf-trainer's retryable failure) is restarted.
  fresh_runs
  launch --ps 1 --workers 1 --restart_on_failure --max_restarts 1 -- \
    "$HELPER" --runs="$R" --exit=worker0:138:0 --then=forever --marker="$M"
  expect_rc 1
  expect_err "rf-launch: worker0 exited with status 138; restarting it in 1 s (restart 1 of 1)"
  expect_err "rf-launch: worker0 exited with status 138 after 1 restart (--max_restarts 1); stopping the others"
  [ "$(runs worker0)" = 2 ] || fail "worker0 started $(runs worker0) times"
  no_leftovers
}

case_restart_signal() {
  # SIGTERM while worker0 waits 4 s for its third restart.
  fresh_runs
  restart_launch --max_restarts 5 -- "$HELPER" --runs="$R" \
    --crash=worker0:9:99 --then=forever --marker="$M"
  wait_err "(restart 3 of 5)"
  kill -TERM $PID
  wait $PID
  RC=$?
  expect_rc 143
  expect_err "rf-launch: got SIGTERM; stopping the tasks"
  expect_err "rf-launch: worker0: restart cancelled: stopping"
  expect_err "rf-launch: restarts: ps0 0, worker0 2"
  expect_no_err "(restart 4 of 5)"
  no_leftovers
  [ "$(runs worker0)" = 3 ] || fail "worker0 started $(runs worker0) times"
  # SIGTERM once worker0's second run is going.
  fresh_runs
  restart_launch -- "$HELPER" --runs="$R" --ready --crash=worker0:9:1 \
    --then=forever --marker="$M"
  wait_lines 2 "[worker0] ready"
  kill -TERM $PID
  wait $PID
  RC=$?
  expect_rc 143
  expect_err "rf-launch: got SIGTERM; stopping the tasks"
  expect_count 1 "restarting it" "$ERR"
  expect_err "rf-launch: restarts: ps0 0, worker0 1"
  no_leftovers
  [ "$(runs worker0)" = 2 ] || fail "worker0 started $(runs worker0) times"
  # --timeout covers the whole job: restarts stop with it (10 restarts
  # would take minutes).
  fresh_runs
  launch --ps 1 --workers 1 --timeout 2 --restart_on_failure \
    --max_restarts 10 -- "$HELPER" --runs="$R" --crash=worker0:9:99 \
    --then=forever --marker="$M"
  expect_rc 124
  expect_err "rf-launch: timeout: tasks still running after 2 s; stopping them"
  expect_within 10000
  awk '/timeout:/ { t = 1 } t && /restarting it/ { bad = 1 } END { exit bad }' \
    "$ERR" || fail "a restart after the timeout"
  no_leftovers
  local restarted
  restarted=$(sed -n 's/^rf-launch: restarts: ps0 0, worker0 \([0-9]*\)$/\1/p' "$ERR")
  [ -n "$restarted" ] || fail "no restart summary"
  [ "$(runs worker0)" = $((restarted + 1)) ] ||
    fail "worker0 started $(runs worker0) times after $restarted restarts"
}

case_usage() {
  local spec LONG
  LONG=$(printf 'y%.0s' $(seq 2000))
  mkfifo "$TMP/fifo"
  echo plain >"$TMP/plain"
  while IFS='|' read -r spec msg; do
    # shellcheck disable=SC2086
    launch $spec
    expect_rc 2
    expect_err "rf-launch: $msg"
  done <<EOF_USAGE
--ps -1 --workers 2 -- true|--ps: -1 is out of range [0, 64]
--ps 65 --workers 2 -- true|--ps: 65 is out of range [0, 64]
--ps 1 --workers x -- true|--workers: 'x' is not an integer
--ps 1 --workers 1 true|unexpected argument 'true' (put '--' before the program
--ps 1 --workers 1|missing '--' before the program
--ps 1 --workers 1 --|no program after '--'
--ps 1 --workers 1 --bogus -- true|--bogus: unknown flag
--workers 1 -- true|--ps: required
--ps 1 -- true|--workers: required
--ps 1 --workers 0 -- true|--workers: 0 workers and no --chief
--ps 1 --workers 1 --timeout abc -- true|--timeout: 'abc' is not a number of seconds
--ps 1 --workers 1 --timeout 0 -- true|--timeout: must be more than 0 seconds
--ps 1 --workers 1 --grace -1 -- true|--grace: -1 is out of range
--ps 1 --workers 1 --chief=1 -- true|--chief takes no value
--ps 1 --workers 1 --ps|--ps: missing value
--ps 1 --workers 1 --host a,b -- true|--host: 'a,b' is not an address
--ps 1 --workers 1 --trace /nonexistent-dir/x.json -- true|--trace: /nonexistent-dir/x.json: directory /nonexistent-dir does not exist
--ps 1 --workers 1 --trace $TMP -- true|--trace: $TMP is a directory
--ps 1 --workers 1 --trace /dev/null -- true|--trace: /dev/null is not a regular file
--ps 1 --workers 1 --trace $TMP/fifo -- true|--trace: $TMP/fifo is not a regular file
--ps 1 --workers 1 --trace $TMP/plain/x.json -- true|--trace: $TMP/plain/x.json: $TMP/plain is not a directory
--ps 1 --workers $LONG -- true|--workers: '${LONG:0:64}...' is not an integer
--ps 1 --workers 1 --timeout $LONG -- true|--timeout: '${LONG:0:64}...' is not a number of seconds
--ps 1 --workers 1 --$LONG -- true|--${LONG:0:64}...: unknown flag
--ps 1 --workers 1 --restart_on_failure --max_restarts=-1 -- true|--max_restarts: -1 is out of range [0, 1000]
--ps 1 --workers 1 --restart_on_failure --max_restarts 1001 -- true|--max_restarts: 1001 is out of range [0, 1000]
--ps 1 --workers 1 --restart_on_failure --max_restarts=abc -- true|--max_restarts: 'abc' is not an integer
--ps 1 --workers 1 --restart_on_failure --max_restarts= -- true|--max_restarts: '' is not an integer
--ps 1 --workers 1 --restart_on_failure --max_restarts|--max_restarts: missing value
--ps 1 --workers 1 --max_restarts 2 -- true|--max_restarts: needs --restart_on_failure
--ps 1 --workers 1 --restart_on_failure=1 -- true|--restart_on_failure takes no value
EOF_USAGE
  launch --help
  expect_rc 0
  grep -qF "usage: rf-launch" "$OUT" || fail "--help"
  grep -qF -- "--restart_on_failure" "$OUT" || fail "--help lacks --restart_on_failure"
  grep -qF -- "--max_restarts N" "$OUT" || fail "--help lacks --max_restarts"
  launch --ps 1 --workers 1 -- /nonexistent/program
  expect_rc 1
  expect_err "rf-launch: ps0: cannot run '/nonexistent/program': No such file or directory"
}

# The job's own cluster secret: every task (restarts too) gets the same
# one in RF_CLUSTER_SECRET_FILE, a 0600 file in a 0700 run folder under
# $TMPDIR, gone at the end however the launch ends; --keep_secret keeps
# it; a secret the user gives is used instead; no run folder: exit 1.
case_secret() {
  local td=$TMP/td line path h= t
  mkdir "$td"
  fresh_runs
  TMPDIR=$td launch --ps 1 --workers 2 -- "$HELPER" --runs="$R" \
    --marker="$M"
  expect_rc 0
  [ ! -s "$ERR" ] || fail "rf-launch said something about the secret"
  for t in ps0 worker0 worker1; do
    line=$(grep '^secret_file ' "$R/$t.1")
    [[ $line =~ ^secret_file\ 600\ 65\ [0-9a-f]{16}$ ]] ||
      fail "$t: '$line' (want mode 600, 65 bytes)"
    [ -z "$h" ] && h=${line##* }
    [ "${line##* }" = "$h" ] || fail "$t has another secret"
    path=$(sed -n 's/^env RF_CLUSTER_SECRET_FILE=//p' "$R/$t.1")
    [[ $path == "$td"/rf-launch.??????/secret ]] || fail "$t: secret at '$path'"
  done
  [ -z "$(ls -A "$td")" ] || fail "left in TMPDIR: $(ls -A "$td")"
  # the folder's mode, seen by a task while it runs
  TMPDIR=$td launch --ps 0 --workers 1 -- sh -c \
    'stat -c "folder %a" "${RF_CLUSTER_SECRET_FILE%/*}"' --marker="$M"
  expect_rc 0
  grep -qx '\[worker0\] folder 700' "$OUT" || fail "run folder: $(cat "$OUT")"
  # a fresh secret per launch
  fresh_runs
  TMPDIR=$td launch --ps 0 --workers 1 -- "$HELPER" --runs="$R" \
    --marker="$M"
  line=$(grep '^secret_file ' "$R/worker0.1")
  [ "${line##* }" != "$h" ] || fail "the second launch reused the secret"
  # removed after a failed task, a signal and --timeout as well
  TMPDIR=$td launch --ps 1 --workers 1 -- "$HELPER" --exit=worker0:3:100 \
    --ps-then=forever --marker="$M"
  expect_rc 1
  [ -z "$(ls -A "$td")" ] || fail "left after a failure: $(ls -A "$td")"
  TMPDIR=$td launch --ps 1 --workers 1 --timeout 1 -- "$HELPER" \
    --then=forever --marker="$M"
  expect_rc 124
  [ -z "$(ls -A "$td")" ] || fail "left after --timeout: $(ls -A "$td")"
  TMPDIR=$td "$LAUNCH" --ps 1 --workers 1 -- "$HELPER" --ready \
    --then=forever --marker="$M" >"$OUT" 2>"$ERR" &
  local pid=$!
  wait_ready 2
  term_launch $pid
  [ -z "$(ls -A "$td")" ] || fail "left after SIGTERM: $(ls -A "$td")"
  no_leftovers
  # --keep_secret
  TMPDIR=$td launch --ps 0 --workers 1 --keep_secret -- "$HELPER" \
    --marker="$M"
  expect_rc 0
  path=$(sed -n 's/^rf-launch: the cluster secret is kept in \(.*\) (--keep_secret)$/\1/p' "$ERR")
  [[ $path == "$td"/rf-launch.??????/secret ]] || fail "--keep_secret: '$path'"
  [ "$(stat -c %a "$path" 2>/dev/null)" = 600 ] || fail "kept secret: mode $(stat -c %a "$path")"
  rm -rf "${path%/secret}"
  # the user's secret: RF_CLUSTER_SECRET_FILE, or --cluster_secret_file
  fresh_runs
  head -c 40 /dev/urandom >"$TMP/mine" && chmod 600 "$TMP/mine"
  TMPDIR=$td RF_CLUSTER_SECRET_FILE=$TMP/mine launch --ps 0 --workers 1 \
    -- "$HELPER" --runs="$R" --marker="$M"
  expect_rc 0
  grep -qx "env RF_CLUSTER_SECRET_FILE=$TMP/mine" "$R/worker0.1" ||
    fail "the user's RF_CLUSTER_SECRET_FILE did not reach the task"
  grep -q '^secret_file 600 40 ' "$R/worker0.1" || fail "not the user's secret"
  fresh_runs
  TMPDIR=$td launch --ps 0 --workers 1 -- "$HELPER" --runs="$R" \
    --cluster_secret_file="$TMP/mine" --marker="$M"
  expect_rc 0
  ! grep -q '^env RF_CLUSTER_SECRET_FILE=' "$R/worker0.1" ||
    fail "a secret of rf-launch's beside --cluster_secret_file"
  [ -z "$(ls -A "$td")" ] || fail "a run folder beside the user's secret"
  # no run folder possible
  TMPDIR=$TMP/missing launch --ps 0 --workers 1 -- "$HELPER" --marker="$M"
  expect_rc 1
  expect_err "rf-launch: cannot make the job's run folder for its cluster secret in $TMP/missing: No such file or directory"
}

# ctl ARGS...: a second rf-launch (--add_worker / --remove_worker), its
# output in $TMP/ctl_out and $TMP/ctl_err, status in CRC.
ctl() {
  timeout -s KILL 20 "$LAUNCH" "$@" >"$TMP/ctl_out" 2>"$TMP/ctl_err"
  CRC=$?
}
expect_ctl() { # STATUS TEXT: the second rf-launch's status and message
  [ "$CRC" -eq "$1" ] || fail "rf-launch $CTL_WHAT: exit $CRC, expected $1 ($(cat "$TMP/ctl_err"))"
  grep -qF -- "$2" "$TMP/ctl_out" "$TMP/ctl_err" ||
    fail "rf-launch $CTL_WHAT: lacks '$2': $(cat "$TMP/ctl_out" "$TMP/ctl_err")"
}

case_control() {
  # rf-launch --add_worker / --remove_worker: the refusals, and a removed
  # worker's end that is not a failure (the trainer's case is
  # launch_elastic_test.sh)
  local td=$TMP/td pid dir
  mkdir "$td"
  CTL_WHAT="on no job"
  ctl --add_worker "$TMP/none"
  expect_ctl 1 "rf-launch: no rf-launch job runs in $TMP/none: $TMP/none/control: No such file or directory (the job has ended"
  TMPDIR=$td ctl --remove_worker 2 4194999
  expect_ctl 1 "rf-launch: no rf-launch job 4194999 runs here (no run folder of $td/rf-launch.* names it"
  CTL_WHAT="usage"
  for args in "--add_worker" "--add_worker 0 x" "--add_worker 65 x" \
    "--remove_worker --task ps:0 x" "--add_worker 1 x y" "--add_worker=abc x"; do
    # shellcheck disable=SC2086 # the words of args
    ctl $args
    expect_ctl 2 "usage: rf-launch --add_worker [N] JOB"
  done
  ctl --add_worker ""
  expect_ctl 2 "rf-launch: empty JOB"
  # a job that is not elastic (its last word on it: --elastic=false):
  # refused, and nothing changes
  TMPDIR=$td "$LAUNCH" --ps 1 --workers 2 -- "$HELPER" --elastic --ready \
    --then=forever --elastic=false --marker="$M" >"$OUT" 2>"$ERR" &
  pid=$!
  wait_ready 3
  dir=$(echo "$td"/rf-launch.*)
  CTL_WHAT="on a job that is not elastic"
  ctl --add_worker "$dir"
  expect_ctl 1 "rf-launch: this job is not elastic (its program has no --elastic)"
  TMPDIR=$td ctl --remove_worker "$pid"
  expect_ctl 1 "rf-launch: this job is not elastic"
  # the request's size is bounded; a silent client is dropped
  local reply
  reply=$(timeout 10 python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"a" * 300)
print(s.recv(2000).decode().strip())' "$dir/control")
  [ "$reply" = "error request longer than the limit of 128 bytes" ] ||
    fail "a 300-byte request: '$reply'"
  reply=$(timeout 10 python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print(s.recv(2000).decode().strip())' "$dir/control")
  [ "$reply" = "error no request line within 1000 ms" ] ||
    fail "a silent client: '$reply'"
  sleep 0.3
  [ "$(grep -c '] ready$' "$OUT")" = 3 ] || fail "a task started or restarted"
  term_launch $pid
  [ -z "$(ls -A "$td")" ] || fail "left in TMPDIR: $(ls -A "$td")"
  # an elastic job with a separate chief: the chief is refused; an added
  # worker starts; removed workers die of SIGTERM (the helper does not
  # catch it), which is leaving, not failing, and nothing is restarted
  fresh_runs
  TMPDIR=$td "$LAUNCH" --ps 1 --workers 2 --chief --restart_on_failure \
    --ps_grace 0.5 -- "$HELPER" --elastic --ready --then=forever \
    --exit=chief:0:8000 --runs="$R" --marker="$M" >"$OUT" 2>"$ERR" &
  pid=$!
  wait_ready 4
  CTL_WHAT="on an elastic job"
  TMPDIR=$td ctl --remove_worker --task chief:0 "$pid"
  expect_ctl 1 "rf-launch: chief is the chief: it cannot be removed"
  TMPDIR=$td ctl --remove_worker --task worker:7 "$pid"
  expect_ctl 1 "rf-launch: the job has no task worker:7"
  TMPDIR=$td ctl --add_worker "$pid"
  expect_ctl 0 "rf-launch: started worker2; the job has 4 workers now"
  wait_ready 5
  # its TF_CONFIG (--chief: TF_CONFIG mode): the cluster as the others see
  # it, with itself appended to the workers, and its own task
  local tf w1tf re
  tf=$(sed -n 's/^env TF_CONFIG=//p' "$R/worker2.1")
  w1tf=$(sed -n 's/^env TF_CONFIG=//p' "$R/worker1.1")
  re='"worker":\[("127\.0\.0\.1:[0-9]+",){2}"127\.0\.0\.1:[0-9]+"\]'
  [[ $tf =~ $re ]] || fail "worker2's TF_CONFIG: $tf"
  [[ $tf == *'"task":{"type":"worker","index":2}'* ]] ||
    fail "worker2's task: $tf"
  local w1w=${w1tf#*\"worker\":[}
  w1w=${w1w%%]*}
  [[ -n $w1w && $tf == *"\"worker\":[$w1w,"* && ${tf%%\"chief\"*} == "${w1tf%%\"chief\"*}" ]] ||
    fail "worker2's cluster is not worker1's plus itself: $tf / $w1tf"
  TMPDIR=$td ctl --remove_worker 3 "$pid"
  expect_ctl 0 "rf-launch: stopping worker2, worker1, worker0; the job has 1 worker now"
  wait $pid
  RC=$?
  expect_rc 0
  for w in worker0 worker1 worker2; do
    expect_err "rf-launch: $w was killed by signal 15 (SIGTERM): it left the job (--remove_worker; not restarted)"
  done
  expect_no_err "restarting it"
  expect_err "rf-launch: restarts: ps0 0, chief 0, worker0 0, worker1 0, worker2 0"
  [ -z "$(ls -A "$td")" ] || fail "left in TMPDIR: $(ls -A "$td")"
  no_leftovers
}

case_control_peer() {
  # the control socket answers only the launcher's own user (SO_PEERCRED),
  # even when the folder and the socket are opened to everyone; needs root
  # to connect as another user (a skip, 77, otherwise)
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to act as another user"; exit 77; }
  local td=$TMP/td pid dir reply
  mkdir "$td"
  chmod 755 "$TMP"
  TMPDIR=$td "$LAUNCH" --ps 0 --workers 2 -- "$HELPER" -elastic=1 --ready \
    --then=forever --marker="$M" >"$OUT" 2>"$ERR" &
  pid=$!
  wait_ready 2
  dir=$(echo "$td"/rf-launch.*)
  chmod 755 "$td" "$dir"
  chmod 666 "$dir/control"
  reply=$(timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups \
    /usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
try:
    s.sendall(b"add 1\n")
    got = s.recv(2000)
except OSError:
    got = b""  # closed unanswered
print("reply:" + got.decode().strip())' "$dir/control" 2>&1)
  [ "$reply" = "reply:" ] || fail "another user's request got: '$reply'"
  wait_err "rf-launch: control socket: refused a connection from uid 65534"
  sleep 0.3
  [ "$(grep -c '] ready$' "$OUT")" = 2 ] || fail "a task was started"
  # the same request from this user is served
  TMPDIR=$td ctl --add_worker "$pid"
  expect_ctl 0 "rf-launch: started worker2"
  # at most 64 workers are added over a job's life: the 65th is refused,
  # the limit named
  CTL_WHAT="past the limit"
  TMPDIR=$td ctl --add_worker 64 "$pid"
  expect_ctl 1 "rf-launch: added 63 of 64 workers: worker3, worker4, "
  expect_ctl 1 ": the job already had 64 workers added (the limit of rf-launch --add_worker is 64)"
  wait_ready 66
  term_launch $pid
  no_leftovers
}

"case_$CASE"
echo "PASS ($CASE)"
