#!/usr/bin/env python3
"""Parquet + zstd of one measurement's rows (the storage benchmark's third
reference): DuckDB reads the CSV `loom query --format csv` printed, sorts it
by series (the tag columns) then time and writes it with
`COPY ... (FORMAT parquet, COMPRESSION zstd)`.

Usage: parquet.py CSV OUT.parquet [TAG ...]
Prints `rows=N bytes=B` (B: the file's allocated bytes).
"""
import os
import sys

import duckdb


def main():
    csv, out, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
    con = duckdb.connect()
    # `name` is the measurement on every row and `tags` is empty: dropped.
    cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_csv_auto('{csv}')").fetchall()]
    keep = [c for c in cols if c not in ("name", "tags")]
    order = ", ".join([f'"{t}"' for t in tags if t in keep] + ['"time"'])
    sel = ", ".join(f'"{c}"' for c in keep)
    con.execute(
        f"COPY (SELECT {sel} FROM read_csv_auto('{csv}') ORDER BY {order}) "
        f"TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
    print(f"rows={rows} bytes={os.stat(out).st_blocks * 512}")


if __name__ == "__main__":
    main()
