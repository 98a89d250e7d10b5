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
import { DIRECT_STREAMS, directSse, KEEP_ALIVE, SSE_HEADERS, type SseSink } from "../http/sse.js";

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
    out.writeHead(response.status, plainHeaders(response.headers));
    // node:http builds the header block by joining about thirty strings and keeps the result for
    // as long as the response is open: read once, V8 lays it out in one piece, and the pieces
    // (1.7 KB a waiting conversation) are freed.
    (out as unknown as { _header?: string })._header?.charCodeAt(0);
    const sink = new PacedSink(out);
    const stream = source.attach(sink);
    sink.beatEvery(stream.heartbeatMs);
    // Also after a normal end, where cancel does nothing: only a client that went away stops the
    // run. "close" comes once: `on`, not `once`, whose wrapper a waiting conversation would keep.
    out.on("close", () => {
      sink.stop();
      stream.cancel();
    });
    // A client that left while the run was being started (a slow claim of the thread, say) closed
    // the response before the listener was there: its run stops now, as if it had just left.
    if (out.destroyed) {
      sink.stop();
      stream.cancel();
    }
    return RESPONSE_ALREADY_SENT;
  };
}

/** The event stream's own headers, as Headers#forEach names them. */
const SSE_HEAD: readonly (readonly [string, string])[] = Object.entries(SSE_HEADERS).map(([name, value]) => [name.toLowerCase(), value]);

/**
 * The event stream's headers, then the ones the middleware set on the app's answer (a direct
 * stream's Response carries only those: src/http/sse.ts). A function of its own: a callback made
 * where the close listener is would keep the headers in its scope.
 */
function plainHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of SSE_HEAD) out[name] = value;
  headers.forEach((value, name) => (out[name] = value));
  return out;
}

/**
 * Writes to the response once per turn of the event loop (setImmediate): the headers with the
 * first words, and what else the run said in the same turn. A socket write is the largest cost of
 * a short answer here, and a run that answers at once (a quick model, a refusal) then costs one
 * write for the headers, every event and the end, instead of one each. A run that waits gets its
 * headers and first event out on the next turn of the loop, as before.
 *
 * Heartbeats come from one timer for all the streams of the process (HEARTBEAT_TICK_MS), not a
 * timer per stream: ten thousand waiting conversations hold no timer each for it. Each beating
 * stream sits in the bucket of the tick at which it is next due; a write only notes its time,
 * and when the bucket comes a stream that wrote since goes to a later bucket instead of beating.
 * So a stream moves at most once per heartbeat period whatever it writes (no table of all the
 * streams rebuilt as they write), a stream that ends leaves its bucket at once, and what a tick
 * looks at is what is due then: heartbeats go out a few at a time rather than in one burst.
 */
class PacedSink implements SseSink {
  readonly paced = true;
  private buffered = "";
  private scheduled = false;
  private lastWrite = Date.now();
  private heartbeatMs = 0;
  /** Its bucket's tick and its place there while it beats; tick -1 while its bucket is looked at. */
  private tick = -1;
  private slot = -1;
  private beating = false;
  constructor(private readonly out: ServerResponse) {
    this.soon(); // the headers go out next turn even when nothing is said yet
  }

  write(text: string): void {
    this.buffered += text;
    this.soon();
  }

  end(text: string): void {
    this.stop();
    const all = this.buffered + text;
    this.buffered = "";
    this.out.end(all);
  }

  beatEvery(ms: number): void {
    if (this.out.writableEnded || this.beating) return;
    this.heartbeatMs = ms;
    this.beating = true;
    if (beating++ === 0) {
      nextTick = Math.floor(Date.now() / HEARTBEAT_TICK_MS);
      beatTimer = setInterval(beatDue, HEARTBEAT_TICK_MS).unref();
    }
    this.dueAt(this.lastWrite + ms);
  }

  stop(): void {
    if (!this.beating) return;
    this.beating = false;
    this.leaveBucket();
    if (--beating === 0) {
      clearInterval(beatTimer);
      beatTimer = undefined;
      due.clear();
    }
  }

