/**
 * The one server-sent-events decoder (the WHATWG event-stream grammar, parsed by
 * eventsource-parser): the Gemini provider, agentcli and the tests read SSE through it. Web APIs
 * only. Comments (`: keep-alive`), `id` and `retry` lines are dropped; an event without an
 * `event:` line is a "message"; multi-line data is joined with newlines.
 */
import { createParser, type EventSourceParser } from "eventsource-parser";

export interface SseMessage {
  readonly event: string;
  readonly data: string;
}

export interface SseDecodeOptions {
  /**
   * At the end of the input, also dispatch an event whose closing blank line never came (the
   * spec drops it). The Gemini provider does, so an answer cut short fails on its JSON instead of
   * ending quietly.
   */
  readonly dispatchUnterminated?: boolean;
}

function parserInto(out: SseMessage[]): EventSourceParser {
  return createParser({ onEvent: (e) => void out.push({ event: e.event ?? "message", data: e.data }) });
}

function finish(parser: EventSourceParser, options: SseDecodeOptions): void {
  // A line end for a pending line, then the blank line that dispatches a pending event.
  if (options.dispatchUnterminated) parser.feed("\n\n");
}

/**
 * The events of a byte stream, as they complete. The stream is cancelled when the loop over them
 * ends early, fails or finishes; read errors (an abort, a cut connection) are thrown as they are.
 */
export async function* sseEvents(body: ReadableStream<Uint8Array> | null, options: SseDecodeOptions = {}): AsyncGenerator<SseMessage> {
  if (!body) return;
  const reader = body.getReader();
  const text = new TextDecoder();
  const ready: SseMessage[] = [];
  const parser = parserInto(ready);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(text.decode(value, { stream: true }));
      yield* ready.splice(0);
    }
    parser.feed(text.decode());
    finish(parser, options);
    yield* ready.splice(0);
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The events of a whole SSE text. */
export function decodeSse(text: string, options: SseDecodeOptions = {}): SseMessage[] {
  const out: SseMessage[] = [];
  const parser = parserInto(out);
  parser.feed(text);
  finish(parser, options);
  return out;
}
