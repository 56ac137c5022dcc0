// otlp_workflows.mjs: agent workflows traced with the real OpenTelemetry JS SDK
// (@opentelemetry/sdk-trace-node + exporter-trace-otlp-http, OTLP/HTTP JSON) sent to a
// goodput agent. Writes its own log of every span it made (JSON lines: trace, name, kind,
// start/end ns, tokens, ok) so otlp_workflows.sh can check goodput's figures against it.
// Usage: node otlp_workflows.mjs URL LOGFILE N_WORKFLOWS
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { writeFileSync } from 'node:fs';

const [url, logPath, nArg] = process.argv.slice(2);
const N = Number(nArg || 300);
const provider = new NodeTracerProvider({
  resource: new Resource({ 'service.name': 'llm-agent', 'host.name': 'otlp-node' }),
});
const exporter = new OTLPTraceExporter({ url });
provider.addSpanProcessor(new BatchSpanProcessor(exporter, { maxExportBatchSize: 256, scheduledDelayMillis: 200 }));
provider.register();
const tracer = trace.getTracer('otlp-workflows-test');
const log = [];
const origin = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();
const nowNs = () => origin + process.hrtime.bigint();
const hr = (ns) => [Number(ns / 1000000000n), Number(ns % 1000000000n)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

// One step: a child span of parent with explicit start/end times, logged.
async function step(parent, wf, name, attrs, ms, fail = false) {
  const t0 = nowNs();
  const ctx = trace.setSpan(context.active(), parent);
  const span = tracer.startSpan(name, { startTime: hr(t0), attributes: attrs }, ctx);
  await sleep(ms);
  const t1 = nowNs();
  if (fail) span.setStatus({ code: SpanStatusCode.ERROR, message: 'model error' });
  span.end(hr(t1));
  log.push({ trace: span.spanContext().traceId, wf, name, op: attrs['gen_ai.operation.name'] || '',
    start: t0.toString(), end: t1.toString(), in: attrs['gen_ai.usage.input_tokens'] ?? null,
    out: attrs['gen_ai.usage.output_tokens'] ?? null, ok: !fail });
  return !fail;
}
const chat = (tin, tout) => ({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'llama-8b',
  'gen_ai.usage.input_tokens': tin, 'gen_ai.usage.output_tokens': tout });
const tool = (n) => ({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': n });

async function workflow(i) {
  const kinds = ['research', 'trip_planner', 'qa'];
  const kind = kinds[i % 3];
  const t0 = nowNs();
  const root = tracer.startSpan(kind, { startTime: hr(t0), attributes: { 'gen_ai.operation.name': 'invoke_agent' } });
  let ok = true;
  if (kind === 'research') { // a slow tool between two model calls
    await step(root, kind, 'retrieve docs', { 'db.system': 'qdrant' }, 15);
    await step(root, kind, 'chat llama-8b', chat(600, 80), 30);
    await step(root, kind, 'execute_tool web_search', tool('web_search'), 200);
    await step(root, kind, 'chat llama-8b', chat(900, 150), 30);
  } else if (kind === 'trip_planner') { // two independent tools run one after another
    await step(root, kind, 'chat llama-8b', chat(400, 60), 25);
    await step(root, kind, 'execute_tool search_flights', tool('search_flights'), 60);
    await step(root, kind, 'execute_tool search_hotels', tool('search_hotels'), 50);
    await step(root, kind, 'chat llama-8b', chat(700, 120), 25);
  } else { // model calls that fail: retried, and sometimes the whole workflow fails
    const r = rand();
    ok = await step(root, kind, 'chat llama-8b', chat(500, 100), 40, r < 0.35);
    if (!ok) ok = await step(root, kind, 'chat llama-8b', chat(500, 100), 40, r < 0.15);
  }
  const t1 = nowNs();
  if (!ok) root.setStatus({ code: SpanStatusCode.ERROR, message: 'workflow failed' });
  root.end(hr(t1));
  log.push({ trace: root.spanContext().traceId, wf: kind, root: true, name: kind,
    start: t0.toString(), end: t1.toString(), ok });
}

const CONC = 12;
let next = 0;
await Promise.all(Array.from({ length: CONC }, async () => {
  while (next < N) await workflow(next++);
}));
await provider.forceFlush();
await provider.shutdown();
writeFileSync(logPath, log.map((x) => JSON.stringify(x)).join('\n') + '\n');
