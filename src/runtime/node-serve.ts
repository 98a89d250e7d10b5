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
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import { getRequestListener, type HttpBindings } from "@hono/node-server";
// @hono/node-server writes nothing more for this response: the body went out already. Imported
// before getRequestListener swaps the global Response for its own, whose responses it would write.
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { createServer } from "node:http";
import { DIRECT_STREAMS, directSse, KEEP_ALIVE, SSE_HEADERS, type SseSink } from "../http/sse.js";
import type { Listen } from "./process-entry.js";

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
    // Checked now (node:http throws here on a header it cannot send), written with the first
    // words: a run that has ended by then (a quick model, a refusal) is answered whole, with its
    // length and without chunked framing (PacedSink.end).
    out.statusCode = response.status;
    setHeaders(out, response.headers);
    const sink = new PacedSink(out);
    const stream = source.attach(sink);
    sink.beatEvery(stream.heartbeatMs);
    // Also after a normal end, where cancel does nothing: only a client that went away stops the
    // run. "close" comes once: `on`, not `once`, whose wrapper a waiting conversation would keep.
    // A stream handed over (PacedSink.handOver) hears it from its socket instead.
    const gone = () => {
      sink.stop();
      stream.cancel();
    };
    sink.gone = gone;
    out.on("close", gone);
    // A client that left while the run was being started (a slow claim of the thread, say) closed
    // the response before the listener was there: its run stops now, as if it had just left.
    if (out.destroyed) gone();
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
function setHeaders(out: ServerResponse, headers: Headers): void {
  for (const [name, value] of SSE_HEAD) out.setHeader(name, value);
  headers.forEach((value, name) => out.setHeader(name, value));
}

