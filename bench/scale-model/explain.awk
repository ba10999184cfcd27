# bench/scale-model/explain.awk: turns the JSON line of rf-trainer
# --explain=json (one worker's training step as the session describes it)
# into the calculator's "shape" and "ps" lines (model.awk). It copies what
# the tool prints (step_wire_bytes.total, each operation's ps_task, bytes
# and wire_bytes) and only sorts it by ps and by direction; it derives no
# byte count of its own.
#
#   awk -v model=NAME -f explain.awk EXPLAIN.json
#
# Directions, per operation of the step list: a READ's wire bytes leave the
# ps; a WRITE_WITH_IMM push (apply=ps) sends its gradient ("bytes") to the
# ps and the rest of its wire bytes (the ack) back; an APPLY_WORKER push
# reads the shard record and writes it back, half of its wire bytes each
# way; FETCH_AND_ADD's leave the ps. A push's "bytes" are the gradient the
# shard applies; each push is one shard. Round-trip phases: the READs
# (posted together) count 1, the pushes 1 (apply=ps: write and ack) or 2
# (apply=worker: read the records, write them back), FETCH_AND_ADD 1.
function num(obj, key,    m) {
    if (!match(obj, "\"" key "\":[0-9]+")) return -1
    m = substr(obj, RSTART, RLENGTH)
    sub(/.*:/, "", m)
    return m + 0
}
function str(obj, key,    m) {
    if (!match(obj, "\"" key "\":\"[^\"]*\"")) return ""
    m = substr(obj, RSTART, RLENGTH)
    sub(/^[^:]*:"/, "", m)
    sub(/"$/, "", m)
    return m
}
/"explain":/ {
    line = $0
    sub(/^[^{]*/, "", line) # a launcher's "[worker0] " prefix
    apply = str(line, "apply")
    if (!match(line, /"step_wire_bytes":\{"total":[0-9]+,"per_ps":\[[0-9,]*\]/)) {
        print "explain.awk: no step_wire_bytes in the explain line" > "/dev/stderr"; bad = 1
        exit 1
    }
    sw = substr(line, RSTART, RLENGTH)
    total = num(sw, "total")
    per = sw
    sub(/.*"per_ps":\[/, "", per)
    sub(/\]$/, "", per)
    P = split(per, perps, ",")
    if (!match(line, /"step":\[.*\]/)) {
        print "explain.awk: no step list in the explain line" > "/dev/stderr"; bad = 1
        exit 1
    }
    steps = substr(line, RSTART + 8, RLENGTH - 9)
    n = split(steps, ops, /\},\{/)
    for (i = 0; i < P; i++) { out[i] = 0; in_[i] = 0; grad[i] = 0; shards[i] = 0 }
    reads = 0; pushes = 0; faa = 0; push_rounds = 0
    for (j = 1; j <= n; j++) {
        o = ops[j]; op = str(o, "op"); t = num(o, "ps_task"); b = num(o, "bytes"); w = num(o, "wire_bytes")
        if (op == "READ") { out[t] += w; reads = 1 }
        else if (op == "WRITE_WITH_IMM") {
            in_[t] += b; out[t] += w - b; grad[t] += b; shards[t]++; push_rounds = 1
        } else if (op == "APPLY_WORKER") {
            in_[t] += w / 2; out[t] += w - w / 2; grad[t] += b; shards[t]++; push_rounds = 2
        } else if (op == "FETCH_AND_ADD") { out[t] += w; faa = 1 }
    }
    sum = 0
    for (i = 0; i < P; i++) {
        sum += out[i] + in_[i]
        if (out[i] + in_[i] != perps[i + 1]) {
            printf "explain.awk: ps %d: the step list gives %d bytes, per_ps %d\n", i, out[i] + in_[i], perps[i + 1] > "/dev/stderr"; bad = 1
            exit 1
        }
    }
    printf "shape %s %s %d %d %d\n", model, apply, P, total, reads + push_rounds + faa
    for (i = 0; i < P; i++)
        printf "ps %s %s %d %d %d %d %d %d\n", model, apply, P, i, out[i], in_[i], grad[i], shards[i]
    found = 1
    exit 0
}
END {
    if (bad) exit 1
    if (!found) {
        print "explain.awk: no explain line" > "/dev/stderr"
        exit 1
    }
}
