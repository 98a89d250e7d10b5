/// <reference types="node" />
/**
 * How the Node entry serves the app: @hono/node-server, with the app's event streams written
 * straight to node:http (issue 20). Each request's env object asks the app for direct streams
 * (src/http/sse.ts, DIRECT_STREAMS); a /chat, a decision or an A2A stream then answers a response
 * without a body and leaves its source on the env, which this writes to the ServerResponse: no
 * web ReadableStream, no reader and no pump per stream. Every other response goes through
 * @hono/node-server as before. Exported by the package (serveNode) for an embedder serving the
 * app itself, and used by the benchmarks, so they measure what `npm start` serves.
 */
import type { Server, ServerResponse } from "node:http";
import { getRequestListener, type HttpBindings } from "@hono/node-server";
// @hono/node-server writes nothing more for this response: the body went out already. Imported
// before getRequestListener swaps the global Response for its own, whose responses it would write.
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { createServer } from "node:http";
import { DIRECT_STREAMS, directSse, type SseSink } from "../http/sse.js";

type Fetch = (request: Request, env?: unknown) => Promise<Response> | Response;

/** A fetch handler for @hono/node-server that writes the app's event streams itself. */
export function directStreamsFetch(fetch: Fetch): (request: Request, env: HttpBindings | { outgoing: unknown }) => Promise<Response> {
  return async (request, env) => {
    (env as unknown as Record<string, unknown>)[DIRECT_STREAMS] = true;
    const response = await fetch(request, env);
    const source = directSse(env, response);
    if (source === undefined) return response;
    // An HTTP/1 server (createServer below): its response is a ServerResponse.
    const out = env.outgoing as ServerResponse;
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    out.writeHead(response.status, headers);
    const stream = source.attach(coalescingSink(out));
    // Also after a normal end, where cancel does nothing: only a client that went away stops the run.
    out.once("close", () => stream.cancel());
    return RESPONSE_ALREADY_SENT;
  };
}

/**
 * Writes to the response once per turn of the event loop (setImmediate): the headers with the
 * first words, and what else the run said in the same turn. A socket write is the largest cost of
 * a short answer here, and a run that answers at once (a quick model, a refusal) then costs one
 * write for the headers, every event and the end, instead of one each. A run that waits gets its
 * headers and first event out on the next turn of the loop, as before.
 */
function coalescingSink(out: ServerResponse): SseSink {
  let buffered = "";
  let scheduled = false;
  const push = () => {
    scheduled = false;
    if (out.writableEnded) return;
    if (buffered !== "") {
      const text = buffered;
      buffered = "";
      out.write(text);
    } else if (!out.headersSent) out.flushHeaders();
  };
  const soon = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(push);
  };
  soon(); // the headers go out next turn even when nothing is said yet
  return {
    write(text) {
      buffered += text;
      soon();
    },
    end(text) {
      const all = buffered + text;
      buffered = "";
      out.end(all);
    },
  };
}

/** Serves `fetch` on hostname:port; resolves once listening. */
export function serveNode(options: { fetch: Fetch; hostname: string; port: number }): Promise<{ server: Server; port: number }> {
  const server = createServer(getRequestListener(directStreamsFetch(options.fetch)));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address !== null ? address.port : options.port });
    });
  });
}
