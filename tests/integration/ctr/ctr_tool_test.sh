#!/usr/bin/env bash
# tests/integration/ctr/ctr_tool_test.sh CASE RF_CTR_DATA SRC: one case of
# rf-ctr-data (tools/ctr). summary: a small spec's summary, its click rate
# and distinct-id shares recomputed from --dump's CSV; dump: the CSV's
# header and shape, ids inside their vocabularies, the same rows twice and
# other rows for the other split; usage: --version, --help, and malformed
# flags and specs exit 2 naming the flag or field. Exit 0 = pass.
set -u
CASE=$1
TOOL=$2
SRC=$3
case_name=tools.ctr_data.$CASE
. "$SRC/tests/common/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out
ERR=$TMP/err

run() {
    timeout -s KILL 30 "$TOOL" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}
has() { grep -qF -- "$1" "$2" || { fail "$2 lacks: $1"; show "$2" 40; }; }
rc_is() { [[ $RC == "$1" ]] || { fail "exit status $RC, expected $1 ($*)"; show "$ERR"; }; }

SPEC='vocab=1000,1e6;zipf=1.2,0.9;dense=2;seed=5;head=50;train=5000;test=3000'
case $CASE in
summary)
    run --spec "$SPEC" --n 3000
    rc_is 0
    has "spec: seed=5;vocab=1000,1000000;zipf=1.2,0.9;dense=2;head=50" "$OUT"
    has "split: test, first 3000 of 3000 examples" "$OUT"
    has "hidden model: AUC" "$OUT"
    # the click rate, from the CSV of the same examples
    cp "$OUT" "$TMP/summary"
    run --spec "$SPEC" --dump 3000
    rc_is 0
    want=$(awk -F, 'NR > 1 { c += $1 } END { printf "%.4f", c / (NR - 1) }' "$OUT")
    has "click rate: $want" "$TMP/summary"
    # the hidden AUC lies in (0.5, 1) and its log loss is below the base
    # rate's
    awk '/^hidden model:/ {
            auc = $4 + 0; ll = $7 + 0; base = $13 + 0
            ok = auc > 0.5 && auc < 1 && ll > 0 && ll < base
            exit !ok }' "$TMP/summary" ||
        fail "hidden model line: $(grep '^hidden' "$TMP/summary")"
    # per feature: distinct ids over N as counted from the CSV
    for f in 0 1; do
        d=$(awk -F, -v c=$((f + 2)) 'NR > 1 { s[$c] = 1 } END { n = 0; for (k in s) n++; printf "%.4f", n / (NR - 1) }' "$OUT")
        line=$(grep "^cat$f " "$TMP/summary")
        [[ $(awk '{print $4}' <<<"$line") == "$d" ]] ||
            fail "cat$f distinct $(awk '{print $4}' <<<"$line"), CSV gives $d"
    done
    # the train split
    run --spec "$SPEC;bias=0" --n 100 --split train
    rc_is 0
    has "split: train, first 100 of 5000 examples" "$OUT"
    ok "summary"
    ;;
dump)
    run --spec "$SPEC" --dump 200 --split train
    rc_is 0
    [[ $(head -1 "$OUT") == "label,id0,id1,dense0,dense1" ]] ||
        fail "header: $(head -1 "$OUT")"
    [[ $(wc -l <"$OUT") == 201 ]] || fail "$(wc -l <"$OUT") lines, want 201"
    awk -F, 'NR > 1 && (NF != 5 || ($1 != 0 && $1 != 1) ||
                        $2 < 0 || $2 >= 1000 || $3 < 0 || $3 >= 1000000) {
                 print "bad row " NR ": " $0; bad = 1 }
             END { exit bad }' "$OUT" || fail "rows out of range"
    cp "$OUT" "$TMP/first"
    run --spec "$SPEC" --dump 200 --split train
    cmp -s "$OUT" "$TMP/first" || fail "two dumps differ"
    run --spec "$SPEC" --split=test --dump=200
    cmp -s "$OUT" "$TMP/first" && fail "train and test dumps are the same"
    ok "dump"
    ;;
usage)
    run --version
    rc_is 0
    grep -qE '^rf-ctr-data \(rdmaflow\) ' "$OUT" || fail "--version: $(cat "$OUT")"
    run --help
    rc_is 0
    has "--version" "$OUT"
    has "--spec" "$OUT"
    # malformed: exit 2, the flag or field named on stderr
    while IFS='|' read -r want args; do
        [[ -z $want ]] && continue
        eval "run $args"
        rc_is 2 "$args"
        has "$want" "$ERR"
        [[ -s $OUT ]] && fail "$args: wrote to stdout"
    done <<'CASES'
unknown argument '--bogus'|--bogus
--spec needs a value|--spec
--spec given twice|--spec seed=1 --spec seed=2
--spec: ctr spec: vocab: '1e10' is too large|--spec 'vocab=1e10'
--spec: ctr spec: unknown field 'colour'|--spec 'colour=red'
--spec: ctr spec: zipf: 2 exponents for 3 vocabularies|--spec 'vocab=1,2,3;zipf=1,2'
--spec: ctr spec: dense|--spec 'dense=-1'
--split: 'valid' is not train or test|--split valid
--n: 'x' is not a positive integer|--n x
--n: '0' is not a positive integer|--n 0
--n: 3001 is more than the split's 3000|--spec 'test=3000' --n 3001
--dump given twice|--dump 3 --dump 4
--dump needs a value|--dump
--dump: 'all' is not a positive integer|--dump all
--n and --dump both give the number|--n 5 --dump 5
CASES
    ok "usage"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
rft_finish
