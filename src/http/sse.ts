/**
 * The one place run events become SSE frames (CONTRACT 4): `event: <name>`, `data: <JSON>`, a
 * blank line; idle streams get a `: keep-alive` comment every SSE_HEARTBEAT_S.
 *
 * Events produced in one burst (a model's deltas, a turn's tool results) are written as one chunk
 * on the next timer tick: each chunk costs a socket write, which dominated CPU when every event
 * was its own chunk. The first event goes out at once, so time to first event is not delayed.
 * Timers are per stream: workerd forbids writing to one request's stream from another's timer.
 */
import type { RunEvent } from "../agent/events.js";

const encoder = new TextEncoder();
const KEEP_ALIVE = ": keep-alive\n\n";

export function formatEvent(event: RunEvent): string {
  const { type, ...data } = event;
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

export interface SseStream {
  readonly body: ReadableStream<Uint8Array>;
  send(event: RunEvent): void;
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

  return {
    body,
    send(event) {
      if (!open) return;
      pending += formatEvent(event);
      if (!started) {
        started = true;
        flush();
      } else flushTimer ??= setTimeout(flush, 0);
    },
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
