#!/usr/bin/env bash
# tests/badinput/fixtures.sh DIR RF_TRAINER: makes the input files the
# bad-input cases refer to as $F (run_cases.sh calls it once per run). No
# binary is checked in: the data sets are written by python3 (a tiny but
# valid Fashion-MNIST-shaped IDX set, then damaged copies), the valid
# checkpoint by training rf-trainer two steps on that tiny set
# (--variables_out), and every damaged checkpoint from that one. With the
# Fashion-MNIST dataset installed, data-* directories also hold damaged
# copies of its real files (the other files are symbolic links to it).
# RF_CKPT (rf-ckpt) checks the valid checkpoints, RF_EVENTS (rf-events) the
# valid event file. Fails (exit 1) if anything cannot be made or the valid files are not
# accepted as such.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F=${1:?fixture directory}
trainer=${2:?path to rf-trainer}
DATA=${RF_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$F"
cd "$F"

# ---- IDX data: tiny/ is valid (20 training, 10 test examples) ----------
python3 - <<'PY'
import gzip, os, struct

def images(n, rows=28, cols=28, magic=0x803):
    return struct.pack(">IIII", magic, n, rows, cols) + bytes(
        (i * 7 + j) % 256 for i in range(n) for j in range(rows * cols))

def labels(n, magic=0x801, top=10):
    return struct.pack(">II", magic, n) + bytes(i % top for i in range(n))

def gz(b):
    return gzip.compress(b, mtime=0)

NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

def good():
    return {NAMES[0]: images(20), NAMES[1]: labels(20),
            NAMES[2]: images(10), NAMES[3]: labels(10)}

# plain: the IDX bytes uncompressed (the loader takes gzip or plain
# content; the Fashion-MNIST names always end in .gz)
def write_set(d, files, plain=False):
    os.makedirs(d, exist_ok=True)
    for name, b in files.items():
        open(os.path.join(d, name + ".gz"), "wb").write(b if plain else gz(b))

write_set("tiny", good())
write_set("tiny-plain", good(), plain=True)  # uncompressed IDX files

def variant(d, name, data=None, raw=None, plain=False):
    files = good()
    write_set(d, {k: v for k, v in files.items() if k != name}, plain)
    path = os.path.join(d, name + ".gz")
    if raw is not None:
        open(path, "wb").write(raw)
    else:
        open(path, "wb").write(data if plain else gz(data))

tl = NAMES[1]
ti = NAMES[0]
g = good()
variant("idx-magic", ti, images(20, magic=0x804))
variant("idx-labels-magic", tl, labels(20, magic=0x803))
variant("idx-short-header", ti, g[ti][:10])
variant("idx-truncated", ti, g[ti][:16 + 784 * 3 + 5])
variant("idx-trailing", ti, g[ti] + b"extra")
variant("idx-count", tl, labels(19))                 # 20 images, 19 labels
variant("idx-rows", ti, images(20, rows=27, cols=29))
variant("idx-label-range", tl, labels(20, top=11))   # a label 10
variant("idx-empty", ti, raw=b"")
variant("idx-empty-gz", ti, b"")                     # a gzip of nothing
variant("idx-zero-count", ti, images(0))
# a header claiming 47 GB of images (60 million) over 1000 bytes, and one
# whose dimension sizes overflow 64 bits: refused, nothing allocated first
variant("idx-huge-count", ti, struct.pack(">IIII", 0x803, 60000000, 28, 28)
        + bytes(1000))
variant("idx-overflow", ti, struct.pack(">IIII", 0x803, 0xFFFFFFFF, 0x10000,
                                        0x10000))
variant("gz-truncated", ti, raw=gz(g[ti])[:200])
variant("gz-trailing", tl, raw=gz(g[tl]) + b"junk")
b = bytearray(gz(g[tl])); b[-8] ^= 0xFF
variant("gz-crc", tl, raw=bytes(b))
variant("gz-garbage", ti, raw=b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
variant("gz-not-idx", ti, raw=gz(b"not an IDX file\n"))
variant("plain-truncated", ti, g[ti][:1000], plain=True)
variant("plain-magic", tl, b"\x00\x00\x08\x02" + g[tl][4:], plain=True)
PY
# a data directory whose train images are a FIFO or a directory; one with
# the training images missing
for d in fifo-images dir-images missing-images; do
    mkdir "$d"
    cp tiny/train-labels-idx1-ubyte.gz tiny/t10k-* "$d"/
done
mkfifo fifo-images/train-images-idx3-ubyte.gz
mkdir dir-images/train-images-idx3-ubyte.gz
# what the real dataset gives, damaged (the cases marked @data)
if [[ -r $DATA/train-images-idx3-ubyte.gz ]]; then
    for d in data-truncated data-crc data-trailing; do
        mkdir "$d"
        for f in "$DATA"/*-ubyte.gz; do ln -s "$f" "$d/"; done
    done
    rm data-truncated/train-images-idx3-ubyte.gz
    head -c 300000 "$DATA/train-images-idx3-ubyte.gz" \
        >data-truncated/train-images-idx3-ubyte.gz
    rm data-crc/train-labels-idx1-ubyte.gz data-trailing/train-labels-idx1-ubyte.gz
    cp "$DATA/train-labels-idx1-ubyte.gz" data-crc/
    cp "$DATA/train-labels-idx1-ubyte.gz" data-trailing/
    printf 'junk' >>data-trailing/train-labels-idx1-ubyte.gz
    python3 - data-crc/train-labels-idx1-ubyte.gz <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-8] ^= 0xFF  # the trailer's CRC32
open(sys.argv[1], "wb").write(b)
PY
fi

# ---- checkpoints: good.st is rf-trainer's own -------------------------
"$trainer" --data_dir=tiny --model=softmax --optimizer=sgd --train_steps=2 \
    --batch_size=5 --eval_batch_size=5 --log_every=0 --variables_out=good.st \
    >trainer.log 2>&1 || {
    echo "rf-trainer could not write the valid checkpoint:"
    cat trainer.log
    exit 1
}
"$trainer" --data_dir=tiny --model=mlp:4 --optimizer=sgd --train_steps=1 \
    --batch_size=5 --eval_batch_size=5 --log_every=0 --variables_out=other.st \
    >>trainer.log 2>&1
python3 - <<'PY'
import json, struct
good = open("good.st", "rb").read()
n = struct.unpack("<Q", good[:8])[0]
header, data = good[8:8 + n], good[8 + n:]

def w(name, b):
    open(name, "wb").write(b)

def plain(tensors, meta=None, pad=True, raw_header=None):
    """A safetensors file without CRCs (tensors: name -> (dtype, shape,
    bytes)); such files open (rf-ckpt list, verify --allow-unchecked), so
    each check below is its own."""
    h, off, blob = {}, 0, b""
    for k in sorted(tensors):
        dt, shape, b = tensors[k]
        h[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        blob += b
    if meta is not None:
        h["__metadata__"] = meta
    j = raw_header if raw_header is not None else json.dumps(h).encode()
    if pad:
        j += b" " * (-len(j) % 8)
    return struct.pack("<Q", len(j)) + j + blob

f4 = struct.pack("<2f", 1.0, 2.0)
w("plain-ok.st", plain({"a": ("F32", [2], f4)}))
w("ck-empty.st", b"")
w("ck-short.st", good[:5])
w("ck-header-only.st", good[:8])
w("ck-truncated-header.st", good[:8 + n // 2])
w("ck-truncated-data.st", good[:-100])
w("ck-trailing.st", good + b"\0" * 8)
w("ck-huge-header.st", struct.pack("<Q", 1 << 40) + good[8:])
w("ck-header-past-end.st", struct.pack("<Q", len(good)) + good[8:])
w("ck-zero-header.st", struct.pack("<Q", 0) + good[8:])
w("ck-wrong-magic.st", b"PK\x03\x04" + good[4:])  # a zip's magic
w("ck-gzip.st", b"\x1f\x8b\x08\x00" + good[4:])
w("ck-text.st", b"model_checkpoint_path: \"x\"\n")
b = bytearray(good); b[-1] ^= 0x01
w("ck-data-bit.st", bytes(b))            # data CRC32C mismatch
b = bytearray(good); b[8 + n - 20] ^= 0x01
w("ck-header-bit.st", bytes(b))          # inside the header's JSON
w("ck-json.st", plain({}, raw_header=b"{\"a\": [1, 2"))
w("ck-json-array.st", plain({}, raw_header=b"[1, 2, 3]"))
w("ck-dtype.st", plain({"a": ("F16", [2], f4[:4])}))
w("ck-shape.st", plain({"a": ("F32", [3], f4)}))
w("ck-negative-shape.st", plain({"a": ("F32", [-2], f4)}))
w("ck-offsets.st", plain({"a": ("F32", [2], f4)}, pad=True,
    raw_header=b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,0]}}'))
w("ck-gap.st", plain({}, raw_header=b'{"a":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[4,8]}}') + f4)
w("ck-overlap.st", plain({}, raw_header=b'{"a":{"dtype":"F32","shape":[2],'
    b'"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[4,8]}}') + f4)
w("ck-no-dtype.st", plain({}, raw_header=b'{"a":{"shape":[2],'
    b'"data_offsets":[0,8]}}') + f4)
w("ck-meta-type.st", plain({"a": ("F32", [2], f4)}, meta={"k": 5}))
w("ck-bad-crc-text.st", plain({"a": ("F32", [2], f4)},
    meta={"crc32c/a": "nothex!!"}))
w("ck-empty-name.st", plain({"": ("F32", [2], f4)}))
w("ck-shape-overflow.st", plain({"a": ("F32", [1 << 32, 1 << 32], f4)}))
w("ck-rank.st", plain({"a": ("F32", [1] * 20 + [2], f4)}))
w("ck-unknown-field.st", plain({}, raw_header=b'{"a":{"dtype":"F32",'
    b'"shape":[2],"data_offsets":[0,8],"extra":1}}') + f4)
w("ck-dup-name.st", plain({}, raw_header=b'{"a":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[4,8]}}') + f4)
# issue 25: a tensor name that would clear the terminal (F16: refused, so
# the message quoting it is checked); ambiguities json-c lets through
evil = "\x1b[2J\x1b[31mEVIL\n"
w("ck-evil-name.st", plain({evil: ("F16", [2], f4[:4])}))
w("ck-evil-ok.st", plain({evil: ("F32", [2], f4)}))
w("ck-dup-meta.st", plain({}, raw_header=b'{"__metadata__":{"k":"1",'
    b'"k":"2"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}') + f4)
w("ck-dup-escaped.st", plain({}, raw_header=b'{"ab":{"dtype":"F32","shape":'
    b'[1],"data_offsets":[0,4]},"a\\u0062":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[4,8]}}') + f4)
w("ck-nul-name.st", plain({}, raw_header=b'{"a\\u0000b":{"dtype":"F32",'
    b'"shape":[2],"data_offsets":[0,8]}}') + f4)
w("ck-surrogate.st", plain({}, raw_header=b'{"a\\ud800":{"dtype":"F32",'
    b'"shape":[2],"data_offsets":[0,8]}}') + f4)
w("ck-not-utf8.st", plain({}, raw_header=b'{"a\xff":{"dtype":"F32",'
    b'"shape":[2],"data_offsets":[0,8]}}') + f4)
w("ck-big-offset.st", plain({}, raw_header=b'{"a":{"dtype":"F32","shape":'
    b'[2],"data_offsets":[0,18446744073709551624]}}') + f4)
w("ck-comment.st", plain({}, raw_header=b'{/*x*/"a":{"dtype":"F32","shape":'
    b'[2],"data_offsets":[0,8]}}') + f4)
PY
# good.st with CRC32Cs taken out (rf-ckpt verify is strict: each fails
# unless --allow-unchecked): none at all, no tensor's, one tensor's, not
# the header's (tests/unit/checkpoint/strip_crcs.py; the header rebuilt
# as the library writes it, the data untouched)
strip=$here/../unit/checkpoint/strip_crcs.py
python3 "$strip" good.st good-same.st same
rm good-same.st
python3 "$strip" good.st ck-no-crc.st all
python3 "$strip" good.st ck-no-tensor-crc.st tensors
python3 "$strip" good.st ck-one-crc-missing.st one logits/kernel
python3 "$strip" good.st ck-no-header-crc.st header
mkdir unchecked-dir
cp ck-no-crc.st unchecked-dir/model.ckpt-2.safetensors
printf '%s\n' 'model_checkpoint_path: "model.ckpt-2.safetensors"' \
    'all_model_checkpoint_paths: "model.ckpt-2.safetensors"' \
    >unchecked-dir/checkpoint
# directories: ckdir/ is valid (the state file and one checkpoint)
mkdir ckdir
cp good.st ckdir/model.ckpt-2.safetensors
printf '%s\n' 'model_checkpoint_path: "model.ckpt-2.safetensors"' \
    'all_model_checkpoint_paths: "model.ckpt-2.safetensors"' >ckdir/checkpoint
# state files that are malformed
mkstate() { # NAME TEXT: a directory with the good checkpoint and TEXT as state
    mkdir "$1"
    cp good.st "$1/model.ckpt-2.safetensors"
    printf '%b' "$2" >"$1/checkpoint"
}
mkstate state-empty ''
mkstate state-garbage 'this is not a checkpoint state\n'
mkstate state-unquoted 'model_checkpoint_path: model.ckpt-2.safetensors\n'
mkstate state-unterminated 'model_checkpoint_path: "model.ckpt-2.safetensors\n'
mkstate state-unknown-key 'newest: "model.ckpt-2.safetensors"\n'
mkstate state-binary '\x00\x01\x02\xff\xfe\n'
mkstate state-missing-file 'model_checkpoint_path: "model.ckpt-9.safetensors"\nall_model_checkpoint_paths: "model.ckpt-9.safetensors"\n'
mkstate state-escape 'model_checkpoint_path: "../../etc/passwd"\n'
# every kept checkpoint corrupt; the newest corrupt but an older good
mkstate all-corrupt 'model_checkpoint_path: "model.ckpt-2.safetensors"\n'
cp ck-data-bit.st all-corrupt/model.ckpt-2.safetensors
mkdir no-state && cp good.st no-state/model.ckpt-2.safetensors
mkdir state-is-dir && mkdir state-is-dir/checkpoint
mkdir state-is-fifo && mkfifo state-is-fifo/checkpoint
mkdir empty-dir
# ---- secrets: good is 32 random bytes, mode 600 ------------------------
head -c 32 /dev/urandom >secret.good
head -c 31 /dev/urandom >secret.short
: >secret.empty
head -c 5000 /dev/urandom >secret.long
cp secret.good secret.group
cp secret.good secret.world
chmod 600 secret.good secret.short secret.empty secret.long
chmod 640 secret.group
chmod 604 secret.world
mkdir secret.dir
mkfifo secret.fifo
ln -s secret.group secret.link-group
# a Unix socket (as an output path it must be refused)
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' sock
# ---- rf-launch --hostfile: malformed hostfiles -------------------------
mkdir -p hostfiles
printf 'a\nb slots=x\n' >hostfiles/slots-x
printf 'a slots=0\n' >hostfiles/slots-0
printf 'a cpus=2\n' >hostfiles/keyword
printf 'a,b\n' >hostfiles/comma
printf '# nothing\n\n' >hostfiles/empty
printf 'a\nb # c\n' >hostfiles/two
# ---- TensorBoard event files (rf-events): ev/good is valid (the
# brain.Event:2 record, then steps 100 and 200 with loss and accuracy), the
# others damaged copies of it or other files given as event files; framed
# with the independent CRC32C of tests/unit/tfrecord/read_tfrecord.py
python3 - "$here/../unit/tfrecord/read_tfrecord.py" <<'PY'
import gzip, importlib.util, os, struct, sys

spec = importlib.util.spec_from_file_location("read_tfrecord", sys.argv[1])
tfr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tfr)


