#!/usr/bin/env python3
"""tests/unit/checkpoint/strip_crcs.py SRC DST WHAT [TENSOR]: copies the
checkpoint SRC (a file rdmaflow wrote: every tensor's "crc32c/<name>" and
"crc32c.header" in "__metadata__") to DST with CRC32Cs taken out, the data
bytes unchanged, for the tests of rf-ckpt verify's strictness. WHAT:
  all      no CRC32C at all (a plain safetensors file)
  tensors  no tensor's CRC32C; the header's, recomputed, kept
  one      TENSOR's CRC32C gone; the others and the header's (recomputed)
  header   every tensor's CRC32C kept, the header's gone
  same     nothing taken out: the header rebuilt as the writer does, which
           must give SRC's bytes again (checks this script's JSON and CRC)
The header is written as rdmaflow writes it (compact JSON padded with
spaces to a multiple of 8; the header CRC32C over the padded header with
its own 8 digits read as "00000000"). Only struct, json and check_reader.py's
CRC32C. Exit 0, or 1 with the reason."""
import json
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from check_reader import crc32c  # noqa: E402 (this folder's reader)

HEADER_KEY = "crc32c.header"
PREFIX = "crc32c/"


def header_bytes(header):
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
    raw = text.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    meta = header.get("__metadata__", {})
    if HEADER_KEY in meta:
        mark = ('"%s":"' % HEADER_KEY).encode()
        at = raw.find(mark)
        if at < 0:
            sys.exit("strip_crcs.py: no %s in the rebuilt header" % HEADER_KEY)
        digits = at + len(mark)
        raw = raw[:digits] + b"00000000" + raw[digits + 8:]
        crc = "%08x" % crc32c(raw)
        raw = raw[:digits] + crc.encode() + raw[digits + 8:]
    return raw


def main(argv):
    if len(argv) not in (4, 5) or argv[3] not in (
            "all", "tensors", "one", "header", "same") or (
            (argv[3] == "one") != (len(argv) == 5)):
        sys.exit(__doc__)
    src, dst, what = argv[1], argv[2], argv[3]
    blob = open(src, "rb").read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = blob[8 + hlen:]
    meta = header.get("__metadata__", {})
    tensors = [k for k in header if k != "__metadata__"]
    if HEADER_KEY not in meta or any(PREFIX + t not in meta for t in tensors):
        sys.exit("strip_crcs.py: %s does not carry every CRC32C" % src)
    if what in ("all", "header"):
        del meta[HEADER_KEY]
    if what in ("all", "tensors"):
        for t in tensors:
            del meta[PREFIX + t]
    if what == "one":
        if argv[4] not in tensors:
            sys.exit("strip_crcs.py: no tensor '%s' in %s" % (argv[4], src))
        del meta[PREFIX + argv[4]]
    raw = header_bytes(header)
    out = struct.pack("<Q", len(raw)) + raw + data
    if what == "same" and out != blob:
        sys.exit("strip_crcs.py: the rebuilt header of %s differs from the "
                 "file's: this script does not write headers as rdmaflow "
                 "does" % src)
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(sys.argv)