/**
 * Writes to the response once per turn of the event loop (setImmediate): the headers with the
 * first words, what else the run said in the same turn, and its end. A socket write is the largest
 * cost of a short answer here, and a run that answers at once (a quick model, a refusal) then
 * costs one write for the headers, every event and the end, instead of one each. A run that waits
 * gets its headers and first event out on the next turn of the loop, as before.
 *
 * The end waits for that turn too, rather than going out from the middle of the read that brought
 * the request: the answers finished while one read's requests were handled then go out back to
 * back, and a client's side asleep on its sockets is woken once for them, not once an answer.
 * That wake was 14% of the main thread's time under bench:chat (perf, Node 24): one answer's
 * CPU fell from 80.4 to 61.6 µs (scripts/ab-builds.mjs, Node 24, medians of 10 pairs).
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
  /** Runs once the client has gone (or the stream has closed after its end). */
  gone: () => void = ignore;
  /** The response, until the stream is handed over; then its connection, written to as chunks. */
  private out: ServerResponse | undefined;
  private socket: (Socket & HttpInternals) | undefined;
  private buffered = "";
  private scheduled = false;
  /** The stream has said its last words (end): the next push ends it. */
  private ending = false;
  /** A hand-over was offered (offerHandOver). */
  private offered = false;
  private lastWrite = Date.now();
  private heartbeatMs = 0;
  /** Its bucket's tick and its place there while it beats; tick -1 while its bucket is looked at. */
  private tick = -1;
  private slot = -1;
  private beating = false;
  constructor(out: ServerResponse) {
    this.out = out;
    this.soon(); // the headers go out next turn even when nothing is said yet
  }

  write(text: string): void {
    this.buffered += text;
    this.soon();
  }

  /** The last words go out in the sink's turn of the loop too, with whatever else it holds. */
  end(text: string): void {
    this.stop();
    this.buffered += text;
    this.ending = true;
    this.soon();
  }

  /**
   * Heartbeats every `ms` while the stream is idle. Taken up at the stream's first write
   * (push): a run that answers within its first turn (a quick model, a refusal) has ended by
   * then and never joins a bucket.
   */
  beatEvery(ms: number): void {
    this.heartbeatMs = ms;
  }

  private startBeating(): void {
    if (this.beating || this.heartbeatMs <= 0) return;
    this.beating = true;
    if (beating++ === 0) {
      nextTick = Math.floor(Date.now() / HEARTBEAT_TICK_MS);
      beatTimer = setInterval(beatDue, HEARTBEAT_TICK_MS).unref();
    }
    this.dueAt(this.lastWrite + this.heartbeatMs);
  }

  stop(): void {
    this.heartbeatMs = 0;
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
      if (this.offered) this.offerHandOver();
      // A handed-over stream with nothing on its way: the heartbeat's chunk, framed once for all,
      // straight to the socket, without a turn of the loop or a string made for it. Ten thousand
      // waiting conversations then allocate half as much between heartbeats (V8 reads the rate
      // to decide when an idle process gets a full collection).
      if (this.socket && !this.scheduled && this.buffered === "" && !this.ended()) this.socket.write(KEEP_ALIVE_CHUNK);
      else if (this.buffered === "") this.write(KEEP_ALIVE);
      this.lastWrite = now;
    }
    this.dueAt(this.lastWrite + this.heartbeatMs);
  }

  /** Into the bucket of the tick `at` falls in (never one already looked at). */
  private dueAt(at: number): void {
    const tick = Math.max(Math.ceil(at / HEARTBEAT_TICK_MS), nextTick);
    let bucket = due.get(tick);
    if (!bucket) due.set(tick, (bucket = spareBuckets.pop() ?? { sinks: [], size: 0 }));
    this.tick = tick;
    this.slot = bucket.size;
    bucket.sinks[bucket.size++] = this;
  }

  /** Out of its bucket: the bucket's last stream takes its place. */
  private leaveBucket(): void {
    const tick = this.tick;
    this.tick = -1;
    const bucket = tick < 0 ? undefined : due.get(tick);
    if (!bucket) return;
    const last = bucket.sinks[--bucket.size]!;
    bucket.sinks[bucket.size] = undefined;
    if (last !== this) {
      bucket.sinks[this.slot] = last;
      last.slot = this.slot;
    }
    if (bucket.size === 0) {
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
    if (this.ended()) return;
    const out = this.out;
    if (this.ending) {
      const all = this.buffered;
      this.buffered = "";
      // Before its first words went out, node:http sends the headers with a Content-Length and
      // the answer after them in one write, without chunked framing.
      if (out) out.end(all);
      else this.endHandedOver(this.socket!, all);
      return;
    }
    this.lastWrite = Date.now();
    if (this.buffered !== "") {
      const text = this.buffered;
      this.buffered = "";
      if (out) out.write(text);
      else this.socket!.write(chunk(text));
    } else if (out && !out.headersSent) out.flushHeaders();
    this.startBeating();
    // Still going after its first words: the run waits (on its model, a tool, a person), and the
    // stream goes on without node:http's state for it (handOver), once node:http has passed what
    // it holds of this write to the socket (it corks until the end of this turn).
    if (out && !this.offered) {
      this.offered = true;
      // node:http built the header block just now by joining about thirty strings, and keeps it
      // for as long as the response is open: read once, V8 lays it out in one piece, and the
      // pieces (1.7 KB a waiting conversation) are freed.
      (out as unknown as { _header?: string })._header?.charCodeAt(0);
      setImmediate(offerHandOver, this);
    }
  }

  /** A turn after its first words (and at each heartbeat until it is): hands the stream over if it is still open. */
  offerHandOver(): void {
    if (this.out && !this.out.writableEnded) this.handOver(this.out);
  }

  private ended(): boolean {
    return this.out ? this.out.writableEnded : !this.socket || this.socket.writableEnded || this.socket.destroyed;
  }

  /**
   * Takes the stream's connection from node:http, as node:http itself does when it hands a
   * connection over for an upgrade: its listeners off the socket, its parser freed (unconsumed,
   * off the server's list of connections, back to the pool) and the response let go. The events
   * then go out as chunks straight to the socket, and once the stream has ended the connection
   * goes back to the server as a new one (`connection`), kept alive for the client's next
   * request. node:http's state for an open response is most of what a waiting conversation
   * costs (about 6 KB of it on Node 20, 14 KB on Node 24), and it is freed at once, for the next
   * connections to use. Only for a connection that carries this stream and nothing else: the
   * request read whole, no later request parsed on it (pipelined), nothing of node:http's still
   * queued, chunked framing; anything else, or a Node whose internals are not the ones known
   * here, keeps the stream on node:http as before.
   */
  private handOver(out: ServerResponse): void {
    const socket = handOverSocket(out);
    if (!socket) return;
    this.out = undefined;
    this.socket = socket;
    socket.on("close", this.gone);
    // The client's end: the stream's client has gone (node:http would end the connection too).
    socket.on("end", destroySocket);
    socket.on("error", ignore);
    // Read on, so that a client that leaves is heard. A client that sends meanwhile (a request
    // pipelined behind this one) has its bytes dropped, and its connection closes after the
    // stream instead of going back to the server: it asks again on a new one.
    socket.on("data", notReusable);
    socket.resume();
  }

  /** The stream's last words and the end of the chunked body; then the connection goes back to the server, or closes. */
  private endHandedOver(socket: Socket & HttpInternals, text: string): void {
    if (socket.destroyed || socket.writableEnded) return;
    const last = text === "" ? LAST_CHUNK : `${chunk(text)}${LAST_CHUNK}`;
    const server = servingServer(socket);
    if (socket.reusable === false || !socket.readable || !server?.listening) {
      socket.end(last);
      // The client closes its side on reading the end; one that does not is closed for it.
      socket.setTimeout(CLOSE_GRACE_MS, destroySocket);
      return;
    }
    socket.write(last);
    socket.removeListener("close", this.gone);
    socket.removeListener("end", destroySocket);
    socket.removeListener("error", ignore);
    socket.removeListener("data", notReusable);
    socket.removeListener("close", forgetHandedOver);
    server[HANDED_OVER]?.delete(socket);
    // node:http takes it as it takes a new connection (its documented way to inject one).
    server.emit("connection", socket);
    // Idle now, as after any answer: closed after the server's keep-alive timeout unless the
    // client asks again (node:http would bound a new connection by its much longer headers
    // timeout instead).
    if (server.keepAliveTimeout > 0) {
      socket.setTimeout(server.keepAliveTimeout);
      socket.prependOnceListener("data", busyAgain);
    }
  }
}

