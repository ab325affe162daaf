#!/usr/bin/env python3
"""InfluxDB's bytes on disk per measurement, from its TSM files.

Usage: influx_bytes.py DATA_DIR

Debian's influxdb package ships no `influx_inspect`, so this reads the TSM
files' own indexes (TSM 1: header, blocks, index, 8-byte footer holding the
index offset; index entries `u16 key_len, key, u8 type, u16 n, n x (i64 min,
i64 max, i64 offset, u32 size)`, big-endian). A key is
`measurement[,tags]#!~#field`. Each measurement gets the bytes of its blocks
and of its index entries; the rest of every TSM file (header, footer) and
the allocated slack beyond the file's length are divided in proportion.
Other shard files (`fields.idx`, a TSI `index` directory if any) are divided
in proportion to those bytes too. The series files (`_series`) are reported
apart, as the benchmark does.

Prints one line per measurement: `measurement=M bytes=B` (allocated bytes).
"""
import os
import struct
import sys
from collections import defaultdict


def allocated(path):
    return os.stat(path).st_blocks * 512


def measurement_of(key):
    series = key.split(b"#!~#", 1)[0]
    # Measurement names escape ',' and ' ' with a backslash.
    out = bytearray()
    i = 0
    while i < len(series):
        c = series[i]
        if c == 0x5C and i + 1 < len(series):  # backslash
            out += series[i : i + 2]
            i += 2
            continue
        if c == 0x2C:  # ','
            break
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def tsm_shares(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 13 or data[:4] != b"\x16\xd1\x16\xd1":
        raise SystemExit(f"{path}: not a TSM file")
    (index_at,) = struct.unpack(">Q", data[-8:])
    shares = defaultdict(int)
    at = index_at
    end = len(data) - 8
    while at < end:
        (klen,) = struct.unpack_from(">H", data, at)
        key = data[at + 2 : at + 2 + klen]
        _typ, n = struct.unpack_from(">BH", data, at + 2 + klen)
        entries = at + 2 + klen + 3
        m = measurement_of(key)
        blocks = 0
        for k in range(n):
            (_mn, _mx, _off, size) = struct.unpack_from(">qqqI", data, entries + 28 * k)
            blocks += size
        shares[m] += blocks + 2 + klen + 3 + 28 * n
        at = entries + 28 * n
    return shares


def main():
    root = sys.argv[1]
    shares = defaultdict(float)
    other = 0
    for d, dirs, files in os.walk(root):
        if "_series" in dirs:
            dirs.remove("_series")
        for name in files:
            p = os.path.join(d, name)
            if name.endswith(".tsm"):
                s = tsm_shares(p)
                total = sum(s.values())
                for m, b in s.items():
                    shares[m] += allocated(p) * b / max(total, 1)
            else:
                other += allocated(p)
    total = sum(shares.values())
    for m in sorted(shares):
        b = shares[m] + other * shares[m] / max(total, 1)
        print(f"measurement={m} bytes={int(round(b))}")


if __name__ == "__main__":
    main()
