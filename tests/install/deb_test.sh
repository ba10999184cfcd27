#!/usr/bin/env bash
# tests/install/deb_test.sh BUILD_DIR VERSION [PYTHON] (ctest install.deb):
# the Debian packages of cmake/rf_package.cmake. `cpack -G DEB` on the built
# tree makes librdmaflow0, librdmaflow-dev and rdmaflow-tools, and
# python3-rdmaflow when PYTHON (the interpreter the Python package was
# built for) is given (checked: names, version, Depends, section); `dpkg -x`
# unpacks them into a scratch root, which must hold the library, headers,
# pkg-config file, CMake package, tools, man pages and the Python package;
# then the unpacked rf-trainer --version and rf-fabric-demo on loopback
# (sock) run with LD_LIBRARY_PATH in that root, where librdmaflow.so.0 must
# resolve, and PYTHON imports the unpacked rdmaflow (PYTHONPATH at the
# root's /usr/lib/python3/dist-packages) and reports the version.
# install.deb_apt (deb_apt_test.sh) installs them with apt-get, as root.
set -uo pipefail
build=${1:?build directory} version=${2:?version} python=${3:-}
case_name=install.deb
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if ! (cd "$build" && cpack -G DEB -B "$scratch/out") >"$scratch/cpack.log" 2>&1; then
    fail "cpack -G DEB"
    show "$scratch/cpack.log" 30
    rft_finish
fi
packages=(librdmaflow0 librdmaflow-dev rdmaflow-tools)
[[ -z $python ]] || packages+=(python3-rdmaflow)
declare -A deb
for pkg in "${packages[@]}"; do
    f=$(ls "$scratch/out/${pkg}_"*.deb 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "no $pkg package in $(ls "$scratch/out" | tr '\n' ' ')"
        continue
    fi
    deb[$pkg]=$f
    v=$(dpkg-deb -f "$f" Version)
    [[ $v == "$version-"* ]] && ok "$pkg $v" || fail "$pkg: version '$v', want $version-N"
done
[[ ${#deb[@]} -eq ${#packages[@]} ]] || rft_finish

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
depends librdmaflow0 libc6 libhwloc15 libopenblas0 libjson-c5 libsodium23 libisal2 libprotobuf-c1 libmicrohttpd12
depends librdmaflow-dev librdmaflow0 libhwloc-dev libopenblas-dev libjson-c-dev
depends rdmaflow-tools librdmaflow0
# what rf-plot and rf-trace-plot run (deb_apt_test.sh checks it against the
# commands' packages and Debian's archive)
r=$(dpkg-deb -f "${deb[rdmaflow-tools]}" Recommends)
[[ $r == *gnuplot-nox* && ", $r," == *", jq,"* ]] ||
    fail "rdmaflow-tools Recommends lacks gnuplot-nox or jq: '$r'"
if [[ -n $python ]]; then
    # python3 (>= 3.X~), python3 (<< 3.X+1): the extension's ABI
    py=$("$python" -c 'import sys; print("%d %d" % sys.version_info[:2])')
    read -r major minor <<<"$py"
    depends python3-rdmaflow librdmaflow0 python3-numpy libc6 \
        "python3 (>= $major.$minor~)" "python3 (<< $major.$((minor + 1)))"
    s=$(dpkg-deb -f "${deb[python3-rdmaflow]}" Section)
    [[ $s == python ]] || fail "python3-rdmaflow: section '$s', want python"
fi
((failures == before)) && ok "Depends name the libraries${python:+, and python3-rdmaflow the python3 ABI}"

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
    usr/include/rdmaflow/server.h usr/include/rdmaflow/session.h \
    usr/include/rdmaflow/monitored_session.h usr/include/rdmaflow/metrics.h \
    usr/include/rdmaflow/summary.h \
    $lib/pkgconfig/rdmaflow.pc $lib/cmake/rdmaflow/rdmaflowConfig.cmake \
    usr/bin/rf-trainer usr/bin/rf-launch usr/bin/rf-ckpt usr/bin/rf-fabric-demo \
    usr/bin/rf-bench usr/bin/rf-example-trainer usr/bin/rf-info usr/bin/rf-plot \
    usr/bin/rf-events usr/share/man/man1/rf-events.1.gz \
    usr/share/man/man1/rf-trainer.1.gz usr/share/man/man1/rf-plot.1.gz \
    usr/share/doc/librdmaflow-dev/examples/fabric_hello.c \
    usr/share/doc/librdmaflow-dev/examples/trainer.c; do
    [[ -e $root/$f ]] || fail "unpacked root lacks /$f"
done
site=usr/lib/python3/dist-packages ext=""
if [[ -n $python ]]; then
    for f in $site/rdmaflow/__init__.py $site/rdmaflow/train/__init__.py \
        $site/rdmaflow/compat/__init__.py; do
        [[ -e $root/$f ]] || fail "unpacked root lacks /$f"
    done
    ext=$(ls "$root/$site"/rdmaflow/_rdmaflow.cpython-*.so 2>/dev/null | head -n 1)
    [[ -n $ext ]] || fail "unpacked root lacks /$site/rdmaflow/_rdmaflow.cpython-*.so"
fi
((failures == before)) && ok "the unpacked root holds library, headers, .pc, CMake package, examples, tools, man pages${python:+, the Python package}"

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

if [[ -n $python && -n $ext ]]; then
    where=$(ldd "$ext" | awk '$1 == "librdmaflow.so.0" {print $3}')
    [[ $where == "$root/$lib/librdmaflow.so.0" ]] &&
        ok "$(basename "$ext"): librdmaflow.so.0 from the unpacked root" ||
        fail "$(basename "$ext"): librdmaflow.so.0 resolves to '$where'"
    out=$(cd "$scratch" && PYTHONPATH=$root/$site PYTHONDONTWRITEBYTECODE=1 \
        timeout "$(t 60)" "$python" -c \
        'import rdmaflow; print(rdmaflow.__version__); print(rdmaflow.__file__)' 2>&1)
    rc=$?
    if [[ $rc -eq 0 && $out == "$version"$'\n'"$root/$site/rdmaflow/__init__.py" ]]; then
        ok "$python: import rdmaflow from the unpacked python3-rdmaflow, version $version"
    else
        fail "$python: import rdmaflow from the unpacked root: exit $rc, want version $version from $root/$site"
        echo "$out" | tail -n 15 | sed 's/^/    | /'
    fi
fi
rft_finish
