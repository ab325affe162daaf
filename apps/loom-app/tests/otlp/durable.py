"""Exports spans to loom-app with the stock OpenTelemetry Python SDK (pinned in
requirements.txt) and reports, line by line on stdout, which spans each
successful export carried, so that tests/otlp_durable.rs can SIGKILL
loom-app at a chosen moment and then check that every acknowledged span
survived.

Each span has a start time of its own (--base-ns + i ms) and an attribute
`i` (its index). Lines: `ACKED <i>,<i>,...` after each export the SDK saw
succeed (flushed at once); `FLUSHED <n>` once force_flush returned success
with every span exported; `FAILED` (exit 3) at the first export that did
not succeed (loom-app is gone), so the script never hangs on a dead server.
"""

import argparse
import os
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans


def exporter(transport, grpc_addr, http_url):
    if transport == "grpc":
        return GrpcSpans(endpoint=grpc_addr, insecure=True, timeout=3)
    return HttpSpans(endpoint=f"{http_url}/v1/traces", timeout=3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", choices=["grpc", "http"], required=True)
    ap.add_argument("--grpc", required=True, help="host:port of OTLP/gRPC")
    ap.add_argument("--http", required=True, help="base URL of OTLP/HTTP")
    ap.add_argument("--service", required=True)
    ap.add_argument("--spans", type=int, required=True)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--base-ns", type=int, required=True)
    args = ap.parse_args()

    exp = exporter(args.transport, args.grpc, args.http)
    inner = exp.export

    def export(batch, *a, **kw):
        r = inner(batch, *a, **kw)
        if r != SpanExportResult.SUCCESS:
            print("FAILED", flush=True)
            os._exit(3)
        print("ACKED " + ",".join(str(s.attributes["i"]) for s in batch), flush=True)
        return r

    exp.export = export
    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_span_processor(
        BatchSpanProcessor(
            exp,
            max_queue_size=args.spans + 1,
            max_export_batch_size=args.batch,
            schedule_delay_millis=50,
        )
    )
    tracer = provider.get_tracer("loom.test.durable", "1.0")
    for i in range(args.spans):
        start = args.base_ns + i * 1_000_000
        span = tracer.start_span("op", attributes={"i": i}, start_time=start)
        span.end(end_time=start + 1_000 + (i * 7919 % 500_000))
    if not provider.force_flush(30_000):
        print("FAILED", flush=True)
        os._exit(3)
    print(f"FLUSHED {args.spans}", flush=True)
    provider.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
