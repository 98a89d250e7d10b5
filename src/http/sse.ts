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
 */
import type { RunEvent } from "../agent/events.js";
import type { JsonValue } from "../json.js";

const encoder = new TextEncoder();
const KEEP_ALIVE = ": keep-alive\n\n";

/** One frame: an `event:` line when it has a name, one `data:` line of JSON, a blank line. */
function frame(name: string | undefined, data: unknown): string {
  return `${name === undefined ? "" : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;
}

export function formatEvent(event: RunEvent): string {
  const { type, ...data } = event;
  return frame(type, data);
}

export interface SseStream {
  readonly body: ReadableStream<Uint8Array>;
  send(event: RunEvent): void;
  /** A nameless frame (`data:` only), as A2A streams send their JSON-RPC responses. */
  sendData(data: JsonValue): void;
  /** Writes what is pending and ends the stream. */
  close(): void;
}

export function createSseStream(options: { heartbeatMs: number; onCancel: () => void }): SseStream {
  const { heartbeatMs, onCancel } = options;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let started = false;
  let pending = "";
  let flushTimer: ReturnType<typeof setTimeout> | undefined;
  let beatTimer: ReturnType<typeof setTimeout> | undefined;
  let lastWrite = Date.now();

  const flush = () => {
    flushTimer = undefined;
    if (!open || pending === "") return;
    const text = pending;
    pending = "";
    lastWrite = Date.now();
    try {
      controller.enqueue(encoder.encode(text));
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

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      beat(heartbeatMs);
    },
    cancel() {
      if (!open) return;
      finish();
      onCancel();
    },
  });

  const write = (text: string) => {
    if (!open) return;
    pending += text;
    if (!started) {
      started = true;
      flush();
    } else flushTimer ??= setTimeout(flush, 0);
  };

  return {
    body,
    send: (event) => write(formatEvent(event)),
    sendData: (data) => write(frame(undefined, data)),
    close() {
      if (!open) return;
      flush();
      finish();
      try {
        controller.close();
      } catch {
        // already closed by the reader
      }
    },
  };
}

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
};
