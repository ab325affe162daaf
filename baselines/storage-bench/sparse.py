#!/usr/bin/env python3
"""Many sparse series for the storage benchmark, in time order across series.

Usage: sparse.py URL DB HOSTS STEP_MS SECONDS

Writes HOSTS series (`cpu,host=hN,region=R usage=…,idle=…,requests=…i,
duration_us=…i`, one point each every STEP_MS ms over SECONDS s of data)
through the InfluxDB 1.x `/write` API (loom-app's or influxd's), 5000 lines
per body, every host's point at t before any point at t + STEP_MS, as
telemetry arrives: so Loom seals each series' chunk by age
(`seal_after_us`, 60 s of data), not by size. Values move like host
metrics: usage a bounded random walk with one decimal, idle its complement,
requests a counter, duration_us a random latency. Creates DB first
(influxd needs it; loom-app answers 400, ignored). Prints `points=N seconds=T`.
"""
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=body, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        if r.status not in (200, 204):
            raise SystemExit(f"{url}: HTTP {r.status}")


def main():
    url, db, hosts, step_ms, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    try:
        post(f"{url}/query", urllib.parse.urlencode({"q": f"CREATE DATABASE {db}"}).encode())
    except urllib.error.HTTPError:
        pass  # loom-app has no CREATE DATABASE: /write takes any database

    rng = random.Random(1)
    usage = [rng.uniform(5, 60) for _ in range(hosts)]
    requests = [0] * hosts
    t0 = (int(time.time()) - seconds - 60) * 1_000_000_000
    write = f"{url}/write?" + urllib.parse.urlencode({"db": db, "precision": "ns"})
    lines, n, start = [], 0, time.time()
    for k in range(seconds * 1000 // step_ms):
        t = t0 + k * step_ms * 1_000_000
        for h in range(hosts):
            usage[h] = min(100.0, max(0.0, usage[h] + rng.choice((-0.5, -0.1, 0.0, 0.1, 0.5))))
            requests[h] += rng.randint(0, 40)
            u = round(usage[h], 1)
            lines.append(
                f"cpu,host=h{h},region={('eu', 'us', 'ap')[h % 3]} usage={u},idle={round(100 - u, 1)},"
                f"requests={requests[h]}i,duration_us={50 + int(rng.expovariate(1 / 400))}i {t}"
            )
            if len(lines) == 5000:
                post(write, "\n".join(lines).encode())
                n += len(lines)
                lines = []
    if lines:
        post(write, "\n".join(lines).encode())
        n += len(lines)
    print(f"points={n} seconds={time.time() - start:.1f}")


if __name__ == "__main__":
    main()
