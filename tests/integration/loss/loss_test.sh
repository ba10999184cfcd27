#!/usr/bin/env bash
# tests/integration/loss/loss_test.sh RF_TRAINER RF_LAUNCH: a sock job
# under packet loss (issue 26). Runs itself again in a private network
# namespace (unshare -rn: a user namespace, no other privilege) whose
# loopback looks like an Ethernet link (MTU 1500, one segment per packet)
# and drops packets with an nftables input rule (numgen random), as
# bench/sock-loss does. Jobs: rf-launch --ps 1 --workers 1, rf-trainer mlp,
# 20 steps, 1 thread, RF_FABRIC=sock; while each runs, `ss -tin` is sampled
# for the retransmission timeout (rto) of its connections. Checks:
#   no loss, RF_SOCK_RTO_MIN_US unset: exits 0, an accuracy; some sampled
#       rto is below 200 ms, the kernel's own floor (the default floor is
#       10 ms; the rto itself is the smoothed round trip plus the larger of
#       the floor and the round trip's variation, which a loaded host can
#       raise to 100 ms and more for a while);
#   5 % loss: the rule dropped 2-8 % of the packets it saw; the job exits 0
#       with the same test accuracy (one worker: the same updates in the
#       same order), some rto below 200 ms;
#   no loss, RF_SOCK_RTO_MIN_US=0: every rto at least 200 ms (the setting
#       is what lowers it);
#   no loss, RF_SOCK_RTO_MIN_US=1000 (under two ticks at any HZ, which the
#       kernel refuses): the job exits 0, warns naming the setting, and
#       every rto is at least 200 ms;
#   RF_SOCK_RTO_MIN_US=300000: the ps refuses it, exit 2, naming it.
# Needs nft (Debian package nftables, tools/rf-setup deps), unshare and ss
# and the dataset-fashion-mnist package; fails (never skips) without them,
# or on a kernel without TCP_RTO_MIN_US (Linux < 6.15). Prints every check
# (ok: / FAIL:). About 25 s here.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../../common/lib.sh
source "$here/../../common/lib.sh"
# shellcheck disable=SC2034 # lib.sh's rft_finish reads it
case_name=loss.sock
trainer=${1:?usage: loss_test.sh RF_TRAINER RF_LAUNCH}
launch=${2:?usage: loss_test.sh RF_TRAINER RF_LAUNCH}
data=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

for tool in nft unshare ss; do
    if ! command -v "$tool" >/dev/null; then
        echo "FAIL: $tool is not installed (tools/rf-setup deps: nftables, util-linux, iproute2)"
        exit 1
    fi
done
if [[ ! -r $data/train-images-idx3-ubyte.gz ]]; then
    echo "FAIL: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
    exit 1
fi
if [[ ${RF_LOSS_TEST_NETNS:-} != 1 ]]; then
    RF_LOSS_TEST_NETNS=1 exec unshare -rn bash "${BASH_SOURCE[0]}" "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ip link set lo up
ip link set lo mtu 1500 gso_max_segs 1 gso_max_size 1500 || {
    echo "FAIL: cannot shape the namespace's loopback"
    exit 1
}
if ! nft add table inet rfloss ||
    ! nft add chain inet rfloss in '{ type filter hook input priority 0; }'; then
    echo "FAIL: nft cannot add an input chain (nf_tables in the kernel?)"
    exit 1
fi

# set_loss P: count every packet at input, drop P % of them.
set_loss() {
    nft flush chain inet rfloss in
    nft add rule inet rfloss in iifname lo counter
    if (($1 > 0)); then
        nft add rule inet rfloss in iifname lo numgen random mod 100 '<' "$1" counter drop
    fi
}
# dropped_permille: dropped / seen since set_loss, in 1/1000.
dropped_permille() {
    nft list chain inet rfloss in | awk '/counter packets/ {
        for (i = 1; i < NF; i++) if ($i == "packets") n[++k] = $(i + 1) }
      END { print (k > 1 && n[1] > 0) ? int(1000 * n[2] / n[1]) : 0 }'
}

