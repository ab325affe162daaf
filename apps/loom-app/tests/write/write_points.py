"""Writes a fixed set of points through the PyPI `influxdb` client (a client
no one here wrote) to one server — influxd or loom-app — so the Rust test
can read both back and compare. Every precision the client offers, escaped
names and values, float, integer and string fields, timestamps given as
RFC 3339 strings, datetimes and integers, and raw lines through
`client.write(..., protocol='line')`."""

import argparse
import datetime
import json

from influxdb import InfluxDBClient


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", default="lp")
    ap.add_argument("--create", action="store_true", help="CREATE DATABASE first (influxd)")
    args = ap.parse_args()
    client = InfluxDBClient(host="127.0.0.1", port=args.port, database=args.db)
    print(json.dumps({"ping": client.ping()}))
    if args.create:
        client.create_database(args.db)
    # Time strings (ns precision by default), escaping in every part.
    client.write_points([
        {
            "measurement": "py weather",
            "tags": {"loc, x=1": "us west", "season": "sum=mer"},
            "time": "2023-11-14T22:13:20.123457Z",
            "fields": {"temp": 21.5, "hum": 40, "note": 'said "hi", a\\b = c'},
        },
        {
            "measurement": "py weather",
            "tags": {"loc, x=1": "eu", "season": "winter"},
            "time": datetime.datetime(2023, 11, 14, 22, 13, 21, 5),
            "fields": {"temp": -3.25e-7, "hum": -2, "note": ""},
        },
    ])
    # Integer times at each precision the client knows.
    base_s = 1_700_000_100
    for i, (prec, scale) in enumerate([("s", 1), ("ms", 10**3), ("u", 10**6), ("n", 10**9)]):
        client.write_points(
            [
                {
                    "measurement": "py_prec",
                    "tags": {"p": prec},
                    "time": (base_s + i) * scale + (7 * scale // 1000 if prec != "s" else 0),
                    "fields": {"v": 0.1 * (i + 1), "i": 10**15 + i},
                }
            ],
            time_precision=prec,
        )
    # Minutes and hours.
    client.write_points(
        [{"measurement": "py_prec", "tags": {"p": "m"}, "time": 28_333_336, "fields": {"v": 1.0, "i": 1}}],
        time_precision="m",
    )
    client.write_points(
        [{"measurement": "py_prec", "tags": {"p": "h"}, "time": 472_223, "fields": {"v": 2.0, "i": 2}}],
        time_precision="h",
    )
    # A batch split into several requests, and raw lines.
    pts = [
        {
            "measurement": "py_batch",
            "tags": {"host": "h%d" % (i % 3)},
            "time": 1_700_000_200_000 + i,
            "fields": {"v": i * 1.5, "n": i},
        }
        for i in range(250)
    ]
    client.write_points(pts, time_precision="ms", batch_size=100)
    client.write(
        ["py_raw,host=a v=1.25,s=\"x y\" 1700000300000000000", "py_raw,host=b v=2.5,s=\"\" 1700000300000001000"],
        params={"db": args.db},
        protocol="line",
    )
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
