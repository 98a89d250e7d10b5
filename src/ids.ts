/** Generated ids (CONTRACT section 5): request ids 32 hex, error ids 16 hex, thread ids UUIDs. */
export interface Ids {
  requestId(): string;
  errorId(): string;
  threadId(): string;
  runId(): string;
  messageId(): string;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const POOL_SIZE = 4096;
let pool = new Uint8Array(0);
let at = 0;

/** Random hex from a pooled buffer: one getRandomValues call per 4 KiB instead of one per id. */
export function randomHex(bytes: number): string {
  if (at + bytes > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_SIZE));
    at = 0;
  }
  let out = "";
  for (let i = at; i < at + bytes; i++) out += HEX[pool[i]!];
  at += bytes;
  return out;
}

export const randomIds: Ids = {
  requestId: () => randomHex(16),
  errorId: () => randomHex(8),
  threadId: () => crypto.randomUUID(),
  runId: () => crypto.randomUUID(),
  messageId: () => randomHex(12),
};
