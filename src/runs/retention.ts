/**
 * Thread retention (RETENTION_DAYS, spec 2.10): at start, then hourly, best effort, on every
 * replica. A sweep goes through every idle thread in batches until none is left; each is deleted
 * under its lease, after checking again that it is still idle, so a thread that came back to life
 * in the meantime is kept, and a busy one waits for the next sweep.
 */
import { isoTime } from "../clock.js";
import type { RunsContext } from "./context.js";
import { withThreadLease } from "./leases.js";

const BATCH = 100;

export async function sweepRetention(ctx: Pick<RunsContext, "store" | "leases" | "clock" | "logger">, days: number): Promise<number> {
  if (days <= 0) return 0;
  const before = isoTime(ctx.clock.now() - days * 86_400_000);
  let deleted = 0;
  // Threads that stay (busy, or written since): skipped by later batches of this sweep.
  const kept = new Set<string>();
  for (;;) {
    const batch = (await ctx.store.idleThreads(before, BATCH + kept.size)).filter((id) => !kept.has(id));
    if (batch.length === 0) break;
    for (const threadId of batch) {
      const gone = await withThreadLease(ctx.leases, threadId, "retention", async () => {
        const row = await ctx.store.getThread(threadId);
        return row !== null && row.updated_at < before && (await ctx.store.deleteThread(threadId));
      });
      if (gone === true) deleted++;
      else kept.add(threadId);
    }
  }
  if (deleted > 0) ctx.logger.info("retention deleted idle threads", { count: deleted });
  return deleted;
}
