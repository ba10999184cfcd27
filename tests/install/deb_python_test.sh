#!/usr/bin/env bash
# tests/install/deb_python_test.sh BUILD_DIR VERSION PYTHON (ctest
# install.deb_python): python3-rdmaflow installed for real, so that dpkg
# resolves its Depends (install.deb only unpacks with `dpkg -x`). `cpack -G
# DEB` makes librdmaflow0 and python3-rdmaflow; `dpkg -i` installs both
# (their Depends must be satisfied by what is on the machine: dpkg
# configures neither otherwise); PYTHON (/usr/bin/python3), with no
# PYTHONPATH or LD_LIBRARY_PATH, imports rdmaflow from
# /usr/lib/python3/dist-packages and reports the library's version, its
# extension's librdmaflow.so.0 resolving to /usr/lib/<multiarch>; postinst
# has byte-compiled the modules. Then `dpkg -P` removes both, and nothing of
# them may be left: no file, no byte-code, no ldconfig cache entry, no dpkg
# record. The machine is left as it was, also when a check fails (the EXIT
# trap purges what this script installed).
#
# Needs root (skipped, exit 77, otherwise, and without dpkg). Refuses to run
# (fails, naming them) when any rdmaflow package is known to dpkg (installed,
# half-installed or with config files left), when a file the packages hold
# exists already (a `cmake --install --prefix /usr`), or when PYTHON already
# imports some rdmaflow: installing over those, or removing them afterwards,
# would change the machine. ctest runs it alone (RUN_SERIAL): while the
# packages are installed, /usr/lib holds a librdmaflow.so.0 and
# /usr/lib/python3/dist-packages an rdmaflow that other tests must not see.
set -uo pipefail
build=${1:?build directory} version=${2:?version} python=${3:?python interpreter}
case_name=install.deb_python
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"

if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: $case_name: dpkg -i needs root"
    exit 77
fi
if ! command -v dpkg >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "SKIP: $case_name: no dpkg on this machine"
    exit 77
fi

scratch=$(mktemp -d)
installed=0  # 1 from the moment dpkg -i may have changed the machine
made_site=0  # 1 if /usr/lib/python3/dist-packages/rdmaflow was absent before
site=/usr/lib/python3/dist-packages
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
packages=(python3-rdmaflow librdmaflow0)
all_ours=(librdmaflow0 librdmaflow-dev rdmaflow-tools python3-rdmaflow)

