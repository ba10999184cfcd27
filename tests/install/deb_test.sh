#!/usr/bin/env bash
# tests/install/deb_test.sh BUILD_DIR VERSION (ctest install.deb): the
# Debian packages of cmake/rf_package.cmake. `cpack -G DEB` on the built
# tree makes librdmaflow0, librdmaflow-dev and rdmaflow-tools (checked:
# names, version, Depends); `dpkg -x` unpacks them into a scratch root,
# which must hold the library, headers, pkg-config file, CMake package,
# tools and man pages; then the unpacked rf-trainer --version and
# rf-fabric-demo on loopback (sock) run with LD_LIBRARY_PATH in that root,
# where librdmaflow.so.0 must resolve.
set -uo pipefail
build=${1:?build directory} version=${2:?version}
case_name=install.deb
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if ! (cd "$build" && cpack -G DEB -B "$scratch/out") >"$scratch/cpack.log" 2>&1; then
    fail "cpack -G DEB"
    show "$scratch/cpack.log" 30
    rft_finish
fi
declare -A deb
for pkg in librdmaflow0 librdmaflow-dev rdmaflow-tools; do
    f=$(ls "$scratch/out/${pkg}_"*.deb 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "no $pkg package in $(ls "$scratch/out" | tr '\n' ' ')"
        continue
    fi
    deb[$pkg]=$f
    v=$(dpkg-deb -f "$f" Version)
    [[ $v == "$version-"* ]] && ok "$pkg $v" || fail "$pkg: version '$v', want $version-N"
done
[[ ${#deb[@]} -eq 3 ]] || rft_finish

# depends PKG WORD...: each WORD is a package named in PKG's Depends.
depends() {
    local pkg=$1 d w
    shift
    d=$(dpkg-deb -f "${deb[$pkg]}" Depends)
    for w in "$@"; do
        [[ ", $d," == *", $w"[\ ,]* ]] || fail "$pkg Depends lacks $w: $d"
    done
}
before=$failures
depends librdmaflow0 libc6 libhwloc15 libopenblas0 libjson-c5 libsodium23 libisal2
depends librdmaflow-dev librdmaflow0 libhwloc-dev libopenblas-dev libjson-c-dev
depends rdmaflow-tools librdmaflow0
((failures == before)) && ok "Depends name the libraries"

root=$scratch/root
# Debian policy: the library in the multiarch directory, man pages gzipped
multiarch=$(gcc -print-multiarch)
lib=usr/lib/$multiarch
for pkg in "${!deb[@]}"; do
    dpkg -x "${deb[$pkg]}" "$root" || fail "dpkg -x ${deb[$pkg]}"
done
before=$failures
for f in $lib/librdmaflow.so.0 $lib/librdmaflow.so $lib/librdmaflow.a \
    usr/include/rdmaflow/rdmaflow.h usr/include/rdmaflow/version.h \
    $lib/pkgconfig/rdmaflow.pc $lib/cmake/rdmaflow/rdmaflowConfig.cmake \
    usr/bin/rf-trainer usr/bin/rf-launch usr/bin/rf-ckpt usr/bin/rf-fabric-demo \
    usr/bin/rf-bench usr/bin/rf-example-trainer usr/bin/rf-info usr/bin/rf-plot \
    usr/share/man/man1/rf-trainer.1.gz usr/share/man/man1/rf-plot.1.gz; do
    [[ -e $root/$f ]] || fail "unpacked root lacks /$f"
done
((failures == before)) && ok "the unpacked root holds library, headers, .pc, CMake package, tools, man pages"

before=$failures
for page in "$root"/usr/share/man/man1/*.1.gz; do
    gzip -t "$page" 2>/dev/null && zcat "$page" | grep -q '^\.SH NAME' ||
        fail "$page: not a gzipped man page"
done
[[ -z $(find "$root/usr/share/man" -name '*.1') ]] || fail "uncompressed man pages in the package"
((failures == before)) && ok "library in /$lib, man pages gzipped"
export LD_LIBRARY_PATH=$root/$lib
bin=$root/usr/bin
where=$(ldd "$bin/rf-trainer" | awk '$1 == "librdmaflow.so.0" {print $3}')
[[ $where == "$root/$lib/librdmaflow.so.0" ]] &&
    ok "rf-trainer: librdmaflow.so.0 from the unpacked root" ||
    fail "rf-trainer: librdmaflow.so.0 resolves to '$where'"
out=$("$bin/rf-trainer" --version 2>&1)
rc=$?
[[ $rc -eq 0 && $out == "rf-trainer (rdmaflow) $version"* ]] &&
    ok "rf-trainer --version: $out" || fail "rf-trainer --version: exit $rc, '$out'"
timeout "$(t 60)" "$bin/rf-fabric-demo" --provider sock >"$scratch/demo.log" 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q "^rf-fabric-demo: OK, both sides checked out$" "$scratch/demo.log"; then
    ok "rf-fabric-demo --provider sock: both sides checked out"
else
    fail "rf-fabric-demo --provider sock: exit $rc"
    show "$scratch/demo.log"
fi
rft_finish
