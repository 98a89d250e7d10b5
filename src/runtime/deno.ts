/**
 * The Deno entry (`npm run start:deno`, `deno run -A dist/deno.js`): the shared process entry
 * (process-entry.ts: env file, settings, drain on SIGTERM, exit codes; Deno serves `node:` built-ins
 * and `process`) served as the Node entry serves, over Deno's node:http (node-serve.ts: event
 * streams written straight to the response, a waiting stream's connection taken over). Deno's
 * node:http is a port of Node's own, internals included, and with it Deno 2.9 served 1.40x the chat
 * turns/s of `Deno.serve` with web streams and holds a waiting conversation in about 15 KB instead
 * of 72 KB (10,000 held; scripts/BENCHMARKS.md). Outbound calls go as on Node too, through the
 * undici package (over Deno's node:net), so `timeouts_ms.connect` bounds connecting; Deno's own
 * fetch cannot tell connecting from waiting for the answer.
 */
import { listenNode } from "./node-serve.js";
import { nodeOutboundFetch } from "./outbound.js";
import { runEntry } from "./process-entry.js";
import { lazyNodeTraceExport } from "./tracing-lazy.js";

// Trace export as on Node (tracing.ts): the SDK's OTLP/HTTP exporter runs on the runtime's node:http.
await runEntry({ listen: listenNode, app: { fetch: nodeOutboundFetch(), traceExport: lazyNodeTraceExport } });