# purge: dpkg -P the packages this script installed (quietly; the caller
# checks what is left).
purge() {
    timeout "$(t 120)" dpkg -P "${packages[@]}" >"$scratch/purge.log" 2>&1
}
cleanup() {
    if ((installed)); then
        echo "$case_name: removing the packages it installed (dpkg -P ${packages[*]})"
        purge || show "$scratch/purge.log"
        # byte-code a failed prerm left behind, in a folder that was not there
        if ((made_site)) && [[ -d $site/rdmaflow ]] && ! dpkg -S "$site/rdmaflow" >/dev/null 2>&1; then
            rm -rf "$site/rdmaflow"
        fi
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# status PKG: dpkg's state of PKG (installed, config-files, half-installed,
# ...), empty if dpkg does not know it.
status() {
    dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true
}

# Preconditions: nothing of rdmaflow on the machine.
conflicts=()
for pkg in "${all_ours[@]}"; do
    st=$(status "$pkg")
    [[ -z $st || $st == not-installed ]] || conflicts+=("package $pkg is $st")
done
# (-s: not the user's site directory; from the scratch folder, not the tree)
if ! origin=$(cd "$scratch" && env -u PYTHONPATH -u LD_LIBRARY_PATH "$python" -s -c \
    'import importlib.util as u; s = u.find_spec("rdmaflow"); print(s.origin if s else "")' 2>&1); then
    fail "$python does not run: $origin"
    rft_finish
fi
[[ -z $origin ]] || conflicts+=("$python already imports rdmaflow from $origin")

if ! (cd "$build" && cpack -G DEB -B "$scratch/out" -D "CPACK_COMPONENTS_ALL=Runtime;Python") \
    >"$scratch/cpack.log" 2>&1; then
    fail "cpack -G DEB (Runtime, Python)"
    show "$scratch/cpack.log" 30
    rft_finish
fi
debs=()
for pkg in "${packages[@]}"; do
    f=$(ls "$scratch/out/${pkg}_"*.deb 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "cpack made no $pkg package: $(ls "$scratch/out" | tr '\n' ' ')"
        rft_finish
    fi
    debs+=("$f")
done
# every file the packages hold (dpkg-deb -c: "./usr/lib/...", directories end in /)
for f in "${debs[@]}"; do
    dpkg-deb -c "$f" || fail "dpkg-deb -c $f"
done | awk '{print substr($6, 2)}' | grep -v '/$' >"$scratch/files"
[[ -s $scratch/files ]] || { fail "no file in ${debs[*]}" && rft_finish; }
while read -r f; do
    [[ -e $f || -L $f ]] && conflicts+=("$f exists already ($(dpkg -S "$f" 2>/dev/null | cut -d: -f1 || true))")
done <"$scratch/files"
[[ -e $site/rdmaflow ]] || made_site=1
if ((${#conflicts[@]})); then
    echo "FAIL: $case_name refuses to run: rdmaflow is on this machine already, and"
    echo "installing and removing its packages would change that:"
    printf '    %s\n' "${conflicts[@]}"
    echo "(remove it first, with dpkg -P for a package, then run the test again)"
    exit 1
fi
ok "no rdmaflow on this machine; $(wc -l <"$scratch/files") files in ${packages[*]}"

# Install: dpkg resolves the Depends against what is installed.
installed=1
if timeout "$(t 120)" dpkg -i "${debs[@]}" >"$scratch/install.log" 2>&1; then
    ok "dpkg -i $(cd "$scratch/out" && echo "${debs[@]##*/}")"
else
    fail "dpkg -i ${debs[*]##*/} (unmet Depends?)"
    show "$scratch/install.log" 30
fi
for pkg in "${packages[@]}"; do
    st=$(status "$pkg")
    [[ $st == installed ]] && ok "$pkg $(dpkg-query -W -f='${Version}' "$pkg"): installed, Depends resolved" ||
        fail "$pkg is '$st' after dpkg -i, want installed"
done

# Import with the machine's own paths only.
ext=$(ls "$site"/rdmaflow/_rdmaflow.cpython-*.so 2>/dev/null | head -n 1)
if [[ -z $ext ]]; then
    fail "no $site/rdmaflow/_rdmaflow.cpython-*.so"
else
    # (/lib is /usr/lib on Debian 12, and ld.so may name either)
    where=$(env -u LD_LIBRARY_PATH ldd "$ext" | awk '$1 == "librdmaflow.so.0" {print $3}')
    [[ -n $where && $(readlink -f "$where") == "$(readlink -f "$libdir/librdmaflow.so.0")" ]] &&
        ok "$(basename "$ext"): librdmaflow.so.0 from $libdir" ||
        fail "$(basename "$ext"): librdmaflow.so.0 resolves to '$where', want $libdir/librdmaflow.so.0"
fi
out=$(cd "$scratch" && env -u PYTHONPATH -u LD_LIBRARY_PATH timeout "$(t 60)" "$python" -s -c \
    'import rdmaflow; print(rdmaflow.__version__); print(rdmaflow.__file__)' 2>&1)
rc=$?
if [[ $rc -eq 0 && $out == "$version"$'\n'"$site/rdmaflow/__init__.py" ]]; then
    ok "$python: import rdmaflow from $site, version $version"
else
    fail "$python: import rdmaflow: exit $rc, want version $version from $site"
    echo "$out" | tail -n 15 | sed 's/^/    | /'
fi
pyc=$(ls "$site"/rdmaflow/__pycache__/__init__.cpython-*.pyc 2>/dev/null | head -n 1)
[[ -n $pyc ]] && ok "postinst byte-compiled the modules ($(basename "$pyc"))" ||
    fail "no byte-code in $site/rdmaflow/__pycache__ (postinst's py3compile)"

# Remove: nothing left.
if purge; then
    ok "dpkg -P ${packages[*]}"
else
    fail "dpkg -P ${packages[*]}"
    show "$scratch/purge.log"
fi
before=$failures
for pkg in "${packages[@]}"; do
    st=$(status "$pkg")
    [[ -z $st || $st == not-installed ]] || fail "$pkg is '$st' after dpkg -P"
done
while read -r f; do
    [[ -e $f || -L $f ]] && fail "$f is left after dpkg -P"
done <"$scratch/files"
[[ -e $site/rdmaflow ]] && fail "$site/rdmaflow is left after dpkg -P: $(find "$site/rdmaflow" | head -n 5 | tr '\n' ' ')"
ldconfig -p | grep -q librdmaflow && fail "ldconfig's cache still lists librdmaflow after dpkg -P"
((failures == before)) && ok "nothing of the packages is left"
installed=0
rft_finish
