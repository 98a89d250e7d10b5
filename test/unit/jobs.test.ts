/** The background jobs' runner (src/jobs.ts): one run at a time, failures logged, and which jobs a cron firing runs. */
import { describe, expect, it } from "vitest";
import { backgroundJob, dueJobs } from "../../src/jobs.js";
import { createLogger } from "../../src/observability/logger.js";

const lines: Record<string, unknown>[] = [];
const logger = createLogger({ level: "INFO", format: "json", write: (line) => lines.push(JSON.parse(line)) });

describe("background jobs", () => {
  it("skips a run while the previous one is going, and logs a failure by type without throwing", async () => {
    let calls = 0;
    let finish = () => {};
    const job = backgroundJob(logger, "slow", 1000, () => new Promise<void>((resolve) => (calls++, (finish = resolve))));
    const first = job.run();
    await job.run();
    expect(calls).toBe(1);
    finish();
    await first;
    void job.run();
    expect(calls).toBe(2);
    finish();

    const failing = backgroundJob(logger, "failing", 1000, async () => {
      throw new TypeError("no");
    });
    await expect(failing.run()).resolves.toBeUndefined();
    expect(lines.at(-1)).toMatchObject({ message: "failing failed", error_type: "TypeError" });
  });

  it("a cron firing every minute runs the short jobs each time and an hourly one in the first minute of each hour", () => {
    const job = (name: string, intervalMs: number) => backgroundJob(logger, name, intervalMs, async () => {});
    const jobs = [job("sweep", 5_000), job("lost", 15_000), job("tasks", 60_000), job("retention", 3_600_000)];
    const hour = Date.UTC(2026, 0, 1, 10);
    const names = (time: number) => dueJobs(jobs, time, 60_000).map((j) => j.name);
    expect(names(hour)).toEqual(["sweep", "lost", "tasks", "retention"]);
    expect(names(hour + 60_000)).toEqual(["sweep", "lost", "tasks"]);
    expect(names(hour + 59 * 60_000)).toEqual(["sweep", "lost", "tasks"]);
    // A firing a few seconds late still falls in the first minute.
    expect(names(hour + 3_600_000 + 4_000)).toContain("retention");
  });
});
