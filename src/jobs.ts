/**
 * The one interval runner of the background jobs (approval expiry and recovery, lost runs,
 * retention, task TTL): never two runs of a job at once, failures logged by type, not thrown.
 */
import type { Logger } from "./observability/logger.js";

export function every(logger: Logger, intervalMs: number, name: string, job: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    job()
      .catch((error: unknown) => logger.warning(`${name} failed`, { error_type: error instanceof Error ? error.name : "Error" }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  return () => clearInterval(timer);
}
