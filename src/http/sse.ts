/**
 * The one place run events become SSE frames (CONTRACT 4): `event: <name>`, `data: <JSON>`, a
 * blank line; idle streams get a `: keep-alive` comment every SSE_HEARTBEAT_S. A2A streams use
 * the same stream with nameless frames (`data:` only): each is one JSON-RPC response, read as the
 * default `message` event, which is how the a2a-js SDK writes and reads them.
 *
 * Events produced in one burst (a model's deltas, a turn's tool results) are written as one chunk
 * on the next timer tick: each chunk costs a socket write, which dominated CPU when every event
 * was its own chunk. The first event goes out at once, so time to first event is not delayed.
 * Timers are per stream: workerd forbids writing to one request's stream from another's timer.
 *
 * Where the text goes is a sink. The response's body is a web ReadableStream on every runtime,
 * unless the runtime asked for direct streams on the request (the Node entry does: its env object
 * per request holds DIRECT_STREAMS): then the response has no body, the stream's source is left
 * on that env object, and the runtime writes the text straight to its socket. A ReadableStream,
 * its controller and the adapter that pumps it into node:http cost about as much memory per
 * waiting conversation as everything else a waiting run holds, and a read per chunk besides.
 * (The source is not put on the Response: Hono copies a response into a new one when a
 * middleware set a header first, and the copy would not carry it.)
 */
import type { RunEvent } from "../agent/events.js";
import type { JsonValue } from "../json.js";

const encoder = new TextEncoder();
/**
 * The runtime's own Response, taken when this module loads: @hono/node-server later replaces the
 * global with a lazy one that builds a second, full Response the first time its headers are read
 * (the request id is set on every response), which a direct stream pays for nothing.
 */
const NativeResponse = globalThis.Response;
/** The heartbeat of an idle stream (CONTRACT 4). */
export const KEEP_ALIVE = ": keep-alive\n\n";

