// pipeline_otlp_sdk.mjs: a four-stage pipeline traced with the real OpenTelemetry JS SDK
// (OTLP/HTTP JSON): each item is a trace, its root span "sdk_pipeline" with one child span
// per stage: decode (2 workers, 20 ms), preprocess (2 workers, 60 ms: the slowest),
// infer (1 worker, 20 ms), write (1 worker, 5 ms). Workers are async loops over FIFO
// queues; nothing but the spans tells goodput about the stages. Writes its own log of every
// stage span (JSON lines: stage, start/end ns) for pipeline_otlp.sh to check against.
// Usage: node pipeline_otlp_sdk.mjs URL LOGFILE N_ITEMS
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { context, trace } from '@opentelemetry/api';
import { writeFileSync } from 'node:fs';

const [url, logPath, nArg] = process.argv.slice(2);
const N = Number(nArg || 60);
const provider = new NodeTracerProvider({ resource: new Resource({ 'service.name': 'video-sdk' }) });
provider.addSpanProcessor(new BatchSpanProcessor(new OTLPTraceExporter({ url }),
  { maxExportBatchSize: 256, scheduledDelayMillis: 200 }));
provider.register();
const tracer = trace.getTracer('pipeline-otlp-test');
const origin = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();
const nowNs = () => origin + process.hrtime.bigint();
const hr = (ns) => [Number(ns / 1000000000n), Number(ns % 1000000000n)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = [];

// A FIFO queue that async workers wait on.
function queue() {
  const items = [], waiters = [];
  return {
    put(x) { const w = waiters.shift(); if (w) w(x); else items.push(x); },
    get() { return items.length ? Promise.resolve(items.shift()) : new Promise((r) => waiters.push(r)); },
  };
}
const stages = [['decode', 2, 20], ['preprocess', 2, 60], ['infer', 1, 20], ['write', 1, 5]];
const qs = stages.map(() => queue());
const done = queue();
stages.forEach(([name, pool, ms], k) => {
  for (let w = 0; w < pool; w++) (async () => {
    for (;;) {
      const item = await qs[k].get();
      const t0 = nowNs();
      const span = tracer.startSpan(name, { startTime: hr(t0) }, trace.setSpan(context.active(), item.root));
      await sleep(ms);
      const t1 = nowNs();
      span.end(hr(t1));
      log.push({ item: item.i, stage: name, start: t0.toString(), end: t1.toString() });
      if (k + 1 < stages.length) qs[k + 1].put(item); else done.put(item);
    }
  })();
});
for (let i = 0; i < N; i++) { // the source always has the next item ready
  const root = tracer.startSpan('sdk_pipeline', { startTime: hr(nowNs()) });
  qs[0].put({ i, root });
}
for (let i = 0; i < N; i++) (await done.get()).root.end(hr(nowNs()));
await provider.forceFlush();
await provider.shutdown();
writeFileSync(logPath, log.map((x) => JSON.stringify(x)).join('\n') + '\n');
process.exit(0);
