/**
 * The Deno entry (`npm run start:deno`, `deno run -A dist/deno.js`): the shared process entry
 * (process-entry.ts: env file, settings, drain on SIGTERM, exit codes; Deno serves `node:` built-ins
 * and `process`) served as the Node entry serves, over Deno's node:http (node-serve.ts: event
 * streams written straight to the response, a waiting stream's connection taken over). Deno's
 * node:http is a port of Node's own, internals included, and with it Deno 2.9 served 1.40x the chat
 * turns/s of `Deno.serve` with web streams and holds a waiting conversation in about 15 KB instead
 * of 72 KB (10,000 held; README, Benchmarks). Outbound calls use Deno's fetch, which cannot bound connecting apart
 * from the answer: `timeouts_ms.connect` is not enforced here, the read timeout bounds the whole
 * call.
 */
import { listenNode } from "./node-serve.js";
import { runEntry } from "./process-entry.js";
import { lazyNodeTraceExport } from "./tracing-lazy.js";

// Trace export as on Node (tracing.ts): the SDK's OTLP/HTTP exporter runs on the runtime's node:http.
await runEntry({ listen: listenNode, app: { traceExport: lazyNodeTraceExport } });
