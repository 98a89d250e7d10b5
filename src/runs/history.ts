/**
 * A run's history read within the budget (agent/history.ts has the rule): the thread's newest
 * messages a page at a time, the page growing fourfold, until it reaches the thread's start or
 * holds more than the budget from a turn's start on. A turn therefore reads about what it sends,
 * whatever the thread's length, instead of the whole thread.
 */
import { messageTokens } from "../agent/history.js";
import type { Message, Store } from "../store/ports.js";

const FIRST_PAGE = 64;

/** The newest messages of the thread, enough to fill `budget` with whole turns; `whole` when that is the entire thread. */
export async function readHistory(store: Store, threadId: string, budget: number): Promise<{ messages: Message[]; whole: boolean }> {
  for (let limit = FIRST_PAGE; ; limit *= 4) {
    // One message more than the page: a thread of exactly `limit` messages is read whole.
    const got = (await store.getMessagePage(threadId, { limit: limit + 1 })) ?? [];
    if (got.length <= limit) return { messages: got, whole: true };
    const page = got.slice(1);
    if (passesBudget(page, budget)) return { messages: page, whole: false };
  }
}

/**
 * The page is over the budget and holds a turn's start: every window that reaches further back
 * would hold the whole page, so it could not be sent, and the newest turn starts within it.
 */
function passesBudget(page: readonly Message[], budget: number): boolean {
  let tokens = 0;
  for (const m of page) tokens += messageTokens(m);
  return tokens > budget && page.some((m) => m.role === "user");
}
