/**
 * The one place run events become SSE frames (CONTRACT 4): `event: <name>`, `data: <JSON>`, a
 * blank line; idle streams get a `: keep-alive` comment every SSE_HEARTBEAT_S. One timer per
 * stream (workerd forbids writing to one request's stream from another request's timer).
 */
import type { RunEvent } from "../agent/events.js";

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

export function encodeEvent(event: RunEvent): Uint8Array {
  const { type, ...data } = event;
  return encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

export interface SseStream {
  readonly body: ReadableStream<Uint8Array>;
  send(event: RunEvent): void;
  close(): void;
}

export function createSseStream(options: { heartbeatMs: number; onCancel: () => void }): SseStream {
  const { heartbeatMs, onCancel } = options;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let lastWrite = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const write = (bytes: Uint8Array) => {
    if (!open) return;
    lastWrite = Date.now();
    try {
      controller.enqueue(bytes);
    } catch {
      open = false;
    }
  };
  const beat = (delay: number) => {
    timer = setTimeout(() => {
      if (!open) return;
      const idle = Date.now() - lastWrite;
      if (idle >= heartbeatMs) {
        write(KEEP_ALIVE);
        beat(heartbeatMs);
      } else beat(heartbeatMs - idle);
    }, delay);
  };
  const finish = () => {
    open = false;
    clearTimeout(timer);
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
    send: (event) => write(encodeEvent(event)),
    close() {
      if (!open) return;
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
