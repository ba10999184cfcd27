#!/usr/bin/env bash
# tests/install/out_of_tree_test.sh BUILD_DIR SOURCE_DIR [PYTHON] (ctest
# install.out_of_tree): a program outside this tree builds and runs against
# the installed library. `cmake --install` of the (already built) tree into
# a scratch prefix; then examples/fabric_hello.c and examples/trainer.c are
# compiled twice, with `cc $(pkg-config --cflags --libs rdmaflow)` and with
# a tiny CMake project using find_package(rdmaflow) (rdmaflow::rdmaflow,
# and rdmaflow::rdmaflow_static for a second fabric_hello). Every fabric
# example runs in full on sock over loopback (LD_LIBRARY_PATH at the
# prefix's lib, which must be where librdmaflow.so.0 resolves); each
# trainer runs 1 ps + 1 worker for 20 steps on Fashion-MNIST and must
# exit 0, shut its ps down and report a test accuracy above chance.
# With PYTHON (the interpreter the package was built for, given when the
# build has the Python package) the installed package rdmaflow must import
# with that interpreter from PYTHONPATH=<prefix>/lib/python3/dist-packages
# (python/CMakeLists.txt: where Debian's python3 needs it named for a prefix
# other than /usr and /usr/local), with its extension's librdmaflow.so.0
# from the prefix, and report the library's version.
# Without the dataset the trainer runs are skipped and the test exits 77
# once everything else passed.
set -uo pipefail
build=${1:?build directory} src=${2:?source directory} python=${3:-}
case_name=install.out_of_tree
host=127.0.0.1
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
. "$src/tests/common/lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix

if ! cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" 2>&1; then
    fail "cmake --install $build --prefix $prefix"
    show "$scratch/install.log"
    rft_finish
