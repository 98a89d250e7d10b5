/// <reference types="node" />
/**
 * The Node entry (`npm start`, `npm run dev`): the shared process entry (process-entry.ts: env
 * file, settings, drain on SIGTERM) served with @hono/node-server, event streams written straight
 * to node:http (node-serve.ts), and outbound calls through undici so `timeouts_ms.connect` bounds
 * the connection. With TRACING_ENABLED, spans go out
 * through the OpenTelemetry SDK (tracing.ts).
 */
import { keepMemoryReducerWorking } from "./memory-reducer.js";
import { listenNode } from "./node-serve.js";
import { loadGraphServerEntry } from "./graph-server-load.js";
import { nodeOutboundFetch } from "./outbound.js";
import { runEntry } from "./process-entry.js";
import { lazyNodeTraceExport } from "./tracing-lazy.js";
import { selectedRuntime } from "../settings/parse.js";

keepMemoryReducerWorking();

await runEntry({
  listen: listenNode,
  app: {
    fetch: nodeOutboundFetch(),
    traceExport: lazyNodeTraceExport,
    repeatingRunTimers: true,
  },
  // RUNTIME=graph-server (or detected): the LangGraph.js Agent Server serves, loaded only then.
  select: async (env) => (selectedRuntime(env) === "graph-server" ? loadGraphServerEntry() : undefined),
});
