"""Exports a known set of spans, log records and metrics to loom-app with the
OpenTelemetry Python SDK and its OTLP exporters (pinned in requirements.txt):
gRPC (gzip), HTTP/protobuf (deflate) and HTTP/JSON, one service per transport.

The spans and log records come from --spec (written by the Rust test); the
SDK chooses trace and span ids and the metric points' times, so everything
the exporters sent is written to --out: per transport the ids of every span
and every exported metric point as the SDK built it. Each export's result is
checked: the script fails if the SDK reports anything but success.

Phases run spans (every transport), then logs, then metrics, so the data's
own times only grow from one export to the next phase.
"""

import argparse
import json
import random
import sys

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExportResult,
    PeriodicExportingMetricReader,
    Histogram,
    Sum,
    Gauge,
)
from opentelemetry.metrics import Observation
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry._logs import SeverityNumber

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetrics
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonSpans
from opentelemetry.exporter.otlp.json.http._log_exporter import OTLPLogExporter as JsonLogs
from opentelemetry.exporter.otlp.json.http.metric_exporter import OTLPMetricExporter as JsonMetrics
from grpc import Compression as GrpcCompression

# Python's SpanKind is OTLP's number minus one.
KINDS = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT, 4: SpanKind.PRODUCER, 5: SpanKind.CONSUMER}
STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}


def exporters(transport, grpc_addr, http_url):
    """The span, log and metric exporters of one transport."""
    if transport == "grpc":
        kw = dict(endpoint=grpc_addr, insecure=True, compression=GrpcCompression.Gzip)
        return GrpcSpans(**kw), GrpcLogs(**kw), GrpcMetrics(**kw)
    if transport == "http":
        c = HttpCompression.Deflate
        return (
            HttpSpans(endpoint=f"{http_url}/v1/traces", compression=c),
            HttpLogs(endpoint=f"{http_url}/v1/logs", compression=c),
            HttpMetrics(endpoint=f"{http_url}/v1/metrics", compression=c),
        )
    return (
        JsonSpans(endpoint=f"{http_url}/v1/traces"),
        JsonLogs(endpoint=f"{http_url}/v1/logs"),
        JsonMetrics(endpoint=f"{http_url}/v1/metrics"),
    )


def recording(exporter, results, hook=None):
    """Wraps the exporter's export so every result (and, with `hook`, every
    exported batch) is seen."""
    inner = exporter.export

    def export(batch, *args, **kwargs):
        if hook is not None:
            hook(batch)
        r = inner(batch, *args, **kwargs)
        results.append(r)
        return r

    exporter.export = export
    return exporter