fi
pc=$(find "$prefix" -name rdmaflow.pc | head -n 1)
[ -n "$pc" ] || { fail "no rdmaflow.pc under $prefix" && rft_finish; }
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir rdmaflow)
libdir=$(cd "$libdir" && pwd) # ${pcfiledir}/../.. resolved
[[ $libdir == "$prefix"/* && -e $libdir/librdmaflow.so.0 ]] &&
    ok "rdmaflow.pc: libdir $libdir holds librdmaflow.so.0" ||
    fail "rdmaflow.pc: libdir '$libdir' is not the prefix's or lacks librdmaflow.so.0"
header_version=$(sed -n 's/^#define RF_VERSION_STRING "\(.*\)"$/\1/p' \
    "$prefix/include/rdmaflow/version.h")
[ -n "$header_version" ] && [ "$(pkg-config --modversion rdmaflow)" = "$header_version" ] &&
    ok "pkg-config --modversion matches rdmaflow/version.h" ||
    fail "pkg-config --modversion $(pkg-config --modversion rdmaflow) differs from rdmaflow/version.h"
export LD_LIBRARY_PATH=$libdir

# check_dynamic EXE: librdmaflow.so.0 resolves into the prefix.
check_dynamic() {
    local where
    where=$(ldd "$1" | awk '$1 == "librdmaflow.so.0" {print $3}')
    [[ $where == "$libdir/librdmaflow.so.0" ]] &&
        ok "$(basename "$1"): librdmaflow.so.0 from the prefix" ||
        fail "$(basename "$1"): librdmaflow.so.0 resolves to '$where', not $libdir"
}

# run_hello EXE: the fabric example, in full.
run_hello() {
    local out
    out=$(timeout "$(t 60)" "$1" sock 2>&1)
    local rc=$?
    if [[ $rc -eq 0 && $out == *"fabric_hello: ok"* ]]; then
        ok "$(basename "$1") sock: $(echo "$out" | grep -c .) lines, ok"
    else
        fail "$(basename "$1") sock: exit $rc"
        echo "$out" | sed 's/^/    | /'
    fi
}

# run_trainer EXE: 1 ps + 1 worker, 20 steps.
skipped_trainer=0
run_trainer() {
    local exe=$1 name ps_port worker_port
    name=$(basename "$exe")
    if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
        echo "SKIP: $name: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
        skipped_trainer=1
        return
    fi
    # (not "p": free_port's own local would take the value)
    free_port ps_port && free_port worker_port || { fail "no free ports" && return; }
    local c=(--ps_hosts="$host:$ps_port" --worker_hosts="$host:$worker_port"
        --train_steps=20)
    RF_FABRIC=sock timeout "$(t 120)" "$exe" "${c[@]}" --job_name=ps --task_index=0 \
        >"$scratch/$name.ps" 2>&1 &
    local ps_pid=$!
    RF_FABRIC=sock timeout "$(t 120)" "$exe" "${c[@]}" --job_name=worker --task_index=0 \
        >"$scratch/$name.worker" 2>&1
    local wrc=$?
    ((wrc == 0)) || kill "$ps_pid" 2>/dev/null
    wait "$ps_pid"
    local prc=$?
    local acc
    acc=$(sed -n 's/^test accuracy: \(0\.[0-9]*\)$/\1/p' "$scratch/$name.worker")
    if ((wrc == 0 && prc == 0)) && grep -q "shut down by the chief" "$scratch/$name.ps" &&
        [[ -n $acc ]] && awk -v a="$acc" 'BEGIN { exit !(a > 0.3) }'; then
        ok "$name: 1 ps + 1 worker, 20 steps, test accuracy $acc"
    else
        fail "$name: worker exit $wrc, ps exit $prc, accuracy '$acc' (want > 0.3)"
        show "$scratch/$name.worker"
        show "$scratch/$name.ps"
    fi
}

# 0. the Python package, from the prefix's site directory
if [[ -n $python ]]; then
    site=$prefix/lib/python3/dist-packages
    ext=$(ls "$site"/rdmaflow/_rdmaflow.*.so 2>/dev/null | head -n 1)
    if [[ -z $ext || ! -f $site/rdmaflow/__init__.py ]]; then
        fail "no package rdmaflow (with its extension _rdmaflow) in $site"
    else
        check_dynamic "$ext"
        # from the scratch folder, not the tree; no byte-code left behind
        out=$(cd "$scratch" && PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 \
            timeout "$(t 60)" "$python" -c \
            'import rdmaflow; print(rdmaflow.__version__); print(rdmaflow.__file__)' 2>&1)
        rc=$?
        if [[ $rc -eq 0 && $out == "$header_version"$'\n'"$site/rdmaflow/__init__.py" ]]; then
            ok "$python: import rdmaflow from $site, version $header_version"
        else
            fail "$python: import rdmaflow from the prefix: exit $rc, want version $header_version from $site"
            echo "$out" | tail -n 15 | sed 's/^/    | /'
        fi
    fi
fi

# 1. pkg-config
mkdir -p "$scratch/pc"
cflags=(-std=gnu11 -Wall -Wextra -Werror)
if cc "${cflags[@]}" -o "$scratch/pc/fabric_hello" "$src/examples/fabric_hello.c" \
    $(pkg-config --cflags --libs rdmaflow) -pthread 2>"$scratch/pc.log" &&
    cc "${cflags[@]}" -o "$scratch/pc/trainer" "$src/examples/trainer.c" \
        $(pkg-config --cflags --libs rdmaflow) -lm 2>>"$scratch/pc.log"; then
    ok "pkg-config: both examples built"
    check_dynamic "$scratch/pc/fabric_hello"
    run_hello "$scratch/pc/fabric_hello"
    run_trainer "$scratch/pc/trainer"
else
    fail "pkg-config build"
    show "$scratch/pc.log" 30
fi

# 2. find_package(rdmaflow)
mkdir -p "$scratch/proj"
cat >"$scratch/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(rdmaflow_user C)
find_package(rdmaflow 0.1 REQUIRED)
find_package(Threads REQUIRED)
add_executable(fabric_hello $src/examples/fabric_hello.c)
target_link_libraries(fabric_hello PRIVATE rdmaflow::rdmaflow Threads::Threads)
add_executable(fabric_hello_static $src/examples/fabric_hello.c)
target_link_libraries(fabric_hello_static PRIVATE rdmaflow::rdmaflow_static Threads::Threads)
add_executable(trainer $src/examples/trainer.c)
target_link_libraries(trainer PRIVATE rdmaflow::rdmaflow m)
CMAKE
if cmake -S "$scratch/proj" -B "$scratch/proj/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$scratch/cmake.log" 2>&1 &&
    cmake --build "$scratch/proj/build" -j 2 >>"$scratch/cmake.log" 2>&1; then
    ok "find_package(rdmaflow): both examples built, and fabric_hello statically"
    b=$scratch/proj/build
    check_dynamic "$b/fabric_hello"
    run_hello "$b/fabric_hello"
    if ldd "$b/fabric_hello_static" | grep -q librdmaflow; then
        fail "fabric_hello_static links librdmaflow.so"
    else
        ok "fabric_hello_static: no librdmaflow.so needed"
        run_hello "$b/fabric_hello_static"
    fi
    run_trainer "$b/trainer"
else
    fail "find_package(rdmaflow) build"
    show "$scratch/cmake.log" 30
fi

if [[ $failures -eq 0 && $skipped_trainer -eq 1 ]]; then
    echo "$case_name: passed without the trainer runs (no dataset): skipped"
    exit 77
fi
rft_finish
