#!/usr/bin/env bash
# tests/integration/trainer_dist/fmnist_subset.sh SRC DST NTRAIN NTEST:
# writes the first NTRAIN training and NTEST test examples of the
# Fashion-MNIST IDX files in SRC as a valid, smaller dataset in DST (same
# four file names, gzip'd, IDX headers with the new counts). The rxe guest
# (TCG) takes over a minute to load the full set in every trainer process;
# rxe.trainer_dist points the trainer at this subset instead. Does nothing
# (exit 0) if SRC lacks the dataset: the tests then skip.
# no pipefail: gzip -dc | head stops gzip early (SIGPIPE) on purpose; the
# sizes are checked at the end instead.
set -eu
src=${1:?SRC} dst=${2:?DST} ntrain=${3:?NTRAIN} ntest=${4:?NTEST}
[[ -r $src/train-images-idx3-ubyte.gz ]] || exit 0
mkdir -p "$dst"

# be32 N: N as 4 big-endian bytes
be32() {
    printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 >> 24 & 255)) \
        $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"
}

# subset NAME COUNT HEADER_BYTES BYTES_PER_EXAMPLE
subset() {
    local name=$1 n=$2 hdr=$3 per=$4
    local have
    have=$(gzip -dc "$src/$name.gz" | head -c 8 | tail -c 4 | od -An -tu1 |
        awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
    if ((n > have)); then
        echo "fmnist_subset: $name has $have examples, fewer than $n" >&2
        exit 1
    fi
    {
        gzip -dc "$src/$name.gz" | head -c 4
        be32 "$n"
        # the rest of the header (rows, cols for images), then the examples
        gzip -dc "$src/$name.gz" | tail -c +9 | head -c $((hdr - 8 + n * per))
    } | gzip -1 >"$dst/$name.gz.tmp"
    local size
    size=$(gzip -dc "$dst/$name.gz.tmp" | wc -c)
    if ((size != hdr + n * per)); then
        echo "fmnist_subset: $name: wrote $size bytes, want $((hdr + n * per))" >&2
        exit 1
    fi
    mv "$dst/$name.gz.tmp" "$dst/$name.gz"
}

subset train-images-idx3-ubyte "$ntrain" 16 784
subset train-labels-idx1-ubyte "$ntrain" 8 1
subset t10k-images-idx3-ubyte "$ntest" 16 784
subset t10k-labels-idx1-ubyte "$ntest" 8 1
