/** Generated ids (CONTRACT section 5): request ids 32 hex, error ids 16 hex, thread ids UUIDs. */
export interface Ids {
  requestId(): string;
  errorId(): string;
  threadId(): string;
  runId(): string;
  messageId(): string;
}

function hex(bytes: number): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const b of buf) out += b.toString(16).padStart(2, "0");
  return out;
}

export const randomIds: Ids = {
  requestId: () => hex(16),
  errorId: () => hex(8),
  threadId: () => crypto.randomUUID(),
  runId: () => crypto.randomUUID(),
  messageId: () => hex(12),
};
