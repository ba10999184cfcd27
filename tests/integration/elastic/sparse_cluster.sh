# tests/integration/elastic/sparse_cluster.sh: sourced by the elastic
# tests (elastic_test.sh, ledger_test.sh, ledger_restore_test.sh) after
# they set case_name and before their flags: the common setup (the
# trainer from $1, the dataset, the fabric, the test libraries, $tmp kept
# with RF_ELASTIC_KEEP), six free
# ports (ps 0, ps 1, workers 0-3) and the TF_CONFIG sparseClusters that
# Kubeflow's training-operator writes with enableDynamicWorker (a ps knows
# only itself, a worker the ps tasks and itself); start NAME TF_CONFIG
# [FLAGS...] runs rf-trainer with the test's $flags, its lines stamped into
# $(out NAME), pid[NAME] its pid; check MSG CMD... and time_left T0 SECS
# serve the checks.
# shellcheck shell=bash disable=SC2034,SC2154 # the caller sets flags and
# uses the rest
trainer=${1:?path to rf-trainer}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
export RF_FABRIC=${RF_FABRIC:-sock}
host=${RF_TEST_HOST:-127.0.0.1}
unset TF_CONFIG
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../common/job.sh"
tmp=$(mktemp -d)
keep=${RF_ELASTIC_KEEP:-}
trap cleanup EXIT
need_data

ports=()
for _ in 0 1 2 3 4 5; do
    free_port port || { fail "no free port"; rft_finish; }
    ports+=("$port")
done
ps_list="[\"$host:${ports[0]}\",\"$host:${ports[1]}\"]"
ps_conf() { # INDEX
    echo "{\"sparseCluster\":{\"ps\":[\"$host:${ports[$1]}\"],\"worker\":{}},\"task\":{\"type\":\"ps\",\"index\":$1}}"
}
worker_conf() { # INDEX
    echo "{\"sparseCluster\":{\"ps\":$ps_list,\"worker\":{\"$1\":\"$host:${ports[$(($1 + 2))]}\"}},\"task\":{\"type\":\"worker\",\"index\":$1}}"
}

declare -A pid
start() {
    local name=$1 conf=$2
    shift 2
    stamp_into "$tmp/$name.out"
    TF_CONFIG=$conf "$trainer" "${flags[@]}" "$@" >"$tmp/$name.out.fifo" 2>&1 &
    pid[$name]=$!
    started+=("$!")
}
out() { echo "$tmp/$1.out"; }
# check MSG CMD...: ok MSG if CMD succeeds, else fail MSG
check() {
    local msg=$1
    shift
    if "$@"; then ok "$msg"; else fail "$msg"; fi
}
# time_left T0 SECS: whole seconds left of SECS since T0 (at least 1)
time_left() {
    awk -v a="$1" -v b="$(now)" -v s="$2" 'BEGIN { l = s - (b - a); print (l > 1 ? int(l) : 1) }'
}