def varint(v):
    out = b""
    while True:
        c, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([c])
        out += bytes([c | 0x80])


def ld(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def record(data, length=None):
    head = struct.pack("<Q", len(data) if length is None else length)
    return (head + struct.pack("<I", tfr.masked(head)) + data +
            struct.pack("<I", tfr.masked(data)))


def event(step, tags=None, version=None):
    e = b"\x09" + struct.pack("<d", 1764800000.0 + step)
    if step:
        e += b"\x10" + varint(step)
    if version:
        return e + ld(3, version)
    vals = b"".join(ld(1, ld(1, t) + b"\x15" + struct.pack("<f", v))
                    for t, v in tags)
    return e + ld(5, vals)


recs = [event(0, version=b"brain.Event:2"),
        event(100, [(b"loss", 1.5), (b"accuracy", 0.5)]),
        event(200, [(b"loss", 1.0), (b"accuracy", 0.75)])]
good = b"".join(record(r) for r in recs)
off = [0]  # where each record starts: 0, 40, 99; the end 159
for r in recs:
    off.append(off[-1] + 16 + len(r))
os.makedirs("ev/good")
os.makedirs("ev/empty-dir")
os.makedirs("ev/bad-eval/eval")


def w(name, data):
    with open("ev/" + name, "wb") as f:
        f.write(data)


w("good/events.out.tfevents.1764800000.h", good)
w("bad-eval/events.out.tfevents.1764800000.h", good)
w("bad-eval/eval/events.out.tfevents.1764800001.h", good[:off[2] + 5])
w("cut-header", good[:off[2] + 5])
w("cut-data", good[:off[2] + 12 + 10])
w("cut-crc", good[:-1])


def flipped(at):
    b = bytearray(good)
    b[at] ^= 0x10
    return bytes(b)


w("len-bit", flipped(off[1] + 1))
w("len-crc-bit", flipped(off[1] + 9))
w("data-bit", flipped(off[1] + 12 + 3))
w("data-crc-bit", flipped(off[2] - 1))
w("huge", good[:off[1]] + record(b"", 1 << 40)[:12] + b"x" * 40)
w("64mib", good[:off[1]] + record(b"", (64 << 20) + 1)[:12] + b"x" * 40)
w("not-event", good[:off[1]] + record(b"\x0f\x01\x02"))
w("expands", good[:off[1]] + record(ld(5, ld(1, b"") * 200000)))
w("text", b"this is a text file, not an event file\n" * 3)
w("json", b'{"type": "step", "task": "local", "step": 1}\n')
w("gzip", gzip.compress(good, mtime=0))
w("zeros", bytes(16))
w("short", b"\x18\x00\x00")
PY
ln -s good/events.out.tfevents.1764800000.h ev/link-good
ln -s /dev/zero ev/link-zero

# ---- the valid ones must be accepted, else every case below lies -------
ck=${RF_CKPT:-} # run_cases.sh gets it from CMake
if [[ -n $ck ]]; then
    "$ck" verify good.st >/dev/null
    "$ck" verify ckdir >/dev/null
    # the files without CRC32Cs are sound but for them
    for f in plain-ok.st ck-no-crc.st ck-no-tensor-crc.st \
        ck-one-crc-missing.st ck-no-header-crc.st unchecked-dir; do
        "$ck" verify --allow-unchecked "$f" >/dev/null
    done
fi
ev=${RF_EVENTS:-} # rf-events, from CMake too
if [[ -n $ev ]]; then
    "$ev" ev/good >/dev/null
    [[ $("$ev" --json ev/good | wc -l) == 3 ]]
fi
echo "fixtures made in $F"
