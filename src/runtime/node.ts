/// <reference types="node" />
/**
 * The Node entry (`npm start`, `npm run dev`): the shared process entry (process-entry.ts: env
 * file, settings, drain on SIGTERM) served with @hono/node-server, and outbound calls through
 * undici so `timeouts_ms.connect` bounds the connection. With TRACING_ENABLED, spans go out
 * through the OpenTelemetry SDK (tracing.ts).
 */
import { serve } from "@hono/node-server";
import { nodeOutboundFetch } from "./outbound.js";
import { type Listen, runEntry } from "./process-entry.js";
import { nodeTraceExport } from "./tracing.js";
import { selectedRuntime } from "../settings/parse.js";

const listen: Listen = ({ fetch, hostname, port }) =>
  new Promise((resolve, reject) => {
    const server = serve({ fetch, hostname, port }, (info) => {
      server.off("error", reject);
      resolve({ port: info.port, stop: () => new Promise<void>((done) => server.close(() => done())) });
    });
    server.once("error", reject);
  });

await runEntry({
  listen,
  app: {
    fetch: nodeOutboundFetch(),
    traceExport: nodeTraceExport,
  },
  // RUNTIME=graph-server (or detected): the LangGraph.js Agent Server serves, loaded only then.
  select: async (env) => (selectedRuntime(env) === "graph-server" ? (await import("./graph-server/start.js")).graphServerEntry() : undefined),
});