def send_spans(spec, exporter, out, results):
    provider = TracerProvider(resource=Resource.create({"service.name": spec["service"], "deployment": "test"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            recording(exporter, results),
            max_queue_size=len(spec["spans"]) + 1,
            max_export_batch_size=256,
            schedule_delay_millis=200,
        )
    )
    tracer = provider.get_tracer("loom.test", "1.0")
    spans = []
    for s in spec["spans"]:
        ctx = None
        if s["parent"] is not None:
            ctx = trace.set_span_in_context(spans[s["parent"]])
        span = tracer.start_span(
            s["name"], context=ctx, kind=KINDS[s["kind"]], attributes=s["attributes"], start_time=s["start_ns"]
        )
        for e in s["events"]:
            span.add_event(e["name"], attributes=e["attributes"], timestamp=e["time_ns"])
        if s["status"] == 2:
            span.set_status(Status(StatusCode.ERROR, s["status_message"]))
        elif s["status"] == 1:
            span.set_status(Status(StatusCode.OK))
        spans.append(span)
    # End in a shuffled order within blocks, so the exported start times are
    # out of order by a few ms (loom-app's reorder stage puts them back).
    rng = random.Random(spec["seed"])
    order = list(range(len(spans)))
    for b in range(0, len(order), 32):
        block = order[b : b + 32]
        rng.shuffle(block)
        order[b : b + 32] = block
    for i in order:
        spans[i].end(end_time=spec["spans"][i]["end_ns"])
    provider.force_flush()
    provider.shutdown()
    for span in spans:
        c = span.get_span_context()
        p = span.parent
        out.append(
            {
                "trace_id": format(c.trace_id, "032x"),
                "span_id": format(c.span_id, "016x"),
                "parent_span_id": format(p.span_id, "016x") if p is not None else "",
            }
        )


def send_logs(spec, exporter, results):
    provider = LoggerProvider(resource=Resource.create({"service.name": spec["service"]}))
    provider.add_log_record_processor(
        BatchLogRecordProcessor(
            recording(exporter, results),
            max_queue_size=len(spec["logs"]) + 1,
            max_export_batch_size=128,
            schedule_delay_millis=200,
        )
    )
    logger = provider.get_logger("loom.test.logs")
    for r in spec["logs"]:
        ctx = None
        if r["trace_id"]:
            sc = SpanContext(int(r["trace_id"], 16), int(r["span_id"], 16), is_remote=False, trace_flags=TraceFlags(1))
            ctx = trace.set_span_in_context(NonRecordingSpan(sc))
        logger.emit(
            timestamp=r["time_ns"],
            observed_timestamp=r["observed_ns"],
            context=ctx,
            severity_number=SeverityNumber(r["severity_number"]),
            severity_text=r["severity_text"],
            body=r["body"],
            attributes=r["attributes"],
        )
    provider.force_flush()
    provider.shutdown()


def point_json(metric, p):
    d = {
        "attributes": dict(p.attributes or {}),
        "time_unix_nano": p.time_unix_nano,
        "start_time_unix_nano": p.start_time_unix_nano,
    }
    if isinstance(metric.data, Histogram):
        d.update(
            kind="histogram",
            count=p.count,
            sum=p.sum,
            min=p.min,
            max=p.max,
            bucket_counts=list(p.bucket_counts),
            explicit_bounds=list(p.explicit_bounds),
        )
    elif isinstance(metric.data, (Sum, Gauge)):
        d.update(kind="number", value=p.value)
    else:
        d.update(kind=type(metric.data).__name__)
    return d


def send_metrics(spec, exporter, out, results):
    def capture(data):
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        out.append(dict(name=m.name, unit=m.unit, **point_json(m, p)))

    reader = PeriodicExportingMetricReader(recording(exporter, results, capture), export_interval_millis=3_600_000)
    provider = MeterProvider(resource=Resource.create({"service.name": spec["service"]}), metric_readers=[reader])
    meter = provider.get_meter("loom.test.metrics")
    requests = meter.create_counter("requests", unit="1")
    latency = meter.create_histogram("latency", unit="ms")
    for route, code, n in spec["metrics"]["requests"]:
        requests.add(n, {"route": route, "code": code})
    for route, v in spec["metrics"]["latency"]:
        latency.record(v, {"route": route})
    temps = spec["metrics"]["temperature"]
    meter.create_observable_gauge(
        "temperature", [lambda _options: [Observation(v, {"room": room}) for room, v in temps]], unit="Cel"
    )
    # Shutting down collects and exports once.
    provider.shutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--grpc", required=True, help="host:port of OTLP/gRPC")
    ap.add_argument("--http", required=True, help="base URL of OTLP/HTTP")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    sent = {t: {"spans": [], "metrics": []} for t in spec}
    results = {t: [] for t in spec}
    for phase in ("spans", "logs", "metrics"):
        for t, s in spec.items():
            spans, logs, metrics = exporters(t, args.grpc, args.http)
            if phase == "spans":
                send_spans(s, spans, sent[t]["spans"], results[t])
            elif phase == "logs":
                send_logs(s, logs, results[t])
            else:
                send_metrics(s, metrics, sent[t]["metrics"], results[t])
    ok = {
        SpanExportResult.SUCCESS,
        LogRecordExportResult.SUCCESS,
        MetricExportResult.SUCCESS,
    }
    for t, rs in results.items():
        bad = [r for r in rs if r not in ok]
        if bad or not rs:
            print(f"{t}: exports failed: {bad} of {len(rs)}", file=sys.stderr)
            sys.exit(1)
        print(f"{t}: {len(rs)} exports succeeded")
    with open(args.out, "w") as f:
        json.dump(sent, f)


if __name__ == "__main__":
    main()
