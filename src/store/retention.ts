/**
 * Thread retention (RETENTION_DAYS, spec 2.10): hourly, best effort, on every replica. Each idle
 * thread is deleted under its lease, after checking again that it is still idle, so a thread
 * that came back to life in the meantime is kept.
 */
import { isoTime } from "../clock.js";
import type { Deps } from "../deps.js";

const BATCH = 100;

export async function sweepRetention(deps: Deps): Promise<number> {
  const days = deps.settings.RETENTION_DAYS;
  if (days <= 0) return 0;
  const before = isoTime(deps.clock.now() - days * 86_400_000);
  let deleted = 0;
  for (const threadId of await deps.store.idleThreads(before, BATCH)) {
    const lease = await deps.lease.acquire(threadId, `${deps.instanceId}:retention`, deps.leaseTimings.ttlMs);
    if (!lease) continue;
    try {
      const row = await deps.store.getThread(threadId);
      if (row && row.updated_at < before && (await deps.store.deleteThread(threadId))) deleted++;
    } finally {
      await deps.lease.release(lease).catch(() => {});
    }
  }
  if (deleted > 0) deps.logger.info("retention deleted idle threads", { count: deleted });
  return deleted;
}

/** Runs `task` every `intervalMs`, never two at once; failures are logged, not thrown. */
export function every(deps: Deps, intervalMs: number, name: string, task: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    task()
      .catch((error: unknown) => deps.logger.warning(`${name} failed`, { error_type: error instanceof Error ? error.name : "Error" }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  return () => clearInterval(timer);
}
