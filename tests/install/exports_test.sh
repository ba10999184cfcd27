#!/usr/bin/env bash
# tests/install/exports_test.sh SO ARCHIVE INCLUDE_DIR (ctest install.exports):
# the symbols librdmaflow exports. In the shared library (nm -D) every
# defined dynamic symbol but the version node starts with rf_ and carries
# the RDMAFLOW_0.1 version, the soname is librdmaflow.so.0, a few key
# symbols are there and so is every name a public header marks RF_API; in
# the static archive every defined global symbol starts with rf_, and the
# same key symbols are there.
set -uo pipefail
so=$1 archive=$2 include=$3
case_name=install.exports
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
key_symbols="rf_fabric_open rf_session_create rf_cluster_resolve rf_version
  rf_status_string rf_error_message rf_monitored_session_create rf_standard_ps_ops"

# "NAME@@VERSION" for each defined dynamic symbol (nm -D).
dyn=$(nm -D --defined-only "$so" | awk '{print $NF}') || {
    echo "FAIL: nm -D $so"
    exit 1
}
[ -n "$dyn" ] || fail "$so exports nothing"
bad=$(printf '%s\n' "$dyn" | grep -v '^RDMAFLOW_0\.1$' | grep -v '^rf_' || true)
[ -z "$bad" ] && ok "every exported symbol starts with rf_" ||
    fail "exported without the rf_ prefix: $(echo $bad)"
unversioned=$(printf '%s\n' "$dyn" | grep '^rf_' | grep -v '@@RDMAFLOW_0\.1$' || true)
[ -z "$unversioned" ] && ok "every export is in RDMAFLOW_0.1" ||
    fail "not in the RDMAFLOW_0.1 node: $(echo $unversioned)"
names=$(printf '%s\n' "$dyn" | grep '^rf_' | sed 's/@.*//' | sort -u)
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = librdmaflow.so.0 ] && ok "soname $soname" ||
    fail "soname '$soname', want librdmaflow.so.0"

before=$failures
for s in $key_symbols; do
    grep -qx "$s" <<<"$names" || fail "$so does not export $s"
done
[ "$failures" -eq "$before" ] && ok "$(wc -l <<<"$names") symbols exported, key symbols among them"

# Every function and object a public header declares with RF_API.
declared=$(cat "$include"/rdmaflow/*.h | tr '\n' ' ' | grep -oE 'RF_API [^;]*;' |
    sed -E 's/\(.*//; s/\[.*//; s/;$//' | grep -oE 'rf_[a-z0-9_]+$' | sort -u)
[ "$(wc -l <<<"$declared")" -gt 100 ] || fail "found only $(wc -l <<<"$declared") RF_API declarations"
missing=$(comm -23 <(printf '%s\n' "$declared") <(printf '%s\n' "$names"))
[ -z "$missing" ] && ok "all $(wc -l <<<"$declared") RF_API declarations are exported" ||
    fail "declared RF_API but not exported: $(echo $missing)"

# The static archive: global (not local, not undefined) symbols.
glob=$(nm --defined-only -g "$archive" | awk 'NF == 3 {print $3}') || {
    echo "FAIL: nm $archive"
    exit 1
}
[ -n "$glob" ] || fail "$archive defines no global symbol"
bad=$(printf '%s\n' "$glob" | grep -v '^rf_' || true)
[ -z "$bad" ] && ok "every global symbol of the archive starts with rf_" ||
    fail "global in the archive without the rf_ prefix ($(wc -w <<<"$bad")): $(echo $bad | cut -c1-400)"
before=$failures
for s in $key_symbols; do
    grep -qx "$s" <<<"$glob" || fail "$archive does not define $s"
done
[ "$failures" -eq "$before" ] && ok "$archive defines the key symbols"
rft_finish
