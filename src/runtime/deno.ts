/**
 * The Deno entry (`npm run start:deno`, `deno run -A dist/deno.js`): the shared process entry
 * (process-entry.ts: env file, settings, drain on SIGTERM, exit codes; Deno serves `node:` built-ins
 * and `process`) served with Deno.serve. Outbound calls use Deno's fetch, which cannot bound
 * connecting apart from the answer: `timeouts_ms.connect` is not enforced here, the read timeout
 * bounds the whole call.
 */
import { type Listen, runEntry } from "./process-entry.js";
import { lazyNodeTraceExport } from "./tracing-lazy.js";

/** The little of Deno's API this entry uses (no Deno types: src/ typechecks with `"types": []`). */
declare const Deno: {
  serve(
    options: { hostname: string; port: number; onListen?(address: { port: number }): void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { readonly addr: { port: number }; shutdown(): Promise<void> };
};

const listen: Listen = ({ fetch, hostname, port }) => {
  // Deno.serve throws at once (Deno.errors.AddrInUse, code EADDRINUSE) when the address is taken;
  // onListen replaces Deno's own "Listening on" line, the entry prints its own.
  const server = Deno.serve({ hostname, port, onListen: () => {} }, (request) => fetch(request));
  // shutdown(): stop accepting; resolves once open requests, streams included, have finished.
  return Promise.resolve({ port: server.addr.port, stop: () => server.shutdown() });
};

// Trace export as on Node (tracing.ts): the SDK's OTLP/HTTP exporter runs on the runtime's node:http.
await runEntry({ listen, app: { traceExport: lazyNodeTraceExport } });
