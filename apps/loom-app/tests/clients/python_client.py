"""Asks loom-app's InfluxDB 1.x API questions through the PyPI `influxdb`
client (a client no one here wrote) and prints its answers as JSON lines,
one per statement, for the Rust test to compare with brute force."""

import argparse
import json

from influxdb import InfluxDBClient


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("statements", nargs="+")
    args = ap.parse_args()
    client = InfluxDBClient(host="127.0.0.1", port=args.port, database="loom")
    version = client.ping()
    print(json.dumps({"ping": version}))
    for q in args.statements:
        rs = client.query(q, epoch="u")
        print(json.dumps({"q": q, "points": list(rs.get_points())}))


if __name__ == "__main__":
    main()
