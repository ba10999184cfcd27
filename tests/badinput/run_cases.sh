#!/usr/bin/env bash
# tests/badinput/run_cases.sh TOOL CASES_FILE [NAME=PATH...]: runs every
# malformed invocation of CASES_FILE against the program TOOL and checks
# that each one is refused properly. NAME=PATH arguments name other
# programs the cases refer to ($RF_TRAINER: rf-trainer, which also makes
# the fixtures; see fixtures.sh).
#
# A case is one line (blank lines and lines starting with # are skipped):
#
#   STATUS | FRAGMENT | [VAR=VALUE...] [@data] ARGS...
#
# STATUS is the exit status the tool must give (2 usage error, 1 runtime
# failure), FRAGMENT the text its message must contain (on stderr or, for a
# tool that reports there, stdout), ARGS the command line (bash words:
# quotes and $VARIABLES work). Leading VAR=VALUE words are set in the
# tool's environment (TF_CONFIG='{...}'); @data marks a case that needs
# the Fashion-MNIST dataset (package dataset-fashion-mnist): without it the
# case FAILS, it is never skipped. @ro runs the tool in a private mount
# namespace (unshare -m) in which $S/ro is a read-only tmpfs, a directory
# that root cannot write into either; where no such mount can be made
# (no CAP_SYS_ADMIN) the case is not run and the run says so; @noverbs
# marks a case that expects no RDMA device (not run on a host with one,
# /sys/class/infiniband not empty). @ps starts, for this case only, one
# real ps task (rf-trainer --job_name=ps, outside $S) on free loopback
# ports and sets $PSC to the cluster flags naming it (--ps_hosts,
# --worker_hosts with one worker), so a chief gets as far as its restore;
# the ps is stopped after the case. @copy=NAME copies $F/NAME into $S
# first (a checkpoint directory the tool may write into). FRAGMENT
# and ARGS may use
#   $S     the case's scratch directory, the tool's working directory, made
#          afresh for each case with: existing (a regular file, "old"),
#          file (a regular file, "plain"), dir/ (empty), fifo (a FIFO),
#          link-null (-> /dev/null), link-dir (-> dir), secret (a good
#          cluster secret, mode 600), ro/ (empty; see @ro)
#   $F     the fixtures (fixtures.sh): tiny IDX data sets, checkpoints and
#          checkpoint directories, good and damaged, secret files, a socket
#   $DATA  the Fashion-MNIST directory; $TOOL the tool; $LONG 3000 x's
#   $CLUSTER  --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2
#   $RUN   rf-trainer flags of a one-step softmax run on batches of 5
#   $TINY  $RUN on the tiny data set (--data_dir=$F/tiny)
#
# For each case the tool runs in $S with stdin from /dev/null, TF_CONFIG
# and RF_CLUSTER_SECRET_FILE unset (unless the case sets them), RF_FABRIC
# sock unless set, under timeout (30 s x RF_TEST_TIME_SCALE). The checks:
# the exit status is STATUS (so neither 0, nor a signal, nor a hang), no
# sanitizer report (ASan, LSan, UBSan, TSan) on stderr or stdout, the
# message has FRAGMENT, nothing was created, removed or changed in $S or
# $F (every entry's type, mode and size, every regular file's checksum in
# $S and modification time in $F: so no partial or stale .NAME.tmp.* file
# either, and no pre-existing output touched), no control byte (but the
# newline) in its output: every name is printed escaped, and no process is left
# running in $S (a task of rf-launch, the target of rf-fabric-demo). One
# ok:/FAIL: line per case, then a summary; exits 1 on any failure, when
# fewer than 60 cases ran, or when two cases are the same invocation.
# (the variables the cases use, and want, are read and set through eval)
# shellcheck disable=SC2034,SC2154
set -uo pipefail
tool=${1:?tool}
cases=${2:?cases file}
shift 2
for kv in "$@"; do
    [[ $kv == [A-Z_]*=* ]] || {
        echo "run_cases.sh: '$kv' is not NAME=PATH"
        exit 2
    }
    export "${kv%%=*}=${kv#*=}"
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../common/lib.sh"
case_name="badinput.$(basename "$cases" .cases)"
host=127.0.0.1
TOOL=$tool
DATA=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
LONG=$(printf 'x%.0s' $(seq 3000))
export RF_FABRIC=${RF_FABRIC:-sock}
CLUSTER="--ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2"
RUN="--model=softmax --train_steps=1 --batch_size=5 --eval_batch_size=5 --log_every=0"
min_cases=60
per_case_timeout=$(t 30)

