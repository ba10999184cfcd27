# tests/integration/fault/sync_audit.sh: sync_audit LOG N T, the check
# that no sync-replicas step applied a gradient twice or a stale one,
# sourced after tests/common/lib.sh by fault_sync.sh and
# tests/soak/soak_test.sh. LOG is the job's RF_LOG_FILE, written at
# RF_LOG_LEVEL=debug by every task (each line carries its process id), N the
# job's --replicas_to_aggregate, T its --train_steps. What the ps logs
# (ps/ps_server_sync.c's audit trail), per shard and ps process:
#   "created shard K 'NAME' part P: ..."       a new record (update count 0)
#   "the sync step was set to S ..."           the chief set the step (a
#                                              restore): the accumulator
#                                              starts again at S
#   "step S: took client C's gradient tagged G (K of N)"
#   "applied step S: the mean of K gradients, update U"
#   "client C's gradient of step G is stale (the shard is at step S): dropped"
#   "client C sent a second gradient for step S; the first is kept"
#   "sync replicas 'NAME' part P: step S, A averaged updates of N gradients,
#    T gradients taken, D dropped as stale"     at the chief's shutdown
# Checked, per shard and ps process:
#   - every gradient taken for step S is tagged S (a smaller tag is a stale
#     gradient taken, a larger one a gradient from the future) and comes
#     from a client not taken for S already (a repeat counted twice), and S
#     is the step the accumulator is at (the one after the last update, or
#     the one the chief set);
#   - every update is the mean of exactly N gradients, all taken for its
#     step; the record's update count goes up by exactly one per update
#     (an update applied twice moves it by two); between two settings of
#     the step by the chief the updates are of consecutive steps, none
#     twice;
#   - every stale gradient is older than the shard's step;
#   - the shutdown line's counters equal what the trail shows for that
#     process (updates, gradients taken, stale ones), so the trail is
#     complete, and its step is T; the last update is of step T - 1.
# Sets sync_summary (what was seen) and calls ok / fail; returns 1 on a
# violation. Plain awk, so it runs in the rxe guest too.
sync_audit() {
    local log=$1 n=$2 steps=$3 report
    if [[ ! -s $log ]]; then
        fail "sync audit: no log $log"
        return 1
    fi
    report=$(awk -v N="$n" -v T="$steps" '
        function key(   pid, nm) {
            pid = $3; sub(/:.*/, "", pid)
            nm = $0; sub(/^[^\047]*\047/, "", nm); sub(/\047.*/, "", nm)
            return pid "|" nm
        }
        function num(re,   s) {
            if (!match($0, re)) return ""
            s = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", s)
            return s + 0
        }
        function bad(what) {
            nbad++
            if (nbad <= 8) print "BAD " what ": " $0
        }
        # a record created in this process (its memory zero: step 0,
        # update count 0; shards are never freed, so once per name)
        / ps_server_ctrl\.c:[0-9]+ ps [0-9]+: created shard / {
            k = key(); known[k] = 1; nrec++
            cur[k] = 0; last[k] = ""; upd[k] = 0; cnt[k] = 0
            next
        }
        # (a shard whose creation is not in the log: nothing assumed)
        / ps_server_sync\.c:/ {
            k = key()
            if (!(k in known)) { known[k] = 1; cur[k] = ""; last[k] = ""; upd[k] = -1; cnt[k] = 0 }
        }
        / ps_server_sync\.c:[0-9]+ .*: the sync step was set to / {
            s = num("set to [0-9]+")
            cur[k] = s; last[k] = ""; cnt[k] = 0; sets++
            for (x in took) if (index(x, k SUBSEP) == 1) delete took[x]
            for (x in app) if (index(x, k SUBSEP) == 1) delete app[x]
            next
        }
        / ps_server_sync\.c:[0-9]+ .*: step [0-9]+: took client / {
            s = num(": step [0-9]+:"); c = num("took client [0-9]+")
            g = $0; sub(/.*tagged /, "", g); sub(/ .*/, "", g); g += 0
            taken[k]++; takes++
            if (g < s) bad("a stale gradient (tagged " g ") taken for step " s)
            else if (g > s) bad("a gradient tagged " g " taken for step " s)
            if (cur[k] != "" && s != cur[k]) bad("taken for step " s " while the accumulator is at " cur[k])
            cur[k] = s
            if ((k, s, c) in took) bad("client " c " taken twice for step " s)
            took[k, s, c] = 1; cnt[k]++
            next
        }
        / ps_server_sync\.c:[0-9]+ .*: applied step [0-9]+: / {
            s = num("applied step [0-9]+"); m = num("mean of [0-9]+"); u = num("update [0-9]+$")
            applied[k]++; applies++
            if (m != N) bad("an update of " m " gradients, not " N)
            if (cnt[k] != m) bad("an update of " m " gradients after " cnt[k] " were taken")
            if (cur[k] != "" && s != cur[k]) bad("step " s " applied while the accumulator is at " cur[k])
            if ((k, s) in app) bad("step " s " applied twice")
            if (last[k] != "" && s != last[k] + 1) bad("step " s " applied after step " last[k])
            if (upd[k] >= 0 && u != upd[k] + 1) bad("update count " u " after " upd[k] ": not one update")
            app[k, s] = 1; upd[k] = u; last[k] = s; cur[k] = s + 1; cnt[k] = 0
            final_step[k] = s
            next
        }
        / ps_server_sync\.c:[0-9]+ .* is stale \(the shard is at step / {
            g = num("gradient of step [0-9]+"); s = num("at step [0-9]+")
            stale[k]++; stales++
            if (g >= s) bad("a gradient of step " g " called stale at step " s)
            next
        }
        / ps_server_sync\.c:[0-9]+ .* sent a second gradient for step / { dups++; next }
        / ps_server_sync\.c:[0-9]+ .*: sync replicas \047/ {
            s = num(": step [0-9]+,"); a = num("[0-9]+ averaged"); t = num("[0-9]+ gradients taken")
            d = num("[0-9]+ dropped as stale")
            shut++
            if (a != applied[k] + 0 || t != taken[k] + 0 || d != stale[k] + 0)
                bad("the counters (" a " updates, " t " taken, " d " stale) differ from the trail (" applied[k] + 0 ", " taken[k] + 0 ", " stale[k] + 0 ")")
            if (s != T) bad("the shard ends at step " s ", not " T)
            if (final_step[k] != T - 1) bad("the last update is of step " final_step[k] ", not " T - 1)
            next
        }
        END {
            procs = 0
            for (x in known) procs++
            printf "SUMMARY %d updates (%d records in %d shard-processes, %d step settings), %d gradients taken, %d stale dropped, %d repeats dropped, %d shutdown lines, %d violations\n", applies, nrec, procs, sets, takes, stales, dups, shut, nbad
        }' "$log")
    sync_summary=$(echo "$report" | sed -n 's/^SUMMARY //p')
    if echo "$report" | grep -q '^BAD'; then
        fail "sync audit: $sync_summary"
        echo "$report" | grep '^BAD' | sed 's/^/    | /'
        return 1
    fi
    if [[ $sync_summary == "0 updates"* || $sync_summary == *" 0 shutdown lines"* ]]; then
        fail "sync audit: nothing to check: $sync_summary"
        return 1
    fi
    ok "sync audit: every update the mean of $n gradients of its own step from distinct clients, applied once: $sync_summary"
}
