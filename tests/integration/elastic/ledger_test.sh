#!/usr/bin/env bash
# tests/integration/elastic/ledger_test.sh RF_TRAINER: the shard ledger
# (docs/DESIGN.md "The shard ledger"): every example of every completed
# epoch is trained once while the workers go 2 -> 4 -> 1 during one async
# job. Real processes on $host, real signals, TF_CONFIG sparseClusters
# (TFJob enableDynamicWorker):
#   - 2 ps tasks, worker 0 (the chief) and worker 1 start;
#   - once the chief passed a tenth of --train_steps, workers 2 and 3 join
#     (4 workers); once both trained batches, worker 2 gets SIGTERM (it
#     finishes its step, reports it, LEAVEs) and worker 3 SIGKILL (its
#     shard returns when ps 0 expires it after --member_timeout_secs);
#   - once ps 0 expired worker 3, worker 1 gets SIGTERM: the chief trains
#     alone to --train_steps.
# Checks, from every worker's --shards_out lines and ps 0's ledger: each
# batch of each epoch the ledger counts as done was trained exactly once,
# except at most one batch trained twice for the SIGKILLed worker (its
# last line, pushed but not reported: the stated bound); every epoch the
# lines cover completely is one the ledger counts; the ledger recorded as
# many batches as the lines say (give or take worker 3's last); the
# departed workers' shards were returned and continued by others at the
# batch where they stopped; at least 3 epochs completed after the joins;
# a worker joining with another --shard_batches is refused naming both;
# exit codes (0, 0 for the SIGTERMed ones, 137 for the SIGKILLed one);
# test accuracy in the async range. Exits 0, 1 on a failed check, 77
# without the Fashion-MNIST dataset.
set -uo pipefail
case_name=elastic_ledger
source "$(dirname "${BASH_SOURCE[0]}")/sparse_cluster.sh"

steps=${RF_LEDGER_STEPS:-24000}
batch=100
shard_batches=8
gone=2 # --member_timeout_secs
flags=(--model=softmax --optimizer=adagrad --learning_rate=0.05
    --batch_size="$batch" --shard_batches="$shard_batches" --threads=1
    --train_steps="$steps" --log_every=$((steps / 24))
    --max_wait_secs="$(t 30)" --member_timeout_secs="$gone"
    --stop_grace_secs=25 --data_dir="$data")

shards() { echo "$tmp/$1.shards"; }
start_worker() { start "w$1" "$(worker_conf "$1")" --shards_out="$(shards "w$1")"; }
# shellcheck disable=SC2317 # called through wait_until
lines_in() { [[ -s $(shards "$1") ]] && (($(wc -l <"$(shards "$1")") >= $2)); }
# shellcheck disable=SC2317 # called through wait_until
expired() { has_line "$(out ps0)" - "client $1 disconnected .* no longer a member"; }

t0=$(now)
RF_LOG_LEVEL=info start ps0 "$(ps_conf 0)"
start ps1 "$(ps_conf 1)"
start_worker 0
start_worker 1
wait_until "$(t 25)" "${pid[w0]}" gs_at_least "$(out w0)" - $((steps / 10)) ||
    fail "the chief did not reach global_step $((steps / 10))"
start_worker 2
start_worker 3
wait_until "$(t 15)" "${pid[w2]}" lines_in w2 20 || fail "worker 2 (joined) trained no batch"
wait_until "$(t 15)" "${pid[w3]}" lines_in w3 20 || fail "worker 3 (joined) trained no batch"
gs_join=$(last_gs "$(out w0)" -)
kill -TERM "${pid[w2]}"
kill -KILL "${pid[w3]}"
echo "2 -> 4 workers, then 4 -> 2 at the chief's global_step $gs_join of $steps"
wait_until "$(t 15)" "${pid[ps0]}" expired 3 || fail "ps 0 did not expire worker 3"
kill -TERM "${pid[w1]}"
gs_one=$(last_gs "$(out w0)" -)
echo "2 -> 1 worker at the chief's global_step $gs_one"
# a worker with another shard geometry is refused by the ledger
wait_exit "${pid[w2]}" "$(t 10)"
start bad "$(worker_conf 2)" --shard_batches=4
wait_exit "${pid[bad]}" "$(t 30)"
rc_bad=$wrc

declare -A rc
t_bound=$(now)
for name in w2 w3 w1 w0 ps0 ps1; do
    left=$(time_left "$t_bound" "$(t 60)")
    wait_exit "${pid[$name]}" "$left"
    rc[$name]=$wrc
    [[ $wrc == running ]] && kill -KILL "${pid[$name]}" 2>/dev/null
    stamped "$(out "$name")"
done
echo "job: $(elapsed "$t0") s"