function ignore(): void {}

/** Listeners of their own, not a closure per connection. */
function destroySocket(this: Socket): void {
  this.destroy();
}
/** The client asks again on a connection given back: the server's own socket timeout, if any, applies again. */
function busyAgain(this: Socket): void {
  this.setTimeout(servingServer(this)?.timeout ?? 0);
}
function notReusable(this: Socket & HttpInternals): void {
  this.reusable = false;
}
function forgetHandedOver(this: Socket): void {
  servingServer(this)?.[HANDED_OVER]?.delete(this);
}

/** The server a connection came to (net sets it), when serveNode made it. */
function servingServer(socket: Socket): ServingServer | undefined {
  const server = (socket as { server?: ServingServer | null }).server;
  return server && server[HANDED_OVER] ? server : undefined;
}

/** One chunk of chunked framing, and the last (zero-length) one. */
function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}
const LAST_CHUNK = "0\r\n\r\n";
const KEEP_ALIVE_CHUNK = chunk(KEEP_ALIVE);

/** How long a handed-over connection that closes waits for its client to close it after the stream's end. */
const CLOSE_GRACE_MS = 5_000;

/** node:http's `freeParser` (what it runs for an upgrade), or undefined where it is not there. */
const freeParser = ((): ((parser: unknown, req: unknown, socket: unknown) => void) | undefined => {
  try {
    const f = (createRequire(import.meta.url)("_http_common") as { freeParser?: unknown }).freeParser;
    return typeof f === "function" ? (f as (parser: unknown, req: unknown, socket: unknown) => void) : undefined;
  } catch {
    return undefined;
  }
})();

