#!/usr/bin/env python3
"""tests/unit/checkpoint/check_reader.py FILE EXPECT: an independent reader
of a checkpoint written by rdmaflow's rf_ckpt_write, with only the standard
library's struct and json on the documented safetensors layout (8-byte
little-endian header length, JSON header padded with spaces to a multiple
of 8, "__metadata__" a string map, data_offsets relative to the data).
Checks every name, dtype, shape, byte count, CRC32C (computed here, bit by
bit) and value against EXPECT (one "name dtype [dims] bytes crc values" line
per tensor, printed by the test from its source arrays). Prints one line per
failed check; exit 0 if all passed, 1 otherwise."""
import json
import struct
import sys

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def crc32c(data):
    """CRC32C (Castagnoli, reflected 0x82f63b78), init and final xor ~0."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


SIZES = {"F32": 4, "I32": 4, "I64": 8, "BOOL": 1}
FORMATS = {"F32": "<f", "I32": "<i", "I64": "<q", "BOOL": "<B"}


def main(path, expect_path):
    if crc32c(bytes(32)) != 0x8A9136AA:
        fail("the reader's own CRC32C is wrong")
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen % 8 != 0 or 8 + hlen > len(blob):
        fail("header length %d (file %d bytes)" % (hlen, len(blob)))
        return
    raw = blob[8:8 + hlen]
    text = raw.decode("utf-8")
    if text != text.rstrip(" ") + " " * (len(text) - len(text.rstrip(" "))):
        fail("header padding is not spaces")
    header = json.loads(text)
    data = blob[8 + hlen:]
    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail("__metadata__ is not a string map: %r" % (meta,))
        meta = {}
    names = list(header)
    if names != sorted(names, key=lambda s: s.encode()):
        fail("tensors not in byte order of their names: %s" % names)
    # contiguous, in name order, ending at the end of the file
    end = 0
    for name in names:
        b, e = header[name]["data_offsets"]
        if b != end:
            fail("%s begins at %d, not %d" % (name, b, end))
        end = e
    if end != len(data):
        fail("the tensors end at %d, the data at %d" % (end, len(data)))

    expect = {}
    with open(expect_path) as f:
        for line in f:
            name, dtype, shape, nbytes, crc, values = line.split()
            expect[name] = (dtype, shape, int(nbytes), crc, values)
    if set(expect) != set(names):
        fail("tensors %s, expected %s" % (sorted(names), sorted(expect)))
    for name in names:
        if name not in expect:
            continue
        dtype, shape, nbytes, crc, values = expect[name]
        entry = header[name]
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            fail("%s: fields %s" % (name, sorted(entry)))
        if entry["dtype"] != dtype:
            fail("%s: dtype %s, expected %s" % (name, entry["dtype"], dtype))
            continue
        got_shape = "[" + ",".join(str(d) for d in entry["shape"]) + "]"
        if got_shape != shape:
            fail("%s: shape %s, expected %s" % (name, got_shape, shape))
        b, e = entry["data_offsets"]
        buf = data[b:e]
        numel = 1
        for d in entry["shape"]:
            numel *= d
        if len(buf) != nbytes or len(buf) != numel * SIZES[dtype]:
            fail("%s: %d bytes, expected %d" % (name, len(buf), nbytes))
            continue
        got_crc = "%08x" % crc32c(buf)
        if got_crc != crc:
            fail("%s: CRC32C %s, the test computed %s" % (name, got_crc, crc))
        if meta.get("crc32c/" + name) != got_crc:
            fail("%s: metadata crc32c/%s is %r, the data's is %s" %
                 (name, name, meta.get("crc32c/" + name), got_crc))
        want = [] if values == "-" else values.split(",")
        size, fmt = SIZES[dtype], FORMATS[dtype]
        for k, w in enumerate(want):
            chunk = buf[k * size:(k + 1) * size]
            if dtype == "F32":
                ok = chunk == struct.pack(fmt, float(w))
            else:
                ok = struct.unpack(fmt, chunk)[0] == int(w)
            if not ok:
                fail("%s[%d]: %r, expected %s" %
                     (name, k, struct.unpack(fmt, chunk)[0], w))
    for key in meta:
        if key.startswith("crc32c/") and key[7:] not in header:
            fail("metadata %s names no tensor" % key)
    print("%s: %d tensors, %d metadata keys checked" %
          (path, len(names), len(meta)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: check_reader.py FILE EXPECT", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
    sys.exit(1 if failures else 0)
