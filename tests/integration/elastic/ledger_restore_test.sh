#!/usr/bin/env bash
# tests/integration/elastic/ledger_restore_test.sh RF_TRAINER RF_CKPT: the
# shard ledger saved with the chief's checkpoints and loaded into a
# restarted ps task 0 (docs/DESIGN.md "The shard ledger"). Real processes
# on $host, real signals, TF_CONFIG sparseClusters (elastic workers):
#   - 2 ps tasks, worker 0 (the chief, --checkpoint_dir, a save every
#     --save_checkpoint_steps) and worker 1 train;
#   - once the chief saved a checkpoint past epoch 1 and trained on past
#     it, ps 0 and the chief get SIGKILL together (mid-epoch) and are
#     started again, as a restarting launcher would; worker 1 lives
#     through it: its steps and its ledger reports recover the session
#     (rf_monitored_session_shard_next), whichever ps 0's death hit.
#     RF_LEDGER_KILL=ps0: ps 0 alone is killed and started again, and the
#     chief, which lives, re-creates its session and restores it.
# Checks: the restarted chief restored the newest checkpoint and ps 0 says
# it loaded the ledger, at the epoch of that save (> 0); from the workers'
# --shards_out lines: every batch of the epochs the final ledger counts
# done was trained, and a batch trained twice is only one the restore
# rolled back (the stated bound): first trained after the last save (its
# line's global_step above the checkpoint's), or the last batch each
# worker trained before it (not reported yet when the ledger was read),
# or the batch a surviving worker trained across ps 0's loss (its report
# to the loaded ledger is stale); after the restart no shard of an epoch before
# the saved one is dealt but the saved ledger's outstanding ones (at most
# one per worker); every checkpoint verifies (rf-ckpt verify checks the
# ledger in it); the job exits 0. Exits 0, 1 on a failed check, 77 without the
# Fashion-MNIST dataset.
set -uo pipefail
case_name=elastic_ledger_restore
source "$(dirname "${BASH_SOURCE[0]}")/sparse_cluster.sh"
rfckpt=${2:?path to rf-ckpt}

steps=${RF_LEDGER_STEPS:-12000}
every=$((steps / 8)) # checkpoints: 1500 steps, 2.5 epochs of 600 batches
batch=100
shard_batches=8
dir=$tmp/ckpt
mkdir -p "$dir"
flags=(--model=softmax --optimizer=adagrad --learning_rate=0.05
    --batch_size="$batch" --shard_batches="$shard_batches" --threads=1
    --train_steps="$steps" --log_every=$((steps / 24))
    --max_wait_secs="$(t 30)" --member_timeout_secs=2
    --stop_grace_secs=25 --data_dir="$data")

shards() { echo "$tmp/$1.shards"; }
start_worker() { # INDEX NAME FLAGS...
    local i=$1 name=$2
    shift 2
    start "$name" "$(worker_conf "$i")" --shards_out="$(shards "$name")" "$@"
}
chief_flags=(--checkpoint_dir="$dir" --save_checkpoint_steps="$every")
# shellcheck disable=SC2317 # called through wait_until
saved_past() { # N: the chief printed a save of global_step >= N
    lines_of "$(out w0)" - |
        sed -n 's/^[0-9.]* saved checkpoint .* (global_step \([0-9]*\),.*/\1/p' |
        awk -v n="$1" '$1 >= n { f = 1 } END { exit !f }'
}

t0=$(now)
RF_LOG_LEVEL=info start ps0 "$(ps_conf 0)"
start ps1 "$(ps_conf 1)"
start_worker 0 w0 "${chief_flags[@]}"
start_worker 1 w1
# a save past epoch 1 (600 batches an epoch), then half a save further
wait_until "$(t 40)" "${pid[w0]}" saved_past $((2 * every)) ||
    fail "the chief saved no checkpoint of global_step $((2 * every))"
wait_until "$(t 20)" "${pid[w0]}" gs_at_least "$(out w0)" - $((2 * every + every / 2)) ||
    fail "the chief did not reach global_step $((2 * every + every / 2))"
mode=${RF_LEDGER_KILL:-ps0+chief}
if [[ $mode == ps0 ]]; then
    kill -KILL "${pid[ps0]}"
else
    kill -KILL "${pid[ps0]}" "${pid[w0]}"
    wait_exit "${pid[w0]}" 5
