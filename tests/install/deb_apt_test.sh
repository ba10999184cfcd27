#!/usr/bin/env bash
# tests/install/deb_apt_test.sh BUILD_DIR VERSION [PYTHON] (ctest
# install.deb_apt): the Debian packages installed as a user installs them,
# and removed again, leaving the machine as it was. As root:
#  1. `cpack -G DEB` makes librdmaflow0, librdmaflow-dev, rdmaflow-tools and,
#     with PYTHON (the build has the Python package), python3-rdmaflow.
#  2. Their Depends, resolved from Debian's archive for a minimal Debian:
#     apt-get simulates (-s, changing nothing) installing each package with
#     librdmaflow0 on a dpkg status that holds only this machine's base
#     system (its Essential and Priority: required packages and what they
#     depend on), and what the package needs must come with it, in the
#     manner of dpkg-shlibdeps: the package that holds each library an ELF
#     file of it is linked against (objdump NEEDED, resolved by ldd here),
#     numpy and the interpreter for python3-rdmaflow, the -dev packages of
#     rdmaflow.pc's Requires.private for librdmaflow-dev (with Depends
#     only), and jq and gnuplot, which rf-plot and rf-trace-plot run, for
#     rdmaflow-tools (with Recommends; the package that holds each command
#     here must be named in its Depends or Recommends). A package linked
#     against librdmaflow.so.0 must depend on librdmaflow0 of its version.
#  3. `apt-get install ./*.deb` (Recommends installed, as apt does by
#     default: rf-plot needs them) resolves what is missing from the
#     archive; dpkg must say "install ok installed" for each. Then, from a
#     folder outside the build tree, with no LD_LIBRARY_PATH or PYTHONPATH:
#     /usr/bin/rf-info --version and rf-trainer's librdmaflow.so.0 from
#     /usr/lib/<multiarch>, rf-fabric-demo on loopback (sock), rf-plot
#     --check (jq and gnuplot there), the installed example
#     /usr/share/doc/librdmaflow-dev/examples/fabric_hello.c built with
#     `cc $(pkg-config --cflags --libs rdmaflow)` and run, and trainer.c
#     built, and /usr/bin/python3 -c 'import rdmaflow' from
#     /usr/lib/python3/dist-packages reporting VERSION, byte-compiled by the
#     postinst.
#  4. `apt-get purge` of the rdmaflow packages and of exactly the packages
#     the install pulled in (not autoremove, which would take others): the
#     package state (dpkg-query: package, version, status) and apt's
#     automatic marks must equal those before, and nothing dpkg -L listed
#     may be left, nor librdmaflow in ldconfig's cache.
# The machine is left as it was also when a check fails midway (the EXIT
# trap purges). A run killed before it could restore (ctest's timeout is
# SIGKILL) leaves /var/tmp/rdmaflow-deb-apt-test (the state before, the
# packages installed): the next run says so, restores the machine from it
# and goes on. rdmaflow packages or files on the machine that no run of
# this test installed (a user's) make it fail, naming them, untouched.
# Runs of this test from several build trees take turns (flock); ctest
# runs it alone (RUN_SERIAL): while the packages are installed /usr holds
# a librdmaflow.so.0, rdmaflow headers and an rdmaflow Python package.
# Skipped (77) when not root or not on a dpkg/apt machine.
set -uo pipefail
build=${1:?build directory} version=${2:?version} python=${3:-}
case_name=install.deb_apt
. "$(dirname "${BASH_SOURCE[0]}")/../common/lib.sh"

if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: $case_name: apt-get install needs root"
    exit 77
fi
for c in apt-get apt-cache apt-mark dpkg dpkg-deb dpkg-query flock objdump; do
    if ! command -v "$c" >/dev/null 2>&1; then
        echo "SKIP: $case_name: no $c on this machine (Debian's apt, dpkg and binutils)"
        exit 77
    fi
done

started=$SECONDS
scratch=$(mktemp -d)
chmod 755 "$scratch" # apt's _apt user reads the .deb files from here
state=/var/tmp/rdmaflow-deb-apt-test
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=/usr/lib/$multiarch
site=/usr/lib/python3/dist-packages
sysPython=/usr/bin/python3
examples=/usr/share/doc/librdmaflow-dev/examples
ours=(librdmaflow0 librdmaflow-dev rdmaflow-tools)
[[ -z $python ]] || ours+=(python3-rdmaflow)
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
apt_opts=(-y -q -o "DPkg::Lock::Timeout=$(t 300)")
installed=0 # 1 from the moment apt-get install may have changed the machine

