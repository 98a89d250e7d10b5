/**
 * The background jobs (approval expiry and recovery, lost runs, retention, task TTL): each a body
 * that never runs twice at once and logs its failures by type instead of throwing. A process
 * (Node, Bun, Deno) runs them on intervals (`every`); workerd, whose isolates keep no timers
 * between requests, runs them from its cron trigger (`dueJobs`, src/runtime/workerd/scheduled.ts).
 */
import type { Logger } from "./observability/logger.js";

export interface BackgroundJob {
  readonly name: string;
  /** How often it runs. */
  readonly intervalMs: number;
  /** Also right at start, on intervals (a job that should not wait a whole interval). */
  readonly atStart: boolean;
  /** One run. Never rejects; resolves at once when the previous run has not ended (it is skipped). */
  run(): Promise<void>;
}

export function backgroundJob(logger: Logger, name: string, intervalMs: number, body: () => Promise<unknown>, options: { atStart?: boolean } = {}): BackgroundJob {
  let running = false;
  return {
    name,
    intervalMs,
    atStart: options.atStart ?? false,
    async run() {
      if (running) return;
      running = true;
      try {
        await body();
      } catch (error) {
        logger.warning(`${name} failed`, { error_type: error instanceof Error ? error.name : "Error" });
      } finally {
        running = false;
      }
    },
  };
}

/** Runs the job every `intervalMs` (and right away when it says so, off this turn of the event loop); returns its stopper. */
export function every(job: BackgroundJob): () => void {
  const timer = setInterval(() => void job.run(), job.intervalMs);
  const first = job.atStart ? setTimeout(() => void job.run(), 0) : undefined;
  return () => {
    clearInterval(timer);
    clearTimeout(first);
  };
}

/**
 * The jobs to run at `time` (ms) from a trigger that fires every `periodMs` (a cron trigger): a job
 * whose interval is at most the period runs every time, a longer one at the first firing at or
 * past each multiple of its interval (hourly retention: in the first minute of each hour).
 */
export function dueJobs(jobs: readonly BackgroundJob[], time: number, periodMs: number): BackgroundJob[] {
  return jobs.filter((job) => job.intervalMs <= periodMs || Math.floor(time / job.intervalMs) !== Math.floor((time - periodMs) / job.intervalMs));
}