root=$(mktemp -d)
cleanup() {
    local p
    # whatever a case left running in its scratch directory (the pids
    # were found by cwd; only this run's cases use $root)
    for p in /proc/[0-9]*; do
        [[ $p/cwd -ef $root || $(readlink "$p/cwd" 2>/dev/null) == "$root"/* ]] &&
            kill -9 "${p#/proc/}" 2>/dev/null
    done
    rm -rf "$root"
}
trap cleanup EXIT
F=$root/fixtures
if ! bash "$here/fixtures.sh" "$F" "${RF_TRAINER:-}" >"$root/fixtures.log" 2>&1; then
    echo "FAIL: the fixtures could not be made:"
    show "$root/fixtures.log" 30
    exit 1
fi
TINY="$RUN --data_dir=$F/tiny"
have_data=0
[[ -r $DATA/train-images-idx3-ubyte.gz && -r $DATA/t10k-labels-idx1-ubyte.gz ]] &&
    have_data=1

# The scratch directory every case starts from.
tmpl=$root/template
mkdir "$tmpl" "$tmpl/dir"
echo old >"$tmpl/existing"
echo plain >"$tmpl/file"
mkfifo "$tmpl/fifo"
ln -s /dev/null "$tmpl/link-null"
ln -s dir "$tmpl/link-dir"
cp "$F/secret.good" "$tmpl/secret" && chmod 600 "$tmpl/secret"
mkdir "$tmpl/ro"
ro_mount='mount -t tmpfs -o ro,size=16k rf-badinput-ro "$1" && shift && exec "$@"'
have_ro=0
unshare -m bash -c "$ro_mount" _ "$tmpl/ro" touch "$tmpl/ro/x" 2>"$root/ro.err"
if [[ ! -e $tmpl/ro/x ]] && grep -q "Read-only file system" "$root/ro.err"; then
    have_ro=1
else
    echo "NOTE: cannot make a read-only tmpfs here ($(head -c 200 "$root/ro.err")):" \
        "the @ro cases (an unwritable directory, as root) are not run"
    rm -f "$tmpl/ro/x"
fi
not_run=0
have_verbs=0
[[ -n $(ls -A /sys/class/infiniband 2>/dev/null) ]] && have_verbs=1

# snapshot: every entry of $S and $F (type, path, mode, size, link
# target; the modification time of $F's files) and the checksum of every
# regular file of $S.
snapshot() {
    find "$S" "$F" \( -type d -printf '%y %p %m\n' \) -o \
        \( -path "$F/*" -printf '%y %p %m %s %T@ %l\n' \) -o \
        -printf '%y %p %m %s %l\n'
    find "$S" -type f -exec md5sum {} +
}

# leftovers DIR: pids of processes whose working directory is DIR.
leftovers() {
    local p out=""
    for p in /proc/[0-9]*; do
        [[ $p/cwd -ef $1 ]] && out+=" ${p#/proc/}"
    done
    echo "$out"
}

# a sanitizer's report in the text $1 (ASan, LSan, UBSan, TSan)
sanitizer_re=$'(^|\n)(==[0-9]+==ERROR: |SUMMARY: [A-Za-z]+Sanitizer|WARNING: ThreadSanitizer)|[^ ]+:[0-9]+:[0-9]+: runtime error: '
sanitizer_report() { [[ $1 =~ $sanitizer_re ]]; }

# first_line TEXT WANT: the first line of TEXT holding WANT
first_line() {
    local l
    while IFS= read -r l; do
        [[ $l == *"$2"* ]] && printf '%s' "$l" && return 0
    done <<<"$1"
    return 1
}

n=0
passed=0
declare -A seen
lineno=0
while IFS= read -r line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    if [[ $line != *" | "*" | "* ]]; then
        fail "$cases:$lineno: not 'STATUS | FRAGMENT | ARGS': $line"
        continue
    fi
    want_rc=${line%% | *}
    rest=${line#* | }
    frag=${rest%% | *}
    words=${rest#* | }
    n=$((n + 1))
    where="$(basename "$cases"):$lineno"
    if [[ -n ${seen["w $words"]:-} ]]; then
        fail "$where: the same invocation as line ${seen["w $words"]}: $words"
        continue
    fi
    seen["w $words"]=$lineno
    S=$root/case
    rm -rf "$S"
    cp -a "$tmpl" "$S"
    # a ps for this case: its ports are needed before the words expand
    PSC=""
    ps_pid=""
    if [[ $words == *@ps* ]]; then
        if ! free_port ps_port || ! free_port w_port; then
            fail "$where: no free loopback port for @ps"
            continue
        fi
        PSC="--ps_hosts=$host:$ps_port --worker_hosts=$host:$w_port"
    fi
    # the words, with $S, $F, ... expanded (the case files are ours)
    args=()
    if ! eval "args=($words)" 2>"$root/eval.err" ||
        ! eval "want=\"$frag\"" 2>>"$root/eval.err"; then
        fail "$where: cannot parse: $(cat "$root/eval.err")"
        continue
    fi
    envs=()
    need_data=0
    wrap=()
    skip=""
    while ((${#args[@]})); do
        if [[ ${args[0]} =~ ^[A-Z_][A-Z0-9_]*= ]]; then
            envs+=("${args[0]}")
        elif [[ ${args[0]} == @data ]]; then
            need_data=1
        elif [[ ${args[0]} == @ro ]]; then
            wrap=(unshare -m bash -c "$ro_mount" _ "$S/ro")
            ((have_ro)) || skip="no read-only tmpfs"
        elif [[ ${args[0]} == @noverbs ]]; then
            ((have_verbs)) && skip="this host has an RDMA device"
        elif [[ ${args[0]} == @ps ]]; then
            :
        elif [[ ${args[0]} == @copy=* ]]; then
            cp -a "$F/${args[0]#@copy=}" "$S/"
        else
            break
        fi
        args=("${args[@]:1}")
    done
    show_args="${envs[*]}${envs:+ }${args[*]}"
    ((${#show_args} > 200)) && show_args="${show_args:0:200}..."
    if ((need_data && !have_data)); then
        fail "$where: needs Fashion-MNIST in $DATA (install the dataset-fashion-mnist package): $show_args"
        continue
    fi
    if [[ -n $skip ]]; then
        echo "not run: $where: $show_args ($skip)"
        n=$((n - 1))
        not_run=$((not_run + 1))
        continue
    fi
    if [[ -n $PSC ]]; then
        mkdir -p "$root/ps"
        (cd "$root/ps" && exec "$RF_TRAINER" $PSC --job_name=ps \
            --task_index=0) </dev/null >"$root/ps.log" 2>&1 &
        ps_pid=$!
    fi
    before=$(snapshot)
    t0=$EPOCHREALTIME
    (cd "$S" && exec "${wrap[@]}" env -u TF_CONFIG -u RF_CLUSTER_SECRET_FILE \
        "${envs[@]}" timeout --preserve-status -k 5 "$per_case_timeout" "$tool" \
        "${args[@]}") \
        </dev/null >"$root/out" 2>"$root/err"
    rc=$?
    ms=$(((${EPOCHREALTIME/./} - ${t0/./}) / 1000))
    problems=()
    if ((rc >= 128 && ms >= per_case_timeout * 1000)); then
        problems+=("hung: stopped after ${per_case_timeout} s (exit $rc)")
    elif ((rc >= 128)); then
        problems+=("killed by signal $((rc - 128))")
    elif [[ $rc != "$want_rc" ]]; then
        problems+=("exit status $rc, want $want_rc")
    fi
    err_text=$(<"$root/err")
    out_text=$(<"$root/out")
    sanitizer_report "$err_text" || sanitizer_report "$out_text" &&
        problems+=("a sanitizer report")
    # a name from a file or an argument is printed escaped (issue 25):
    # no control byte but newline, no DEL, no C1 control in any output
    if LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' \
        "$root/out" "$root/err"; then
        problems+=("a control byte in its output (a name printed raw?)")
    fi
    if [[ $err_text != *"$want"* && $out_text != *"$want"* ]]; then
        problems+=("no '${want:0:200}' in its output")
    fi
    left=$(leftovers "$S")
    if [[ -n $left ]]; then
        problems+=("processes left running:$left")
        kill -9 $left 2>/dev/null
    fi
    after=$(snapshot)
    if [[ -n $ps_pid ]]; then
        kill "$ps_pid" 2>/dev/null
        wait "$ps_pid" 2>/dev/null
    fi
    if [[ $before != "$after" ]]; then
        problems+=("files changed: $(diff <(echo "$before") <(echo "$after") |
            grep '^[<>]' | head -5 | tr '\n' ';')")
    fi
    if ((${#problems[@]} == 0)); then
        passed=$((passed + 1))
        msg=$(first_line "$err_text" "$want" || first_line "$out_text" "$want")
        ok "$where: $show_args -> $rc ($ms ms): ${msg:0:240}"
    else
        fail "$where: $show_args: $(
            IFS=';'
            echo "${problems[*]}"
        )"
        show "$root/err" 6
        show "$root/out" 4
    fi
done <"$cases"
rm -rf "$root/case"

echo "$case_name: $passed of $n cases passed ($(basename "$tool"))$(
    ((not_run)) && echo "; $not_run not run (see 'not run:' above)")"
if ((n < min_cases)); then
    fail "only $n cases in $cases, want at least $min_cases"
fi
# Cases that do not apply here make the whole test a skip (exit 77), never
# part of a pass: ctest reports it and tests/run-all counts it.
if ((failures == 0 && not_run > 0)); then
    echo "$case_name: skipped: $not_run case(s) not run here"
    exit 77
fi
rft_finish
