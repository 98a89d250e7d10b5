/**
 * The one interval runner of the background jobs (approval expiry and recovery, lost runs,
 * retention, task TTL): never two runs of a job at once, failures logged by type, not thrown.
 */
import type { Logger } from "./observability/logger.js";

export function every(logger: Logger, intervalMs: number, name: string, job: () => Promise<unknown>, options: { now?: boolean } = {}): () => void {
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    job()
      .catch((error: unknown) => logger.warning(`${name} failed`, { error_type: error instanceof Error ? error.name : "Error" }))
      .finally(() => {
        running = false;
      });
  };
  const timer = setInterval(tick, intervalMs);
  // A first run right away (off this turn of the event loop), for jobs that should not wait a whole interval.
  const first = options.now ? setTimeout(tick, 0) : undefined;
  return () => {
    clearInterval(timer);
    clearTimeout(first);
  };
}
