#!/usr/bin/env bash
# tests/install/version_test.sh VERSION PROGRAM... (ctest install.version):
# every tool answers --version with one line "NAME (rdmaflow) VERSION",
# optionally followed by " (git COMMIT)", and exit status 0, and its --help
# lists --version.
set -uo pipefail
case_name=install.version
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
version=$1
shift
[ $# -gt 0 ] || fail "no program given"
for prog in "$@"; do
    name=$(basename "$prog")
    out=$("$prog" --version 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] || fail "$name --version: exit $rc, want 0 ($out)"
    re="^$name \\(rdmaflow\\) ${version//./\\.}( \\(git [0-9a-f]+\\))?\$"
    if [[ $(wc -l <<<"$out") -eq 1 && $out =~ $re ]]; then
        ok "$name --version: $out"
    else
        fail "$name --version printed '$out', want '$name (rdmaflow) $version'"
    fi
    # grep reads it all: with grep -q and pipefail, a --help longer than
    # one stdio buffer (rf-trainer's) dies of SIGPIPE after the match
    "$prog" --help 2>&1 | grep -- '--version' >/dev/null ||
        fail "$name --help does not list --version"
done
rft_finish
