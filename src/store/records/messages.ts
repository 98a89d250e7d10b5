/** A page of messages out of a thread held whole in memory (the memory store, the graph server's threads). */
import type { Message, MessagePage } from "../ports/threads.js";

export function pageOfMessages(all: readonly Message[], page: MessagePage): Message[] | null {
  const limit = Math.max(0, page.limit);
  if (page.before !== undefined) {
    const at = all.findIndex((m) => m.id === page.before);
    return at < 0 ? null : all.slice(Math.max(0, at - limit), at);
  }
  if (page.after !== undefined) {
    const at = all.findIndex((m) => m.id === page.after);
    return at < 0 ? null : all.slice(at + 1, at + 1 + limit);
  }
  return limit === 0 ? [] : all.slice(-limit);
}