check "worker 2: SIGTERM -> exit ${rc[w2]} (want 0)" test "${rc[w2]}" = 0
check "worker 1: SIGTERM -> exit ${rc[w1]} (want 0)" test "${rc[w1]}" = 0
check "worker 3: SIGKILL (exit ${rc[w3]}, want 137)" test "${rc[w3]}" = 137
for name in w0 ps0 ps1; do
    check "$name: exit ${rc[$name]} (want 0)" test "${rc[$name]}" = 0
    [[ ${rc[$name]} == 0 ]] || show "$(out "$name")"
done
stamped "$(out bad)"
if [[ $rc_bad != 0 && $rc_bad != running ]] &&
    has_line "$(out bad)" - "4 batches per shard, .* but the job's ledger has .* 8 batches per shard"; then
    ok "a worker with --shard_batches=4 is refused (exit $rc_bad) naming both geometries"
else
    fail "a worker with --shard_batches=4: exit $rc_bad, want a refusal naming both geometries"
    show "$(out bad)" 5
fi
for c in 1 2 3; do
    check "ps 0 returned worker $c's shard to the ledger" \
        has_line "$(out ps0)" - "shard of client $c returned to the ledger"
done
summary=$(lines_of "$(out ps0)" - | sed -n 's/.*shard ledger: \([0-9]*\) epochs done, .* \([0-9]*\) batches recorded trained.*/\1 \2/p')
read -r epochs_done recorded <<<"$summary"
check "ps 0's ledger totals at SHUTDOWN: ${epochs_done:-?} epochs, ${recorded:-?} batches" \
    test -n "$summary"
acc=$(accuracy "$(out w0)" -)
check "test accuracy '$acc' (async range 0.80-0.87)" \
    awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.80 && a <= 0.87) }'

# The lines against the ledger (python3: the JSON lines).
if ! /usr/bin/python3 - "$tmp" "${epochs_done:-0}" "${recorded:-0}" \
    "$shard_batches" "$batch" <<'PY'; then
import collections, glob, json, os, sys
tmp, epochs_done, recorded, sb, bs = sys.argv[1], *map(int, sys.argv[2:])
n_batches = 60000 // bs
recs, last = [], {}
for path in sorted(glob.glob(os.path.join(tmp, 'w*.shards'))):
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            recs.append(r)
            last[r['worker']] = r
count = collections.Counter()
who = collections.defaultdict(list)
for r in recs:
    k = (r['epoch'], r['shard'] * sb + r['batch'])
    count[k] += 1
    who[k].append(r['worker'])
bad = []
twice = [k for k, n in count.items() if n > 1]
# the bound: one batch, worker 3's last line, trained again by another
allowed = {(last[3]['epoch'], last[3]['shard'] * sb + last[3]['batch'])} \
    if 3 in last else set()
for k in twice:
    if count[k] > 2 or k not in allowed:
        bad.append('epoch %d batch %d trained %d times by workers %s'
                   % (k[0], k[1], count[k], who[k]))
for e in range(epochs_done):
    missing = [b for b in range(n_batches) if count[(e, b)] == 0]
    if missing:
        bad.append('epoch %d (done for the ledger): %d batches never '
                   'trained, first %d' % (e, len(missing), missing[0]))
full = {e for e in {k[0] for k in count}
        if all(count[(e, b)] for b in range(n_batches))}
if full != set(range(epochs_done)):
    bad.append('epochs fully in the lines %s, the ledger says %d done'
               % (sorted(full), epochs_done))
if not 0 <= len(recs) - recorded <= 1:
    bad.append('%d lines, the ledger recorded %d batches'
               % (len(recs), recorded))
# the departed workers' shards continued where they stopped
for w in (1, 2, 3):
    if w not in last:
        bad.append('worker %d wrote no line' % w)
        continue
    r = last[w]
    nxt = (r['epoch'], r['shard'] * sb + r['batch'] + 1)
    end = (r['shard'] + 1) * sb
    if nxt[1] < min(end, n_batches) and not any(
            x != w for x in who[nxt]):
        bad.append('worker %d stopped at epoch %d shard %d batch %d; '
                   'nobody trained the next batch' % (w, *nxt[:1],
                                                     r['shard'], r['batch']))
    if w == 3 and r['epoch'] >= epochs_done:
        bad.append('worker 3 was killed in epoch %d, not a completed one '
                   '(%d done): make the job longer' % (r['epoch'],
                                                      epochs_done))
first_join = min(r['epoch'] for r in recs if r['worker'] in (2, 3))
if epochs_done - first_join < 3:
    bad.append('only %d epochs completed after the joins (epoch %d)'
               % (epochs_done - first_join, first_join))
print('%d lines from %d workers, %d epochs done, %d batch(es) trained '
      'twice (allowed: worker 3\'s last), %d lines minus %d recorded'
      % (len(recs), len(last), epochs_done, len(twice), len(recs),
         recorded))
for b in bad:
    print('  ' + b)
sys.exit(1 if bad else 0)
PY
    fail "the lines and the ledger disagree (above)"
else
    ok "every batch of the $epochs_done completed epochs trained exactly once (bound: worker 3's last)"
fi
rft_finish
