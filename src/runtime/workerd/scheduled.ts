/**
 * The cron trigger (wrangler.toml: every minute) runs the app's background jobs, which a process
 * runs on intervals: an isolate keeps no timers between requests, and may hold no request at all.
 * Jobs shorter than the period (the approval sweep, lost runs, task TTL) run at every firing, so
 * an expired approval is swept within a minute (anyone reading it sooner sees it expired: reads
 * expire it); hourly retention runs in the first minute of each hour.
 */
import type { App } from "../../app.js";
import { dueJobs } from "../../jobs.js";

export const CRON_PERIOD_MS = 60_000;

export async function runScheduled(app: App, scheduledTime: number): Promise<void> {
  for (const job of dueJobs(app.jobs, scheduledTime, CRON_PERIOD_MS)) await job.run();
  // The sweep resumes decided runs and returns once they started; they belong to this event, which
  // workerd ends (cutting them off) once the handler settles. Each run ends within RUN_TIMEOUT_S.
  await app.settled();
  if (app.traces.enabled) await app.traces.flush();
}