/** One frame: an `event:` line when it has a name, one `data:` line of JSON, a blank line. */
function frame(name: string | undefined, data: unknown): string {
  return `${name === undefined ? "" : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/**
 * What JSON.stringify escapes in a string (a quote, a backslash, a control character) and the
 * surrogates (it escapes a lone one): text without any is written as it is, between quotes.
 */
// eslint-disable-next-line no-control-regex
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

export function formatEvent(event: RunEvent): string {
  // The most frequent event, written without copying it first (the same text as the general
  // case); most deltas need no escaping, and one scan is about half of what JSON.stringify costs.
  if (event.type === "message.delta") {
    const { text } = event;
    return `event: message.delta\ndata: {"text":${ESCAPED_IN_JSON.test(text) ? JSON.stringify(text) : `"${text}"`}}\n\n`;
  }
  // The event as it is, less its leading `type` (every event is made with `type` first): no copy
  // of the event, whose spread would also make a shape of its own for each kind and variant.
  const json = JSON.stringify(event);
  const head = `{"type":${JSON.stringify(event.type)},`;
  if (json.startsWith(head)) return `event: ${event.type}\ndata: {${json.slice(head.length)}\n\n`;
  const { type, ...data } = event;
  return frame(type, data);
}

/** Where a stream's text is written. */
export interface SseSink {
  write(text: string): void;
  /** Ends the stream after `text`: the last words and the end go out in one write. */
  end(text: string): void;
  /**
   * The sink gathers what is written within a turn of the event loop into one write, and sends
   * the heartbeats of an idle stream itself (`heartbeatMs` from attach): the stream then keeps
   * no timer of its own. The Node entry's sink does, with one timer for all its streams.
   */
  readonly paced?: boolean;
}

/** What a runtime that writes streams itself gets from a response (`directSse(response)`). */
export interface DirectSse {
  /** Starts writing to `sink` (what is pending first); `cancel()` when the client has gone. */
  attach(sink: SseSink): { cancel(): void; readonly heartbeatMs: number };
}

/** The key a runtime sets to true in the env object it hands each request (Hono's `c.env`). */
export const DIRECT_STREAMS = "agentDirectStreams";
const DIRECT_SSE = Symbol.for("agent-service.direct-sse");

type DirectEnv = Record<string | symbol, unknown>;

/** The request's env when it asks for direct streams, else undefined. */
export function directStreamsEnv(env: unknown): object | undefined {
  return typeof env === "object" && env !== null && (env as DirectEnv)[DIRECT_STREAMS] === true ? env : undefined;
}

/**
 * The stream a request's response carries, for the runtime that asked for direct streams: only
 * when the response is the stream's (no body), not an error answered after it was made.
 */
export function directSse(env: object, response: Response): DirectSse | undefined {
  const source = (env as DirectEnv)[DIRECT_SSE] as DirectSse | undefined;
  return source !== undefined && response.body === null && response.status === 200 ? source : undefined;
}

export interface SseStream {
  send(event: RunEvent): void;
  /** A nameless frame (`data:` only), as A2A streams send their JSON-RPC responses. */
  sendData(data: JsonValue): void;
  /** Writes what is pending and ends the stream. */
  close(): void;
  /** The 200 response that carries the stream (call once). */
  response(): Response;
}

/** `direct`: the request's env when its runtime writes streams itself (directStreamsEnv). */
export function createSseStream(options: { heartbeatMs: number; onCancel: () => void; direct?: object | undefined }): SseStream {
  return new Stream(options.heartbeatMs, options.onCancel, options.direct);
}

/**
 * A class rather than a dozen closures: ten thousand waiting conversations each hold one of
 * these, and the methods are shared. `send` is a field because it is handed out as a callback
 * (a run's `emit`).
 */
class Stream implements SseStream, DirectSse {
  private sink: SseSink | undefined;
  private open = true;
  private started = false;
  private ended = false;
  private pending = "";
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private beatTimer: ReturnType<typeof setTimeout> | undefined;
  private lastWrite = 0;

  constructor(
    readonly heartbeatMs: number,
    private readonly onCancel: () => void,
    private direct: object | undefined,
  ) {}

  readonly send = (event: RunEvent): void => this.write(formatEvent(event));

  sendData(data: JsonValue): void {
    this.write(frame(undefined, data));
  }

  close(): void {
    if (!this.open) return;
    this.finish();
    this.end();
  }

  response(): Response {
    const direct = this.direct;
    if (direct) {
      // Not kept: the env holds the runtime's request and response, which a waiting stream's
      // runtime may let go of (the Node entry's hand-over).
      this.direct = undefined;
      (direct as DirectEnv)[DIRECT_SSE] = this;
      // The runtime writes SSE_HEADERS before the ones the middleware sets on this response.
      return new NativeResponse(null, DIRECT_INIT);
    }
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.attach({
          write: (text) => controller.enqueue(encoder.encode(text)),
          end: (text) => {
            if (text !== "") controller.enqueue(encoder.encode(text));
            controller.close();
          },
        });
      },
      cancel: () => this.cancel(),
    });
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  }

  /** The runtime's (or the ReadableStream's) sink: what is pending goes first. */
  attach(sink: SseSink): { cancel(): void; readonly heartbeatMs: number } {
    this.sink = sink;
    this.lastWrite = Date.now();
    // A stream closed before it was attached ends with what it still had to say.
    if (!this.open) this.end();
    else {
      if (this.pending !== "") this.flush();
      if (!sink.paced) this.beat(this.heartbeatMs);
    }
    return this;
  }

  cancel(): void {
    if (!this.open) return;
    this.finish();
    this.onCancel();
  }

  private write(text: string): void {
    if (!this.open) return;
    this.pending += text;
    // Not attached yet (the run spoke before its response was made): attach writes what is
    // pending, so no timer is set for it.
    if (this.sink === undefined) this.started = true;
    else if (this.sink.paced) this.flush();
    else if (!this.started) {
      this.started = true;
      this.flush();
    } else this.flushTimer ??= setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    this.flushTimer = undefined;
    if (!this.open || this.pending === "" || this.sink === undefined) return;
    const text = this.pending;
    this.pending = "";
    this.lastWrite = Date.now();
    try {
      this.sink.write(text);
    } catch {
      this.open = false;
    }
  }

  private beat(delay: number): void {
    this.beatTimer = setTimeout(() => {
      if (!this.open) return;
      const idle = Date.now() - this.lastWrite;
      if (idle >= this.heartbeatMs && this.pending === "") {
        this.pending = KEEP_ALIVE;
        this.flush();
        this.beat(this.heartbeatMs);
      } else this.beat(Math.max(1, this.heartbeatMs - idle));
    }, delay);
  }

  private finish(): void {
    this.open = false;
    clearTimeout(this.flushTimer);
    clearTimeout(this.beatTimer);
  }

  private end(): void {
    if (this.ended || this.sink === undefined) return;
    this.ended = true;
    const text = this.pending;
    this.pending = "";
    try {
      this.sink.end(text);
    } catch {
      // already closed by the reader
    }
  }
}

/** A direct stream's answer: headers of its own only (the request id, CORS); see Stream.response. */
const DIRECT_INIT: ResponseInit = { status: 200 };

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
};