/** node:http's listeners on a parsed connection's socket, by event, as Node 20-24 name them. */
const HTTP_LISTENERS: readonly (readonly [string, string, boolean])[] = [
  // [event, listener's name, required]
  ["data", "bound socketOnData", true],
  ["end", "bound socketOnEnd", true],
  ["close", "bound socketOnClose", true],
  ["drain", "bound socketOnDrain", true],
  ["error", "socketOnError", true],
  ["timeout", "socketOnTimeout", false],
  ["resume", "onSocketResume", false],
  ["pause", "onSocketPause", false],
];

type Listener = (...args: unknown[]) => void;

type Listed = Listener & { listener?: Listener };

/**
 * The listener of `event` named `name`, read from the emitter's own table (`_events`: one
 * function, or an array of them): `listeners()` returns a copy of the list each time, eight
 * arrays a hand-over that a full collection takes later. As `listeners()` does, a listener added
 * with `once` is found through its wrapper (`.listener`), and returned as it was added, which is
 * what `removeListener` takes.
 */
function namedListener(socket: Socket, event: string, name: string): Listener | undefined {
  const entry = (socket as unknown as { _events?: Record<string, Listed | Listed[] | undefined> })._events?.[event];
  if (typeof entry === "function") return named(entry, name);
  if (Array.isArray(entry))
    for (const listed of entry) {
      const listener = named(listed, name);
      if (listener) return listener;
    }
  return undefined;
}

function named(listed: Listed, name: string): Listener | undefined {
  const listener = listed.listener ?? listed;
  return listener.name === name ? listener : undefined;
}

/** Handed-over connections of each server, closed by its closeAllConnections (serveNode). */
const HANDED_OVER = Symbol("agent-service.handed-over");
type ServingServer = Server & { [HANDED_OVER]?: Set<Socket> };

interface HttpInternals {
  parser?: { incoming?: unknown } | null;
  _httpMessage?: unknown;
  _paused?: boolean;
  /**
   * False when the connection closes after its handed-over stream instead of going back: node:http
   * had said it would close it (`Connection: close` asked, or its keep-alive limits), or the
   * client sent something while its stream was handed over.
   */
  reusable?: boolean;
}

/** The response's socket, taken from node:http; undefined (nothing changed) when it cannot be. */
function handOverSocket(out: ServerResponse): Socket | undefined {
  const socket = out.socket as (Socket & HttpInternals) | null;
  const req: IncomingMessage = out.req;
  const parser = socket?.parser;
  const server = socket ? servingServer(socket) : undefined;
  const handedOver = server?.[HANDED_OVER];
  if (!freeParser || !socket || !parser || !server || !handedOver || socket.destroyed) return undefined;
  if (!out.headersSent || out.writableEnded || !out.chunkedEncoding) return undefined;
  // Nothing the response itself holds (a corked write, a write before the socket was its own):
  // what it passed on is in the socket's own buffer, ahead of what is written to it from now on.
  if (out.writableCorked !== 0 || out.writableLength !== socket.writableLength) return undefined;
  if (!req.complete || parser.incoming !== req || socket._httpMessage !== out) return undefined;
  // Found by their place in HTTP_LISTENERS: one list a hand-over.
  const found: (Listener | undefined)[] = [];
  for (const [event, name, required] of HTTP_LISTENERS) {
    const listener = namedListener(socket, event, name);
    if (listener === undefined && required) return undefined;
    found.push(listener);
  }
  for (let i = 0; i < found.length; i++) if (found[i]) socket.removeListener(HTTP_LISTENERS[i]![0], found[i]!);
  if (!out.shouldKeepAlive) socket.reusable = false;
  freeParser(parser, req, socket);
  out.detachSocket(socket);
  socket._paused = false;
  forgetConnection(server, socket);
  handedOver.add(socket);
  socket.on("close", forgetHandedOver);
  return socket;
}

/**
 * Off the server's list of connections, which its close() and closeIdleConnections() end. On Node
 * the list holds parsers and freeParser took this one off already. Deno's port of node:http keeps
 * the sockets themselves in a list of its own (`_all`, a set), where the socket would stay and,
 * having no response, read as idle: the drain on SIGTERM would cut the stream.
 */
