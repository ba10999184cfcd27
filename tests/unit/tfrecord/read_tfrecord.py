#!/usr/bin/python3
"""tests/unit/tfrecord/read_tfrecord.py: an independent TFRecord reader.

Reads FILE record by record (u64 length, u32 masked CRC32C of the length,
data, u32 masked CRC32C of the data; all little-endian), checks both CRCs
with its own table-driven CRC32C (Castagnoli, reflected 0x82F63B78) and
TensorFlow's mask, and with --expect-sizes checks the records' sizes and
bytes (byte i of a record of n bytes is (31 i + n) mod 256). Exit 0 if all
holds, 1 naming the first record and offset that does not, 2 on usage.
"""

import struct
import sys

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(blob):
    """Yields (offset, data); raises ValueError naming what is wrong."""
    off = 0
    index = 0
    while off < len(blob):
        if len(blob) - off < 12:
            raise ValueError("record %d at offset %d: %d bytes left, a "
                             "header needs 12" % (index, off, len(blob) - off))
        head = blob[off:off + 8]
        (length,) = struct.unpack("<Q", head)
        (hcrc,) = struct.unpack("<I", blob[off + 8:off + 12])
        if hcrc != masked(head):
            raise ValueError("record %d at offset %d: length CRC %08x, want "
                             "%08x" % (index, off, hcrc, masked(head)))
        end = off + 12 + length + 4
        if end > len(blob):
            raise ValueError("record %d at offset %d: %d data bytes "
                             "announced, the file ends first"
                             % (index, off, length))
        data = blob[off + 12:off + 12 + length]
        (dcrc,) = struct.unpack("<I", blob[end - 4:end])
        if dcrc != masked(data):
            raise ValueError("record %d at offset %d: data CRC %08x, want "
                             "%08x" % (index, off, dcrc, masked(data)))
        yield off, data
        off = end
        index += 1


def main(argv):
    bad_flag = len(argv) == 4 and argv[2] != "--expect-sizes"
    if len(argv) not in (2, 4) or bad_flag:
        sys.stderr.write("usage: read_tfrecord.py FILE "
                         "[--expect-sizes N,N,...]\n")
        return 2
    assert crc32c(b"123456789") == 0xE3069283
    with open(argv[1], "rb") as f:
        blob = f.read()
    want = None
    if len(argv) == 4:
        want = [int(x) for x in argv[3].split(",")]
    try:
        records = list(read_records(blob))
    except ValueError as e:
        print("read_tfrecord: %s: %s" % (argv[1], e))
        return 1
    if want is not None:
        if [len(d) for _, d in records] != want:
            print("read_tfrecord: sizes %s, want %s"
                  % ([len(d) for _, d in records], want))
            return 1
        for k, (off, data) in enumerate(records):
            n = len(data)
            expect = bytes((31 * i + n) & 0xFF for i in range(n))
            if data != expect:
                i = next(i for i in range(n) if data[i] != expect[i])
                print("read_tfrecord: record %d at offset %d: byte %d is "
                      "%d, want %d" % (k, off, i, data[i], expect[i]))
                return 1
    print("read_tfrecord: %d records, %d bytes, every CRC right"
          % (len(records), len(blob)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
