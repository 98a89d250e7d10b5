/**
 * The recovery sweep, on every replica (spec 3.2): pending approvals past `expires_at` become
 * expired (counted, logged), and every paused run whose approvals are all decided but that no run
 * resumed (its decider crashed, lost the race for the thread, or its resumed run was cut before
 * it carried the calls out) is resumed in the background by whichever replica gets its thread.
 */
import { expireIfDue } from "../approvals/decide.js";
import { isoTime } from "../clock.js";
import type { RunsContext } from "./context.js";
import type { Resumer } from "./resume.js";

/** Paused runs looked at per sweep. */
const BATCH = 50;

export async function sweep(ctx: RunsContext, resumer: Resumer): Promise<{ expired: number; resumed: number }> {
  // A sweep is a request of its own: its lines and the runs it resumes carry its request id.
  const sweepLogger = ctx.logger.child({ request_id: ctx.ids.requestId() });
  let expired = 0;
  for (const a of await ctx.store.dueApprovals(isoTime(ctx.clock.now()))) {
    if ((await expireIfDue(ctx.decisions, a, sweepLogger)).status === "expired") expired++;
  }
  let resumed = 0;
  for (const paused of await ctx.store.dueRuns(BATCH)) {
    const handle = await ctx.leases.take(paused.thread_id, "recover");
    if (!handle) continue; // its thread is busy: the run holding it, or a later sweep, resumes it
    const logger = sweepLogger.child({ thread_id: paused.thread_id });
    try {
      if (await resumer.resumeHeld(handle, paused, { emit: () => {}, logger, decider: null })) resumed++;
    } catch (error) {
      logger.warning("resuming a decided run failed", { run_id: paused.run_id, error_type: error instanceof Error ? error.name : "Error" });
    }
  }
  if (resumed > 0) sweepLogger.info("recovery resumed decided runs", { count: resumed });
  return { expired, resumed };
}