fi
wait_exit "${pid[ps0]}" 5
newest=$(state_newest "$dir")
echo "SIGKILL of $mode at global_step $(last_gs "$(out w0)" -); newest checkpoint $newest"
ckpt_gs=${newest##*model.ckpt-}
ckpt_gs=${ckpt_gs%%.*}
for name in w0 w1; do
    [[ -e $(shards "$name") ]] && wc -l <"$(shards "$name")" >"$tmp/$name.before"
done
mv "$(out ps0)" "$tmp/ps0-first.out"
RF_LOG_LEVEL=info start ps0 "$(ps_conf 0)"
chief=w0
if [[ $mode != ps0 ]]; then
    mv "$(out w0)" "$tmp/w0-first.out"
    chief=w0b
    start_worker 0 w0b "${chief_flags[@]}"
fi

declare -A rc
t_bound=$(now)
for name in w1 "$chief" ps0 ps1; do
    left=$(time_left "$t_bound" "$(t 90)")
    wait_exit "${pid[$name]}" "$left"
    rc[$name]=$wrc
    [[ $wrc == running ]] && kill -KILL "${pid[$name]}" 2>/dev/null
    stamped "$(out "$name")"
done
echo "job: $(elapsed "$t0") s"
# where ps 0's death found each living worker: a step or a ledger report
for name in w1 "$chief"; do
    lost=$(lines_of "$(out "$name")" - | grep -c "session lost" || true)
    via=$(lines_of "$(out "$name")" - | grep -c "session lost.*SHARD_REQ" || true)
    echo "$name: $lost session losses, $via of them in a ledger report"
done

for name in w1 "$chief" ps0 ps1; do
    check "$name: exit ${rc[$name]} (want 0)" test "${rc[$name]}" = 0
    [[ ${rc[$name]} == 0 ]] || show "$(out "$name")"
done
check "the chief ($chief) restored $newest" \
    has_line "$(out "$chief")" - "restored .*$(basename "$newest")"
loaded=$(lines_of "$(out ps0)" - | sed -n 's/.*shard ledger loaded by the chief: dealing epoch \([0-9]*\) .*/\1/p' | head -n 1)
check "ps 0 (restarted) loaded the saved ledger: dealing epoch ${loaded:-none} (want > 0)" \
    test "${loaded:-0}" -gt 0
[[ ${loaded:-0} -gt 0 ]] || { show "$(out ps0)"; show "$(out "$chief")"; }
summary=$(lines_of "$(out ps0)" - | sed -n 's/.*shard ledger: \([0-9]*\) epochs done, .* \([0-9]*\) batches recorded trained.*/\1 \2/p')
read -r epochs_done recorded <<<"$summary"
check "ps 0's ledger totals at SHUTDOWN: ${epochs_done:-?} epochs, ${recorded:-?} batches" \
    test -n "$summary"
n_ok=0
for f in "$dir"/model.ckpt-*.safetensors; do
    if "$rfckpt" verify "$f" >"$tmp/verify" 2>&1 &&
        grep -q "its shard ledger: epoch" "$tmp/verify"; then
        n_ok=$((n_ok + 1))
    else
        fail "rf-ckpt verify $f: $(cat "$tmp/verify")"
    fi
done
check "$n_ok checkpoints verify, each with its shard ledger" test "$n_ok" -gt 0

# The lines: before the kill (the first lines of each file, counted at the
# kill) and after.
if ! /usr/bin/python3 - "$tmp" "${epochs_done:-0}" "${loaded:-0}" \
    "$ckpt_gs" "$shard_batches" "$batch" <<'PY'; then
import collections, json, os, sys
tmp = sys.argv[1]
epochs_done, loaded, ckpt_gs, sb, bs = map(int, sys.argv[2:])
n_batches = 60000 // bs


def lines(name):
    path = os.path.join(tmp, name + '.shards')
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f]


def before_count(name):
    path = os.path.join(tmp, name + '.before')
    return int(open(path).read()) if os.path.exists(path) else 0


pre, post, inflight = [], [], []
for name in ('w0', 'w1'):
    ls, n = lines(name), before_count(name)
    pre += ls[:n]
    post += ls[n:]
    # a worker that lived through the restart: the batch it trained
    # across ps 0's loss is reported to the loaded ledger, which had
    # returned that shard (stale: not recorded), so it is dealt again
    inflight += ls[n:n + 1]
post += lines('w0b')
key = lambda r: (r['epoch'], r['shard'] * sb + r['batch'])
first = {}
for r in pre + post:
    first.setdefault(key(r), r)
# rolled back: trained after the save read global_step (then the ledger,
# then the variables), or the last batch a worker trained before that
# read, reported after the ledger's read
allowed = {key(r) for r in pre if r['global_step'] > ckpt_gs}
for w in {r['worker'] for r in pre}:
    mine = [r for r in pre if r['worker'] == w and r['global_step'] <= ckpt_gs]
    if mine:
        allowed.add(key(max(mine, key=lambda r: r['global_step'])))
allowed |= {key(r) for r in inflight}
bad = []
count = collections.Counter(key(r) for r in pre + post)
for k, n in sorted(count.items()):
    if n > 2 or (n == 2 and k not in allowed):
        r = first[k]
        bad.append('epoch %d batch %d trained %d times (first by worker %d '
                   'at global_step %d; the restored checkpoint is of %d)'
                   % (k[0], k[1], n, r['worker'], r['global_step'], ckpt_gs))
twice = sum(1 for n in count.values() if n > 1)
# the saved ledger's outstanding shards of earlier epochs (one per worker
# at most) may be continued after the restart; nothing else of them
old = {(r['epoch'], r['shard']) for r in post if r['epoch'] < loaded}
if len(old) > 2:
    bad.append('after the restart, %d shards of epochs before %d (where '
               'the saved ledger was) were dealt: %s'
               % (len(old), loaded, sorted(old)[:5]))
for e in range(epochs_done):
    missing = [b for b in range(n_batches) if count[(e, b)] == 0]
    if missing:
        bad.append('epoch %d (done for the ledger): %d batches never '
                   'trained, first %d' % (e, len(missing), missing[0]))
if epochs_done <= loaded:
    bad.append('the ledger ended at %d epochs done, not past the %d it '
               'was saved in' % (epochs_done, loaded))
print('%d lines before the kill, %d after; %d batches trained twice '
      '(rolled back with the variables: trained after global_step %d, or '
      'unreported then); the ledger resumed in epoch %d and ended with %d '
      'done' % (len(pre), len(post), twice, ckpt_gs, loaded, epochs_done))
for b in bad[:20]:
    print('  ' + b)
sys.exit(1 if bad else 0)
PY
    fail "the lines say the ledger did not resume where it was saved (above)"
else
    ok "no batch of a completed epoch lost; trained twice only after the last save"
fi
rft_finish
