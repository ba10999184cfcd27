#!/usr/bin/env bash
# tests/valgrind/memcheck.sh SUITE PROGRAM: valgrind memcheck over a suite,
# every process included (--trace-children: the suites' children are this
# same program re-executed, or its helpers). A case passes when it passes and
# valgrind reports no error (invalid accesses, uninitialised values, definite
# leaks; "possibly lost" blocks of libraries' own initialisers are not
# errors). SUITE:
#   conformance  every case of rf_fabric_conformance on the sock provider
#   monitored    rf_monitored_test's hooks and recovery cases (a chief and a
#                ps process, the ps SIGKILLed and restarted: one short
#                distributed run)
# Exit 0 when every case passed clean; the first report is shown otherwise.
set -uo pipefail
suite=${1:?suite} program=${2:?program}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RF_TEST_TIME_SCALE=$((${RF_TEST_TIME_SCALE:-1} * 10)) # valgrind is slow
# sock: under valgrind the heap is mapped rwx, which shm (and so auto, the
# default) refuses to register for remote access
export RF_FABRIC=sock
vg=(valgrind --error-exitcode=99 --trace-children=yes --leak-check=full
    --errors-for-leak-kinds=definite --show-leak-kinds=definite -q)

case $suite in
conformance)
    cases=$("$program" --list --provider sock | awk '{ print $1 }')
    args=(--provider sock --host 127.0.0.1 --case)
    ;;
monitored)
    cases="hooks recovery"
    args=(--case)
    ;;
*)
    echo "memcheck.sh: unknown suite '$suite'" >&2
    exit 2
    ;;
esac
[[ -n $cases ]] || { echo "memcheck.sh: $program lists no case" >&2; exit 1; }

failed=0 n=0
for c in $cases; do
    n=$((n + 1))
    "${vg[@]}" "$program" "${args[@]}" "$c" >"$tmp/$c.log" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]]; then
        echo "ok: $c clean under memcheck"
    else
        failed=$((failed + 1))
        echo "FAIL: $c exited $rc under memcheck (99: valgrind found errors):"
        sed -n '1,80p' "$tmp/$c.log"
    fi
done
echo "memcheck $suite: $((n - failed)) of $n cases clean"
[[ $failed -eq 0 ]]
