/**
 * The Bun entry (`npm run start:bun`, and the single executable of `npm run build:binary`): the
 * shared process entry (process-entry.ts: env file, settings, drain on SIGTERM, exit codes) served
 * with Bun.serve. Outbound calls use Bun's fetch, which cannot bound connecting apart from the
 * answer: `timeouts_ms.connect` is not enforced here, the read timeout bounds the whole call.
 */
import { type Listen, runEntry } from "./process-entry.js";
import { lazyNodeTraceExport } from "./tracing-lazy.js";

/** The little of Bun's API this entry uses (no bun-types: src/ typechecks with `"types": []`). */
declare const Bun: {
  serve(options: {
    hostname: string;
    port: number;
    fetch(request: Request): Response | Promise<Response>;
    idleTimeout?: number;
    development?: boolean;
  }): { readonly port: number; stop(closeActiveConnections?: boolean): Promise<void> };
};

const listen: Listen = ({ fetch, hostname, port }) => {
  // Bun.serve throws at once (code EADDRINUSE) when the address is taken.
  const server = Bun.serve({
    hostname,
    port,
    fetch: (request) => fetch(request),
    // Bun closes a connection idle for 10 s by default, shorter than the SSE heartbeat
    // (SSE_HEARTBEAT_S, 15 s) and than a paused model turn: 0 leaves that to the app.
    idleTimeout: 0,
    development: false,
  });
  // stop(false): stop accepting; the promise resolves once open requests have finished.
  return Promise.resolve({ port: server.port, stop: () => server.stop(false) });
};

// Trace export as on Node (tracing.ts): the SDK's OTLP/HTTP exporter runs on the runtime's node:http.
await runEntry({ listen, app: { traceExport: lazyNodeTraceExport } });
