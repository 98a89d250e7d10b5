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

export function formatEvent(event: RunEvent): string {
  // The most frequent event, written without copying it first (the same text as the general case).
  if (event.type === "message.delta") return `event: message.delta\ndata: {"text":${JSON.stringify(event.text)}}\n\n`;
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
  const { heartbeatMs, onCancel } = options;
  let sink: SseSink | undefined;
  let open = true;
  let started = false;
  let ended = false;
  let pending = "";
  let flushTimer: ReturnType<typeof setTimeout> | undefined;
  let beatTimer: ReturnType<typeof setTimeout> | undefined;
  let lastWrite = Date.now();

  const flush = () => {
    flushTimer = undefined;
    if (!open || pending === "" || sink === undefined) return;
    const text = pending;
    pending = "";
    lastWrite = Date.now();
    try {
      sink.write(text);
    } catch {
      open = false;
    }
  };
  const beat = (delay: number) => {
    beatTimer = setTimeout(() => {
      if (!open) return;
      const idle = Date.now() - lastWrite;
      if (idle >= heartbeatMs && pending === "") {
        pending = KEEP_ALIVE;
        flush();
        beat(heartbeatMs);
      } else beat(Math.max(1, heartbeatMs - idle));
    }, delay);
  };
  const finish = () => {
    open = false;
    clearTimeout(flushTimer);
    clearTimeout(beatTimer);
  };
  const end = () => {
    if (ended || sink === undefined) return;
    ended = true;
    const text = pending;
    pending = "";
    try {
      sink.end(text);
    } catch {
      // already closed by the reader
    }
  };
  const cancel = () => {
    if (!open) return;
    finish();
    onCancel();
  };
  /** The runtime's (or the ReadableStream's) sink: what is pending goes first. */
  const attach = (to: SseSink) => {
    sink = to;
    // A stream closed before it was attached ends with what it still had to say.
    if (!open) end();
    else {
      if (pending !== "") flush();
      if (!to.paced) beat(heartbeatMs);
    }
    return { cancel, heartbeatMs };
  };

  const write = (text: string) => {
    if (!open) return;
    pending += text;
    if (sink?.paced) flush();
    else if (!started) {
      started = true;
      flush();
    } else flushTimer ??= setTimeout(flush, 0);
  };

  return {
    send: (event) => write(formatEvent(event)),
    sendData: (data) => write(frame(undefined, data)),
    close() {
      if (!open) return;
      finish();
      end();
    },
    response() {
      if (options.direct) {
        (options.direct as DirectEnv)[DIRECT_SSE] = { attach } satisfies DirectSse;
        return new NativeResponse(null, { status: 200, headers: SSE_HEADERS });
      }
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          attach({
            write: (text) => controller.enqueue(encoder.encode(text)),
            end: (text) => {
              if (text !== "") controller.enqueue(encoder.encode(text));
              controller.close();
            },
          });
        },
        cancel,
      });
      return new Response(body, { status: 200, headers: SSE_HEADERS });
    },
  };
}

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
};
