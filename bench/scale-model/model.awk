# bench/scale-model/model.awk: the calculator of the scale model (the
# equations are in docs/scale-model.md). It reads calibration lines and
# per-ps step shapes (written by bench/scale-model/scale-model from
# measurements and rf-trainer --explain=json) and prints, for each
# "predict" line, the examples/s the model gives and what bounds it. It
# measures nothing and runs nothing; it is plain arithmetic, so the smoke
# test (smoke-test) checks it against hand-computed values.
#
#   awk -f model.awk FILE...
#
# Input lines (fields separated by blanks, "#" starts a comment):
#   compute MODEL SECONDS BATCH     worker compute per step (forward and
#                                   backward, no optimizer), its batch
#   cv MODEL X                      coefficient of variation of the step
#                                   time (only the sync rows use it)
#   apply BYTES_PER_S SECONDS       ps apply throughput (gradient bytes per
#                                   second) and fixed cost per shard apply
#   link NAME BYTES_PER_S RTT_S     a task's NIC: payload bandwidth each way
#                                   and the round trip of one small op
#   cpu_per_byte SECONDS            host CPU per wire byte (sock provider at
#                                   both ends and the emulated switch)
#   cores N                         the host's cores (host rows only)
#   shape MODEL APPLY P WIRE ROUNDS total step_wire_bytes per worker step
#                                   and serial round-trip phases of a step
#   ps MODEL APPLY P I OUT IN GRAD SHARDS   ps I of P: bytes it sends and
#                                   receives per worker step, gradient
#                                   bytes it applies, shards it holds
#   predict MODEL APPLY P W LINK WHERE [COMPUTE]
#                                   COMPUTE: the compute/cv key to use
#                                   (default MODEL: e.g. a compute time
#                                   measured right before a run)
#                                   APPLY ps | worker | sync (sync: the
#                                   apply=ps shape, SyncReplicasOptimizer
#                                   rules); WHERE host (every task shares
#                                   this host's cores) or cluster (one
#                                   machine per task)
# Output: a header, then one row per predict line:
#   model apply ps workers link ex/s step_ms compute_ms net_ms lat_ms
#   apply_ms wait_ms workers_bound ps_nic_bound ps_apply_bound host_bound
#   bottleneck
# (the *_bound columns are examples/s each resource alone would allow,
# "-" where it does not apply). Exit 1 naming the line if a predict line
# refers to a missing calibration or shape.
function die(msg) {
    printf "model.awk: %s\n", msg > "/dev/stderr"
    failed = 1
    exit 1
}
function need(cond, what) {
    if (!cond) die(sprintf("%s:%d: %s", FILENAME, FNR, what))
}
function fmt_rate(x) { return x == "" ? "-" : sprintf("%.0f", x) }
function ms(x) { return sprintf("%.3f", x * 1000) }

