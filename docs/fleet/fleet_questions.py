"""Fleet questions over a tree `loom export` wrote, asked in DuckDB's or
Spark's own SQL: count, max and p99.99 of pread64 latency in a time window,
fleet-wide and per host.

p99.99 follows InfluxDB's rank rule (as Loom's InfluxQL and `loom fleet
query`'s percentile() do): the value of 1-based rank floor(n * N / 100 + 0.5)
in ascending order. Neither engine's own percentile functions use it
(DuckDB quantile_disc, Spark percentile interpolate or pick another rank), so
it is written with a window over per-value counts: exact, and it sorts only
the distinct values, not every row.

Usage: python fleet_questions.py --engine duckdb|spark --tree DIR
       --t0-us T0 --t1-us T1 [--measurement syscall] [--name pread64]
Prints one JSON line: {"engine", "seconds", "fleet": {...}, "hosts": {...}}.
"""

import argparse
import json
import time

RANK_SQL = """
WITH w AS (SELECT host, duration_us AS v FROM {table}
           WHERE {name_filter} {time_col} BETWEEN {t0} AND {t1}),
     c AS (SELECT {key} AS g, v, count(*) AS k FROM w GROUP BY {key}, v),
     r AS (SELECT g, v,
                  sum(k) OVER (PARTITION BY g ORDER BY v) AS cum,
                  sum(k) OVER (PARTITION BY g) AS n
           FROM c)
SELECT g, max(n) AS n, max(v) AS mx,
       min(v) FILTER (WHERE cum >= floor(n * 99.99 / 100 + 0.5)) AS p9999
FROM r GROUP BY g ORDER BY g
"""


def questions(run, table, time_col, args):
    name_filter = f"name = '{args.name}' AND" if args.name else ""
    out = {}
    groups = [("fleet", "'all'")] + ([] if args.fleet_only else [("hosts", "host")])
    for label, key in groups:
        rows = run(RANK_SQL.format(table=table, time_col=time_col, key=key,
                                   name_filter=name_filter,
                                   t0=args.t0_us, t1=args.t1_us))
        res = {str(g): {"n": int(n), "max": int(mx), "p9999": int(p)}
               for g, n, mx, p in rows}
        out[label] = res.get("all", {}) if label == "fleet" else res
    return out


def duckdb_engine(args):
    import duckdb
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    table = (f"read_parquet('{args.tree}/measurement={args.measurement}/*/*/*/*.parquet', "
             "hive_partitioning = true)")
    return questions(lambda q: con.execute(q).fetchall(), table, "epoch_us(time)", args)


def spark_engine(args):
    import os
    from pyspark.sql import SparkSession
    # Local mode talks to itself only: keep it on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.master("local[2]").appName("loom-fleet")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", args.spark_memory)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = (spark.read.option("basePath", args.tree)
          .parquet(f"{args.tree}/measurement={args.measurement}"))
    df.createOrReplaceTempView("t")
    try:
        return questions(lambda q: [tuple(r) for r in spark.sql(q).collect()],
                         "t", "unix_micros(time)", args)
    finally:
        spark.stop()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=["duckdb", "spark"], required=True)
    p.add_argument("--tree", required=True)
    p.add_argument("--t0-us", type=int, default=0)
    p.add_argument("--t1-us", type=int, default=2**62)
    p.add_argument("--measurement", default="syscall")
    p.add_argument("--name", default="pread64", help="name tag filter ('' for none)")
    p.add_argument("--spark-memory", default="2g")
    p.add_argument("--fleet-only", action="store_true", help="skip the per-host breakdown")
    args = p.parse_args()
    start = time.time()
    res = duckdb_engine(args) if args.engine == "duckdb" else spark_engine(args)
    res = {"engine": args.engine, "seconds": round(time.time() - start, 3), **res}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