function forgetConnection(server: ServingServer, socket: Socket): void {
  const key = connectionsKey(server);
  if (!key) return;
  const list = (server as unknown as Record<symbol, { _all?: { has?: unknown }; remove?: (socket: Socket) => void } | undefined>)[key];
  // Deno's Set is its primordials' SafeSet, not an instance of this realm's Set: read by shape.
  if (typeof list?._all?.has === "function" && typeof list.remove === "function") list.remove(socket);
}
/** node:http's own symbol for a server's connections list, found once by its description. */
let connections: symbol | null | undefined;
function connectionsKey(server: Server): symbol | undefined {
  if (connections === undefined) connections = Object.getOwnPropertySymbols(server).find((k) => k.description === "http.server.connections") ?? null;
  return connections ?? undefined;
}

/** The sink's turn of the loop (its argument, not a closure per sink). */
function pushSink(sink: PacedSink): void {
  sink.push();
}
function offerHandOver(sink: PacedSink): void {
  sink.offerHandOver();
}

/** How often the idle streams are looked at: a heartbeat is at most this late. */
const HEARTBEAT_TICK_MS = 50;
/**
 * The streams due at one tick: the first `size` of `sinks`. The array keeps its length when the
 * bucket empties (its slots cleared): setting an array's length to 0 gives up its storage in V8,
 * and every use would grow it again from nothing, a heartbeat at a time.
 */
interface Bucket {
  readonly sinks: (PacedSink | undefined)[];
  size: number;
}
/** Beating streams by the tick (time / HEARTBEAT_TICK_MS, rounded up) at which they are next due. */
const due = new Map<number, Bucket>();
/**
 * Emptied buckets, used again: a bucket lives until its tick (a heartbeat period), long enough
 * for V8 to move it to the old generation, where thrown-away ones would pile up between major
 * collections while ten thousand streams beat.
 */
const spareBuckets: Bucket[] = [];
/** Room for this many streams is kept in a spare bucket; one grown past it by a burst is let go. */
const SPARE_BUCKET_ROOM = 2048;
function spare(bucket: Bucket): void {
  bucket.size = 0;
  if (spareBuckets.length < 64 && bucket.sinks.length <= SPARE_BUCKET_ROOM) spareBuckets.push(bucket);
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
    const { sinks } = bucket;
    for (let i = 0; i < bucket.size; i++) {
      const sink = sinks[i]!;
      sinks[i] = undefined;
      sink.beatIfIdle(now);
    }
    spare(bucket);
  }
}

/**
 * How much of a request's head node:http reads (its default is 16 KiB): room for a bearer token
 * of 16384 characters (spec 5.3: longer ones are invalid, answered 401 by the auth policy) beside
 * the request's other headers, instead of a bare 431 before the app sees the request.
 */
const MAX_HEADER_BYTES = 64 * 1024;

/**
 * The entries' server (the Node entry's, and the Deno entry's over Deno's node:http): serveNode,
 * stopped by closing it (no new connections; resolves once the open ones have closed).
 */
export const listenNode: Listen = async (options) => {
  const { server, port } = await serveNode(options);
  return { port, stop: () => new Promise<void>((done) => server.close(() => done())) };
};

/** Serves `fetch` on hostname:port; resolves once listening. */
export function serveNode(options: { fetch: Fetch; hostname: string; port: number }): Promise<{ server: Server; port: number }> {
  const server: ServingServer = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, getRequestListener(directStreamsFetch(options.fetch)));
  // Handed-over streams are off node:http's list of connections: closing them all closes them too.
  const handedOver = new Set<Socket>();
  server[HANDED_OVER] = handedOver;
  const closeAll = server.closeAllConnections.bind(server);
  server.closeAllConnections = () => {
    closeAll();
    for (const socket of handedOver) socket.destroy();
  };
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address !== null ? address.port : options.port });
    });
  });
}