{ sub(/#.*/, "") }
NF == 0 { next }
$1 == "compute" { need(NF == 4 && $3 > 0 && $4 > 0, "compute MODEL SECONDS BATCH"); tc[$2] = $3; batch[$2] = $4; next }
$1 == "cv" { need(NF == 3 && $3 >= 0, "cv MODEL X"); cv[$2] = $3; next }
$1 == "apply" { need(NF == 3 && $2 > 0 && $3 >= 0, "apply BYTES_PER_S SECONDS"); apply_bps = $2; apply_op = $3; next }
$1 == "link" { need(NF == 4 && $3 > 0 && $4 >= 0, "link NAME BYTES_PER_S RTT_S"); bw[$2] = $3; rtt[$2] = $4; next }
$1 == "cpu_per_byte" { need(NF == 2 && $2 >= 0, "cpu_per_byte SECONDS"); cpu_b = $2; have_cpu = 1; next }
$1 == "cores" { need(NF == 2 && $2 > 0, "cores N"); cores = $2; next }
$1 == "shape" {
    need(NF == 6 && $5 >= 0 && $6 >= 0, "shape MODEL APPLY P WIRE ROUNDS")
    k = $2 SUBSEP $3 SUBSEP $4; wire[k] = $5; rounds[k] = $6; next
}
$1 == "ps" {
    need(NF == 9 && $5 >= 0 && $5 < $4, "ps MODEL APPLY P I OUT IN GRAD SHARDS")
    k = $2 SUBSEP $3 SUBSEP $4; i = $5
    out[k, i] = $6; in_[k, i] = $7; grad[k, i] = $8; shards[k, i] = $9; seen[k, i] = 1; next
}
$1 == "predict" {
    need((NF == 7 || NF == 8) && $5 >= 1 && ($7 == "host" || $7 == "cluster"), "predict MODEL APPLY P W LINK host|cluster [COMPUTE]")
    need($3 == "ps" || $3 == "worker" || $3 == "sync", "APPLY must be ps, worker or sync")
    np++; pm[np] = $2; pa[np] = $3; pp[np] = $4; pw[np] = $5; pl[np] = $6; pwhere[np] = $7
    pc[np] = (NF == 8) ? $8 : $2
    pline[np] = FILENAME ":" FNR
    next
}
{ die(sprintf("%s:%d: unknown line: %s", FILENAME, FNR, $0)) }

END {
    if (failed) exit 1
    printf "%-10s %-6s %4s %7s %-8s %10s %9s %10s %8s %8s %8s %8s %13s %12s %14s %10s  %s\n", \
        "model", "apply", "ps", "workers", "link", "ex/s", "step_ms", "compute_ms", "net_ms", \
        "lat_ms", "apply_ms", "wait_ms", "workers_bound", "ps_nic_bound", "ps_apply_bound", \
        "host_bound", "bottleneck"
    for (n = 1; n <= np; n++) {
        m = pm[n]; a = pa[n]; P = pp[n]; W = pw[n]; L = pl[n]; where = pwhere[n]; c = pc[n]
        sa = (a == "sync") ? "ps" : a # the sync push moves the apply=ps bytes
        k = m SUBSEP sa SUBSEP P
        if (!(c in tc)) die(pline[n] ": no compute line for " c)
        if (!(L in bw)) die(pline[n] ": no link line for " L)
        if (!(k in wire)) die(pline[n] ": no shape line for " m " " sa " " P)
        if (apply_bps == "") die(pline[n] ": no apply line")
        if (a == "sync" && !(c in cv)) die(pline[n] ": no cv line for " c)
        if (where == "host" && (cores == "" || !have_cpu)) die(pline[n] ": host rows need cores and cpu_per_byte")
        # one worker step: compute, the step's wire bytes through its NIC,
        # the serial round trips, and the apply it waits for
        t_c = tc[c]; t_net = wire[k] / bw[L]; t_lat = rounds[k] * rtt[L]
        sum_grad = 0; t_apply = 0; ps_apply_x = ""; ps_nic_x = ""
        for (i = 0; i < P; i++) {
            if (!((k, i) in seen)) die(pline[n] ": no ps line " i " for " m " " sa " " P)
            sum_grad += grad[k, i]
            ta = grad[k, i] / apply_bps + shards[k, i] * apply_op
            # apply=ps: the worker waits for the slowest ps's applies of its
            # gradients (they run in parallel on the P ps tasks)
            if (sa == "ps" && ta > t_apply) t_apply = ta
            # sync: per step the ps adds W gradients (counted at the apply's
            # cost) and applies their mean once: W + 1 passes for W worker
            # steps
            if (a == "sync") ta = (W + 1) * ta
            if (sa == "ps" && ta > 0) {
                x = 1 / ta; if (a == "sync") x *= W
                if (ps_apply_x == "" || x < ps_apply_x) ps_apply_x = x
            }
            nic = out[k, i] > in_[k, i] ? out[k, i] : in_[k, i]
            if (nic > 0) {
                x = bw[L] / nic
                if (ps_nic_x == "" || x < ps_nic_x) ps_nic_x = x
            }
        }
        if (a == "worker") t_apply = sum_grad / apply_bps
        # sync: every step waits for the slowest of W workers (expected
        # maximum of W normal step times: sqrt(2 ln W) standard deviations)
        # and for the step's publication (2 more round trips)
        t_wait = 0
        if (a == "sync") t_wait = t_c * cv[c] * (W > 1 ? sqrt(2 * log(W)) : 0) + 2 * rtt[L]
        t_step = t_c + t_net + t_lat + t_apply + t_wait
        workers_x = W / t_step
        host_x = ""
        if (where == "host") {
            # every process shares the host's cores: compute, apply and the
            # provider's CPU per wire byte, per worker step
            host_x = cores / (t_c + sum_grad / apply_bps + cpu_b * wire[k])
        }
        x = workers_x; b = "worker"
        if (ps_nic_x != "" && ps_nic_x < x) { x = ps_nic_x; b = "ps NIC bandwidth" }
        if (ps_apply_x != "" && ps_apply_x < x) { x = ps_apply_x; b = "ps apply CPU" }
        if (host_x != "" && host_x < x) { x = host_x; b = "host CPU" }
        if (b == "worker") {
            # the largest part of the worker's own step names it
            big = t_c; b = "worker compute"
            if (t_net > big) { big = t_net; b = "worker NIC bandwidth" }
            if (t_lat > big) { big = t_lat; b = "latency/round trips" }
            if (t_apply > big) { big = t_apply; b = (a == "worker") ? "worker apply CPU" : "ps apply latency" }
            if (t_wait > big) { big = t_wait; b = "sync barrier" }
        }
        B = batch[c]
        printf "%-10s %-6s %4d %7d %-8s %10s %9s %10s %8s %8s %8s %8s %13s %12s %14s %10s  %s\n", \
            m, a, P, W, L, fmt_rate(x * B), ms(t_step), ms(t_c), ms(t_net), ms(t_lat), \
            ms(t_apply), ms(t_wait), fmt_rate(workers_x * B), \
            (ps_nic_x == "" ? "-" : fmt_rate(ps_nic_x * B)), \
            (ps_apply_x == "" ? "-" : fmt_rate(ps_apply_x * B)), \
            (host_x == "" ? "-" : fmt_rate(host_x * B)), b
    }
}
