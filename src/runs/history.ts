/**
 * A run's history read within the budget (agent/history.ts has the rule): the thread's newest
 * messages a page at a time, the page growing fourfold, until it reaches the thread's start or
 * no older message could change what is sent (over the budget, with the turns that are always
 * sent starting in the page). A turn therefore reads about what it sends, whatever the thread's
 * length, instead of the whole thread.
 */
import { turnStartSettled, windowSettled } from "../agent/history.js";
import type { Message, Store } from "../store/ports.js";

const FIRST_PAGE = 64;

/**
 * The newest messages of the thread, enough to fill `budget` with whole turns; `whole` when that
 * is the entire thread. `underWay`: the thread ends in a turn under way (a resumed run), whose
 * older turns are chosen as it started (turnStartWindow), so its own messages do not count.
 */
export async function readHistory(store: Store, threadId: string, budget: number, underWay = false): Promise<{ messages: Message[]; whole: boolean }> {
  const settled = underWay ? turnStartSettled : windowSettled;
  for (let limit = FIRST_PAGE; ; limit *= 4) {
    // One message more than the page: a thread of exactly `limit` messages is read whole.
    const got = (await store.getMessagePage(threadId, { limit: limit + 1 })) ?? [];
    if (got.length <= limit) return { messages: got, whole: true };
    const page = got.slice(1);
    if (settled(page, budget)) return { messages: page, whole: false };
  }
}