# job NAME [ENV...]: the 20-step job with ENV, output in $tmp/NAME.out,
# the rto (ms) of every established connection every 0.2 s in
# $tmp/NAME.rto; returns the job's exit status.
job() {
    local name=$1
    shift
    env RF_FABRIC=sock OPENBLAS_NUM_THREADS=1 "$@" timeout "$(t 120)" \
        "$launch" --ps 1 --workers 1 -- "$trainer" --threads=1 \
        --train_steps=20 --log_every=20 --data_dir="$data" \
        >"$tmp/$name.out" 2>&1 &
    local pid=$!
    : >"$tmp/$name.rto"
    while kill -0 "$pid" 2>/dev/null; do
        ss -tinH state established | grep -o 'rto:[0-9.]*' |
            cut -d: -f2 >>"$tmp/$name.rto"
        sleep 0.2
    done
    wait "$pid"
}
acc_of() { sed -n 's/.*test accuracy: \([0-9.]*\) .*/\1/p' "$1" | tail -n 1; }
# rto_all NAME: at least one sample, every one >= 200 ms; rto_some NAME:
# at least one below 200 ms.
rto_all() { awk '$1 < 200 { bad++ } END { exit !(NR > 0 && bad == 0) }' "$tmp/$1.rto"; }
rto_some() { awk '$1 < 200 { n++ } END { exit !(n > 0) }' "$tmp/$1.rto"; }
# samples NAME: the rto samples, "COUNT MS" pairs.
samples() { sort -n "$tmp/$1.rto" | uniq -c | tr -s ' \n' ' '; }

set_loss 0
if job plain; then ok "no loss: the job exits 0"; else fail "no loss: the job failed"; show "$tmp/plain.out"; fi
acc0=$(acc_of "$tmp/plain.out")
if [[ -n $acc0 ]]; then ok "no loss: test accuracy $acc0"; else fail "no loss: no test accuracy"; fi
if rto_some plain; then
    ok "no loss: rto below 200 ms (count ms:$(samples plain))"
else
    fail "no loss: no rto sample below 200 ms (count ms:$(samples plain))"
fi

set_loss 5
if job lossy; then ok "5 % loss: the job exits 0"; else fail "5 % loss: the job failed"; show "$tmp/lossy.out"; fi
pm=$(dropped_permille)
if ((pm >= 20 && pm <= 80)); then
    ok "5 % loss: the rule dropped $pm/1000 of the packets"
else
    fail "5 % loss: the rule dropped $pm/1000 of the packets, not 20-80"
fi
acc5=$(acc_of "$tmp/lossy.out")
if [[ -n $acc0 && $acc5 == "$acc0" ]]; then
    ok "5 % loss: the same test accuracy ($acc5)"
else
    fail "5 % loss: test accuracy '$acc5', without loss '$acc0'"
fi
if rto_some lossy; then
    ok "5 % loss: rto below 200 ms (count ms:$(samples lossy))"
else
    fail "5 % loss: no rto sample below 200 ms (count ms:$(samples lossy))"
fi

set_loss 0
if job kernel RF_SOCK_RTO_MIN_US=0; then ok "RF_SOCK_RTO_MIN_US=0: the job exits 0"; else
    fail "RF_SOCK_RTO_MIN_US=0: the job failed"
    show "$tmp/kernel.out"
fi
if rto_all kernel; then
    ok "RF_SOCK_RTO_MIN_US=0: every rto >= 200 ms, the kernel's floor (count ms:$(samples kernel))"
else
    fail "RF_SOCK_RTO_MIN_US=0: rto samples not all >= 200 ms, or none (count ms:$(samples kernel))"
fi

if job tiny RF_SOCK_RTO_MIN_US=1000; then ok "RF_SOCK_RTO_MIN_US=1000: the job exits 0"; else
    fail "RF_SOCK_RTO_MIN_US=1000: the job failed"
    show "$tmp/tiny.out"
fi
if grep -q 'RF_SOCK_RTO_MIN_US=1000: TCP_RTO_MIN_US refused' "$tmp/tiny.out"; then
    ok "RF_SOCK_RTO_MIN_US=1000: warned"
else
    fail "RF_SOCK_RTO_MIN_US=1000: no warning naming it"
    show "$tmp/tiny.out"
fi
if rto_all tiny; then
    ok "RF_SOCK_RTO_MIN_US=1000: every rto >= 200 ms (count ms:$(samples tiny))"
else
    fail "RF_SOCK_RTO_MIN_US=1000: rto samples not all >= 200 ms, or none (count ms:$(samples tiny))"
fi

RF_FABRIC=sock RF_SOCK_RTO_MIN_US=300000 timeout "$(t 30)" "$trainer" \
    --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223 --job_name=ps \
    --task_index=0 >"$tmp/bad.out" 2>&1
rc=$?
if ((rc == 2)) && grep -q 'RF_SOCK_RTO_MIN_US: 300000 is out of range' "$tmp/bad.out"; then
    ok "RF_SOCK_RTO_MIN_US=300000: refused, exit 2, named"
else
    fail "RF_SOCK_RTO_MIN_US=300000: exit $rc"
    show "$tmp/bad.out"
fi
rft_finish