# pkg_state: every package dpkg knows other than as not-installed, with its
# version and status, sorted; auto_state: apt's automatic marks.
pkg_state() {
    dpkg-query -W -f='${binary:Package} ${Version} ${Status}\n' |
        grep -v ' not-installed$' | sort
}
auto_state() { apt-mark showauto | sort; }
names() { awk '{print $1}' "$1" | sed "s/:$arch\$//" | sort -u; }
# known PKG: dpkg knows PKG as anything but not-installed.
known() {
    local st
    st=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ -n $st && $st != *" not-installed" ]]
}
is_ours() { [[ " librdmaflow0 librdmaflow-dev rdmaflow-tools python3-rdmaflow " == *" $1 "* ]]; }
# owner_of PATH: sets owned to the package that holds PATH (or the file it
# resolves to) here, as dpkg names it without the architecture; empty if
# none. owner PATH prints it.
declare -A owners
owner_of() {
    local c q out
    owned=${owners[$1]-}
    [[ -z $owned ]] || return 0
    for c in "$1" "$(readlink -f "$1")"; do
        for q in "$c" "${c#/usr}" "/usr$c"; do
            out=$(dpkg -S "$q" 2>/dev/null | grep -v '^diversion' | head -n 1)
            if [[ -n $out ]]; then
                out=${out%%: *}
                out=${out%%,*}
                owned=${out%:"$arch"}
                owners[$1]=$owned
                return 0
            fi
        done
    done
}
owner() {
    owner_of "$1"
    echo "$owned"
}

