/** Generated ids (CONTRACT section 5): request ids 32 hex, error ids 16 hex, thread ids UUIDs. */
export interface Ids {
  requestId(): string;
  errorId(): string;
  threadId(): string;
  runId(): string;
  messageId(): string;
}

const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");
const POOL_SIZE = 4096;
let pool = new Uint8Array(0);
let at = 0;
const digits = new Uint8Array(128);
const ascii = new TextDecoder();

/**
 * Random hex from a pooled buffer: one getRandomValues call per 4 KiB instead of one per id. The
 * digits are decoded in one piece: an id built by `+=` is a chain of string pieces that stays in
 * memory as long as the id does (about 400 bytes instead of 48 for a request id), and ids live as
 * long as their run.
 */
/** `bytes` (at most 64) random bytes as lower-case hex. */
export function randomHex(bytes: number): string {
  if (at + bytes > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_SIZE));
    at = 0;
  }
  for (let i = 0; i < bytes; i++) {
    const b = pool[at + i]!;
    digits[2 * i] = HEX_DIGITS[b >> 4]!;
    digits[2 * i + 1] = HEX_DIGITS[b & 15]!;
  }
  at += bytes;
  return ascii.decode(digits.subarray(0, 2 * bytes));
}

export const randomIds: Ids = {
  requestId: () => randomHex(16),
  errorId: () => randomHex(8),
  threadId: () => crypto.randomUUID(),
  runId: () => crypto.randomUUID(),
  messageId: () => randomHex(12),
};
