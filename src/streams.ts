/** Byte streams read with a cap: nothing past `maxBytes` is ever buffered. */

/**
 * Reads the whole stream, or cancels it and throws `tooLarge()` as soon as more than
 * `maxBytes` arrived (or `whenStopped()` once `stopped()` says the caller gave up).
 */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  tooLarge: () => Error,
  /** Checked after each chunk: true cancels the stream (the caller gave up on it). */
  stopped: () => boolean = () => false,
  whenStopped: () => Error = tooLarge,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (stopped()) {
      await reader.cancel().catch(() => {});
      throw whenStopped();
    }
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