# restore: purge the rdmaflow packages and the packages a run pulled in
# ($state/pulled, and whatever apt marked automatic that was not installed
# before: a run killed during apt-get install), then compare the package
# state and the automatic marks with $state's. 0 if they are equal.
restore() {
    local p purge=()
    pkg_state >"$scratch/now"
    auto_state >"$scratch/auto.now"
    for p in $(comm -13 <(names "$state/before") <(names "$scratch/now")); do
        if is_ours "$p" || grep -qx "$p" "$state/pulled" 2>/dev/null ||
            grep -qx "$p" "$scratch/auto.now"; then
            purge+=("$p")
        else
            echo "$case_name: $p was installed by hand since; not removing it"
        fi
    done
    if ((${#purge[@]})); then
        echo "$case_name: apt-get purge ${purge[*]}"
        timeout "$(t 300)" apt-get purge "${apt_opts[@]}" "${purge[@]}" \
            >"$scratch/purge.log" 2>&1 || show "$scratch/purge.log" 20
    fi
    pkg_state >"$scratch/after"
    auto_state >"$scratch/auto.after"
    diff "$state/before" "$scratch/after" >"$scratch/state.diff" &&
        diff "$state/auto" "$scratch/auto.after" >>"$scratch/state.diff"
}
# tidy: remove what the packages left behind (byte-code of a failed prerm,
# directories) that dpkg no longer knows: of $state/made, the paths the
# packages hold that were absent before, deepest first; called after the
# checks have reported it.
tidy() {
    local f
    while read -r f; do
        if [[ -e $f || -L $f ]] && ! dpkg -S "$f" >/dev/null 2>&1; then
            echo "$case_name: removing $f, left behind"
            rm -rf "$f"
        fi
    done <"$state/made"
    ldconfig
}
cleanup() {
    if ((installed)); then
        echo "$case_name: restoring the machine (the run stopped midway)"
        if restore; then
            tidy
            rm -rf "$state"
            echo "$case_name: restored: package state and automatic marks as before"
        else
            echo "$case_name: the package state still differs from the one before:"
            show "$scratch/state.diff" 30
            echo "$case_name: kept $state: the next run restores from it"
        fi
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# 1. The packages (before the lock: this changes nothing on the machine).
if ! (cd "$build" && timeout "$(t 300)" cpack -G DEB -B "$scratch/out") >"$scratch/cpack.log" 2>&1; then
    fail "cpack -G DEB"
    show "$scratch/cpack.log" 30
    rft_finish
fi
declare -A deb
for pkg in "${ours[@]}"; do
    f=$(ls "$scratch/out/${pkg}_"*.deb 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "cpack made no $pkg package: $(ls "$scratch/out" | tr '\n' ' ')"
        rft_finish
    fi
    chmod 644 "$f"
    deb[$pkg]=$f
    dpkg -x "$f" "$scratch/root"
done
chmod -R a+rX "$scratch/out"
debver=$(dpkg-deb -f "${deb[librdmaflow0]}" Version)
ok "cpack: ${ours[*]} $debver ($((SECONDS - started)) s)"

# Runs from other build trees wait for this one. (apt-get and dpkg inherit
# the lock: an apt-get still running after this script was killed holds it
# until it is done, so the next run restores after it.)
exec 9>/run/lock/rdmaflow-deb-apt-test.lock
if ! flock -w "$(t 300)" 9; then
    fail "another run of $case_name held its lock for $(t 300) s"
    rft_finish
fi

# A run killed before it restored the machine: restore now.
if [[ -d $state ]]; then
    echo "$case_name: a run of this test ($(cat "$state/started" 2>/dev/null)) stopped before"
    echo "it restored the machine; restoring it from $state"
    if restore; then
        tidy
        rm -rf "$state"
        ok "restored the machine as it was before that run"
    else
        fail "could not restore the machine as it was before that run; the difference:"
        show "$scratch/state.diff" 30
        echo "(purge what is left by hand, then rm -rf $state)"
        rft_finish
    fi
fi

# No rdmaflow on the machine that this test did not install.
conflicts=()
for pkg in "${ours[@]}"; do
    known "$pkg" && conflicts+=("package $pkg: $(dpkg-query -W -f='${Version} ${Status}' "$pkg")")
done
for f in "${deb[@]}"; do
    dpkg-deb -c "$f" || fail "dpkg-deb -c $f"
done | awk '{print substr($6, 2)}' | sed 's,/$,,' | sort -u >"$scratch/paths"
while read -r f; do
    [[ -n $f && ! -d $f && (-e $f || -L $f) ]] &&
        conflicts+=("$f exists already ($(owner "$f"))")
done <"$scratch/paths"
origin=$(cd "$scratch" && env -u PYTHONPATH -u LD_LIBRARY_PATH "$sysPython" -c \
    'import importlib.util as u; s = u.find_spec("rdmaflow"); print(s.origin if s else "")' 2>&1)
[[ -z $origin ]] || conflicts+=("$sysPython imports rdmaflow already: $origin")
if ((${#conflicts[@]})); then
    fail "rdmaflow is on this machine already, not installed by this test, and"
    echo "installing and purging its packages would change that:"
    printf '    %s\n' "${conflicts[@]}"
    echo "(a user's: remove it, apt-get purge ${ours[*]}, then run the test again)"
    rft_finish
fi

# 2. Depends resolved from the archive for a minimal Debian (simulated).
t1=$SECONDS
if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
    fail "apt has no package lists: it cannot resolve anything from the archive (run apt-get update)"
    rft_finish
fi
seed=$(dpkg-query -W -f='${db:Status-Abbrev}|${Essential}|${Priority}|${binary:Package}\n' |
    awk -F'|' '$1 ~ /^ii/ && ($2 == "yes" || $3 == "required") {print $4}')
# shellcheck disable=SC2086 # (package names)
apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances $seed 2>/dev/null | grep -v '^ ' |
    sed "s/:$arch\$//" | sort -u >"$scratch/closure"
dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' | awk '$1 == "ii" {print $2}' |
    sed "s/:$arch\$//" | sort -u >"$scratch/installed"
comm -12 "$scratch/closure" "$scratch/installed" >"$scratch/base"
# shellcheck disable=SC2046
dpkg-query -s $(cat "$scratch/base") >"$scratch/status" 2>/dev/null
# simulate NAME RECOMMENDS DEB...: apt-get's plan for installing DEB... on
# the base system; its packages and the base's in $scratch/plan.NAME (when
# apt finds none, the plan is marked failed and need says nothing more).
declare -A nosolution
simulate() {
    local name=$1 rec=$2 rc what=Depends
    shift 2
    [[ $rec == false ]] || what="Depends and Recommends"
    apt-get -s -q -o Dir::State::status="$scratch/status" \
        -o APT::Install-Recommends="$rec" install "$@" >"$scratch/sim.$name.log" 2>&1
    rc=$?
    { cat "$scratch/base" && awk '$1 == "Inst" {print $2}' "$scratch/sim.$name.log"; } |
        sed "s/:$arch\$//" | sort -u >"$scratch/plan.$name"
    if ((rc != 0)); then
        fail "apt-get cannot install ${*##*/} on a minimal Debian ($what):"
        grep -v '^\(Inst\|Conf\|Reading\|Building\) ' "$scratch/sim.$name.log" | tail -n 15 | sed 's/^/    | /'
        nosolution[$name]=1
    fi
    return $rc
}
# need PKG PLAN WHAT OWNER: OWNER, the package that holds WHAT here, comes
# with PKG (it is in PLAN).
need() {
    if [[ -n ${nosolution[$2]-} ]]; then
        return
    elif [[ -z $4 ]]; then
        fail "$1 needs $3, which no package holds here"
    elif ! grep -qx "$4" "$scratch/plan.$2"; then
        fail "$1 needs $3 ($4), which installing it on a minimal Debian does not bring ($2)"
    fi
}
# needs_libs PKG PLAN: every library the ELF files of PKG are linked
# against; counts the files in $elf.
elf=0
needs_libs() {
    local pkg=$1 plan=$2 f so path
    while read -r f; do
        f=$scratch/root/$f
        [[ -f $f && ! -L $f && $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
        elf=$((elf + 1))
        LD_LIBRARY_PATH=$scratch/root$libdir ldd "$f" >"$scratch/ldd" 2>&1
        for so in $(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}'); do
            path=$(awk -v so="$so" '$1 == so && $2 == "=>" {print $3}' "$scratch/ldd")
            if [[ $so == ld-linux* ]]; then
                continue # the dynamic loader: libc6's, Essential
            elif [[ -z $path || $path == "not" ]]; then
                fail "$pkg: ${f##*/} needs $so, which is not on this machine"
            elif [[ $path == "$scratch/root/"* ]]; then
                [[ $(dpkg-deb -f "${deb[$pkg]}" Depends) == *"librdmaflow0 (= $debver)"* ||
                    $pkg == librdmaflow0 ]] ||
                    fail "$pkg: ${f##*/} needs $so, but $pkg does not depend on librdmaflow0 (= $debver)"
            else
                owner_of "$path"
                need "$pkg" "$plan" "$so (${f##*/})" "$owned"
            fi
        done
    done < <(dpkg-deb -c "${deb[$pkg]}" | awk '{print substr($6, 2)}')
}
before=$failures
simulate lib false "${deb[librdmaflow0]}"
needs_libs librdmaflow0 lib
simulate dev false "${deb[librdmaflow0]}" "${deb[librdmaflow-dev]}"
pc=$scratch/root$libdir/pkgconfig/rdmaflow.pc
for mod in $(sed -n 's/^Requires.private://p' "$pc" | tr ',' ' '); do
    need librdmaflow-dev dev "pkg-config's $mod" "$(owner "$(pkg-config --path "$mod" 2>/dev/null)")"
done
simulate tools false "${deb[librdmaflow0]}" "${deb[rdmaflow-tools]}"
needs_libs rdmaflow-tools tools
# what rf-plot (check_tools) and rf-trace-plot run: Recommends
simulate tools_rec true "${deb[librdmaflow0]}" "${deb[rdmaflow-tools]}"
relations=" $(dpkg-deb -f "${deb[rdmaflow-tools]}" Depends Recommends | tr '\n' ' ') "
for cmd in jq gnuplot; do
    for script in rf-plot rf-trace-plot; do
        grep -qw "$cmd" "$scratch/root/usr/bin/$script" ||
            fail "$script no longer runs $cmd: update the list in $case_name"
    done
    path=$(command -v "$cmd")
    o=$([[ -n $path ]] && owner "$path")
    need rdmaflow-tools tools_rec "$cmd" "$o"
    [[ -n $o && $relations == *[:,\|]" $o"[\ ,]* ]] ||
        fail "rdmaflow-tools: rf-plot runs $cmd (${o:-no package here}), not in its Depends or Recommends"
done
if [[ -n $python ]]; then
    simulate python false "${deb[librdmaflow0]}" "${deb[python3-rdmaflow]}"
    needs_libs python3-rdmaflow python
    need python3-rdmaflow python "$sysPython" "$(owner "$sysPython")"
    numpy=$(env -u PYTHONPATH "$sysPython" -c 'import numpy; print(numpy.__file__)' 2>/dev/null)
    need python3-rdmaflow python "numpy" "$([[ -n $numpy ]] && owner "$numpy")"
fi
((failures == before)) &&
    ok "on a minimal Debian ($(wc -l <"$scratch/base") packages) apt brings what the packages need: the libraries of $elf ELF files, rdmaflow.pc's Requires.private, jq and gnuplot (Recommends)${python:+, python3 and numpy} ($((SECONDS - t1)) s)"
for pkg in "${ours[@]}"; do
    echo "    $pkg: $(dpkg-deb -f "${deb[$pkg]}" Depends Recommends Suggests | tr '\n' ' ')"
done

# 3. Install, as a user does.
rm -rf "$state.new"
mkdir -p "$state.new"
pkg_state >"$state.new/before"
auto_state >"$state.new/auto"
while read -r f; do
    [[ -n $f && ! -e $f && ! -L $f ]] && echo "$f"
done <"$scratch/paths" | sort -r >"$state.new/made"
echo "$(date -u '+%F %T UTC') from $build, pid $$" >"$state.new/started"
: >"$state.new/pulled"
mv "$state.new" "$state"
installed=1
t2=$SECONDS
rel=()
for pkg in "${ours[@]}"; do rel+=("./out/${deb[$pkg]##*/}"); done
if (cd "$scratch" && timeout "$(t 300)" apt-get install "${apt_opts[@]}" \
    -o APT::Install-Recommends=true "${rel[@]}") >"$scratch/install.log" 2>&1; then
    ok "apt-get install ${rel[*]} ($((SECONDS - t2)) s)"
    install_ok=1
else
    fail "apt-get install ${rel[*]}"
    show "$scratch/install.log" 30
    install_ok=0
fi
pkg_state >"$scratch/installed.state"
comm -13 <(names "$state/before") <(names "$scratch/installed.state") |
    while read -r p; do is_ours "$p" || echo "$p"; done >"$state/pulled"
if [[ -s $state/pulled ]]; then
    ok "apt pulled in from the archive: $(tr '\n' ' ' <"$state/pulled")"
elif ((install_ok)); then
    ok "apt pulled in nothing: this machine had every dependency"
fi
changed=$(join -j 1 <(sort "$state/before") <(sort "$scratch/installed.state") 2>/dev/null |
    awk '$2 != $6 {print $1 " " $2 " -> " $6}')
[[ -z $changed ]] || fail "apt-get install changed installed packages (cannot be undone): $changed"
for pkg in "${ours[@]}"; do
    st=$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null)
    [[ $st == "install ok installed $debver" ]] && ok "dpkg: $pkg $st" ||
        fail "dpkg: $pkg is '$st', want 'install ok installed $debver'"
done
for pkg in "${ours[@]}"; do
    dpkg -L "$pkg" 2>/dev/null
done | grep '^/' | sort -u >"$scratch/listed"

# Run it from /usr, from a folder outside the build tree (not after a
# failed install: there is nothing to run).
cd "$scratch" || exit 1
if ((install_ok)); then
    unset LD_LIBRARY_PATH PYTHONPATH PKG_CONFIG_PATH
    out=$(timeout "$(t 30)" /usr/bin/rf-info --version 2>&1)
    rc=$?
    [[ $rc -eq 0 && $out == "rf-info (rdmaflow) $version"* ]] &&
        ok "/usr/bin/rf-info --version: $out" || fail "/usr/bin/rf-info --version: exit $rc, '$out'"
    where=$(ldd /usr/bin/rf-trainer | awk '$1 == "librdmaflow.so.0" {print $3}')
    [[ -n $where && $(readlink -f "$where") == "$(readlink -f "$libdir/librdmaflow.so.0")" ]] &&
        ok "/usr/bin/rf-trainer: librdmaflow.so.0 from $libdir" ||
        fail "/usr/bin/rf-trainer: librdmaflow.so.0 resolves to '$where', want $libdir"
    timeout "$(t 60)" /usr/bin/rf-fabric-demo --provider sock >"$scratch/demo.log" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]] && grep -q "^rf-fabric-demo: OK, both sides checked out$" "$scratch/demo.log"; then
        ok "/usr/bin/rf-fabric-demo --provider sock: both sides checked out"
    else
        fail "/usr/bin/rf-fabric-demo --provider sock: exit $rc"
        show "$scratch/demo.log"
    fi
    out=$(timeout "$(t 30)" /usr/bin/rf-plot --check 2>&1)
    rc=$?
    [[ $rc -eq 0 ]] && ok "/usr/bin/rf-plot --check: jq and gnuplot (pngcairo) there" ||
        fail "/usr/bin/rf-plot --check: exit $rc, $out"
    # shellcheck disable=SC2046 # (pkg-config's words)
    if cc -o "$scratch/fabric_hello" "$examples/fabric_hello.c" \
        $(pkg-config --cflags --libs rdmaflow) -pthread >"$scratch/cc.log" 2>&1; then
        out=$(timeout "$(t 60)" "$scratch/fabric_hello" sock 2>&1)
        rc=$?
        if [[ $rc -eq 0 && $out == *"fabric_hello: ok"* ]]; then
            ok "$examples/fabric_hello.c: built with pkg-config rdmaflow from /usr, runs on sock"
        else
            fail "fabric_hello sock (built from $examples): exit $rc"
            echo "$out" | tail -n 10 | sed 's/^/    | /'
        fi
    else
        fail "cc $examples/fabric_hello.c \$(pkg-config --cflags --libs rdmaflow)"
        show "$scratch/cc.log"
    fi
    out=""
    # shellcheck disable=SC2046
    if cc -o "$scratch/trainer" "$examples/trainer.c" $(pkg-config --cflags --libs rdmaflow) -lm \
        >"$scratch/cc.log" 2>&1 && out=$(timeout "$(t 30)" "$scratch/trainer" --version 2>&1) &&
        [[ $out == *"$version"* ]]; then
        ok "$examples/trainer.c: built the same way, --version $version"
    else
        fail "$examples/trainer.c: build or --version: ${out:-}"
        show "$scratch/cc.log"
    fi
    if [[ -n $python ]]; then
        out=$(timeout "$(t 60)" "$sysPython" -c \
            'import rdmaflow; print(rdmaflow.__version__); print(rdmaflow.__file__)' 2>&1)
        rc=$?
        if [[ $rc -eq 0 && $out == "$version"$'\n'"$site/rdmaflow/__init__.py" ]]; then
            ok "$sysPython -c 'import rdmaflow': version $version from $site"
        else
            fail "$sysPython -c 'import rdmaflow': exit $rc, want version $version from $site"
            echo "$out" | tail -n 15 | sed 's/^/    | /'
        fi
        ls "$site"/rdmaflow/__pycache__/__init__.cpython-*.pyc >/dev/null 2>&1 &&
            ok "postinst byte-compiled the modules" ||
            fail "no byte-code in $site/rdmaflow/__pycache__ (postinst's py3compile)"
    fi
fi
echo "$case_name: installed for $((SECONDS - t2)) s"

# 4. Purge, and the machine as it was.
t3=$SECONDS
if restore; then
    ok "apt-get purge: package state and automatic marks as before ($(wc -l <"$state/before") packages, $((SECONDS - t3)) s)"
else
    fail "after apt-get purge the package state differs from the one before:"
    show "$scratch/state.diff" 30
fi
before=$failures
while read -r f; do
    [[ -d $f ]] && ! grep -qx "$f" "$state/made" && continue # a directory of the system's
    [[ -e $f || -L $f ]] && fail "$f is left after apt-get purge"
done <"$scratch/listed"
ldconfig -p | grep -q librdmaflow && fail "ldconfig's cache still lists librdmaflow"
origin=$(env -u PYTHONPATH "$sysPython" -c \
    'import importlib.util as u; s = u.find_spec("rdmaflow"); print(s.origin if s else "")' 2>&1)
[[ -z $origin ]] || fail "$sysPython still finds rdmaflow: $origin"
((failures == before)) &&
    ok "nothing dpkg -L listed is left ($(wc -l <"$scratch/listed") paths), nor in ldconfig's cache"
if [[ ! -s $scratch/state.diff ]]; then
    tidy
    rm -rf "$state"
    installed=0
fi
echo "$case_name: $((SECONDS - started)) s in all"
rft_finish