  /** Its bucket came (and let go of it): a heartbeat when nothing was written for heartbeatMs, then its next bucket. */
  beatIfIdle(now: number): void {
    this.tick = -1;
    if (!this.beating) return;
    if (now - this.lastWrite >= this.heartbeatMs) {
      if (this.buffered === "") this.write(KEEP_ALIVE);
      this.lastWrite = now;
    }
    this.dueAt(this.lastWrite + this.heartbeatMs);
  }

  /** Into the bucket of the tick `at` falls in (never one already looked at). */
  private dueAt(at: number): void {
    const tick = Math.max(Math.ceil(at / HEARTBEAT_TICK_MS), nextTick);
    let bucket = due.get(tick);
    if (!bucket) due.set(tick, (bucket = spareBuckets.pop() ?? []));
    this.tick = tick;
    this.slot = bucket.length;
    bucket.push(this);
  }

  /** Out of its bucket: the bucket's last stream takes its place. */
  private leaveBucket(): void {
    const tick = this.tick;
    this.tick = -1;
    const bucket = tick < 0 ? undefined : due.get(tick);
    if (!bucket) return;
    const last = bucket.pop()!;
    if (last !== this) {
      bucket[this.slot] = last;
      last.slot = this.slot;
    }
    if (bucket.length === 0) {
      due.delete(tick);
      spare(bucket);
    }
  }

  private soon(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(pushSink, this);
  }

  push(): void {
    this.scheduled = false;
    const out = this.out;
    if (out.writableEnded) return;
    this.lastWrite = Date.now();
    if (this.buffered !== "") {
      const text = this.buffered;
      this.buffered = "";
      out.write(text);
    } else if (!out.headersSent) out.flushHeaders();
  }
}

/** The sink's turn of the loop (its argument, not a closure per sink). */
function pushSink(sink: PacedSink): void {
  sink.push();
}

/** How often the idle streams are looked at: a heartbeat is at most this late. */
const HEARTBEAT_TICK_MS = 50;
/** Beating streams by the tick (time / HEARTBEAT_TICK_MS, rounded up) at which they are next due. */
const due = new Map<number, PacedSink[]>();
/**
 * Emptied buckets, used again: a bucket lives until its tick (a heartbeat period), long enough
 * for V8 to move it to the old generation, where thrown-away ones would pile up between major
 * collections while ten thousand streams beat.
 */
const spareBuckets: PacedSink[][] = [];
function spare(bucket: PacedSink[]): void {
  bucket.length = 0;
  if (spareBuckets.length < 64) spareBuckets.push(bucket);
}
/** Streams that beat: the timer runs while there are any. */
let beating = 0;
/** The first tick not looked at yet. */
let nextTick = 0;
let beatTimer: ReturnType<typeof setInterval> | undefined;

function beatDue(): void {
  const now = Date.now();
  const last = Math.floor(now / HEARTBEAT_TICK_MS);
  // The ticks since the last look (one, unless the loop was held up), each bucket once.
  while (nextTick <= last) {
    const bucket = due.get(nextTick);
    due.delete(nextTick);
    // Past this tick before its streams are put back: none lands in a tick already looked at.
    nextTick++;
    if (!bucket) continue;
    for (const sink of bucket) sink.beatIfIdle(now);
    spare(bucket);
  }
}

/**
 * How much of a request's head node:http reads (its default is 16 KiB): room for a bearer token
 * of 16384 characters (spec 5.3: longer ones are invalid, answered 401 by the auth policy) beside
 * the request's other headers, instead of a bare 431 before the app sees the request.
 */
const MAX_HEADER_BYTES = 64 * 1024;

/** Serves `fetch` on hostname:port; resolves once listening. */
export function serveNode(options: { fetch: Fetch; hostname: string; port: number }): Promise<{ server: Server; port: number }> {
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, getRequestListener(directStreamsFetch(options.fetch)));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address !== null ? address.port : options.port });
    });
  });
}
