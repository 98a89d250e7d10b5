/** POST /chat (spec 4.1): validate, claim the thread, take its lease, stream the run as SSE. */
import { Hono } from "hono";
import { ownsThread } from "../../auth/caller.js";
import { type RunHandle, startRun } from "../../agent/runner.js";
import { isoTime } from "../../clock.js";
import type { Deps } from "../../deps.js";
import { expireIfDue } from "../../approvals/decide.js";
import { resumeExpired } from "../../approvals/sweep.js";
import { publicApproval } from "../../approvals/view.js";
import { forbidden, HttpError, THREAD_FOREIGN, threadBusy } from "../../problems.js";
import type { RunRecord } from "../../store/ports.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import { requireAuth } from "../middleware/auth.js";
import { chatRequestSchema } from "../schemas.js";
import { createSseStream, SSE_HEADERS } from "../sse.js";
import { parseOrThrow } from "../validation.js";

/** A thread waiting for a decision refuses new messages (409 approval_pending, spec 3.1). */
async function refuseWhilePending(deps: Deps, threadId: string): Promise<void> {
  const listed = await deps.store.listApprovals({ thread_id: threadId, status: "pending", limit: 100, offset: 0 });
  if (listed.length === 0) return;
  const fresh = await Promise.all(listed.map((a) => expireIfDue(deps, a)));
  const pending = fresh.filter((a) => a.status === "pending");
  // Approvals that expired just now: their run resumes (and holds the thread) before new messages.
  if (pending.length === 0) await resumeExpired(deps, fresh);
  if (pending.length > 0)
    throw new HttpError("conflict", 409, {
      code: "approval_pending",
      detail: "The thread waits for a decision on a gated call.",
      approvals: pending.map((a) => publicApproval(a)),
    });
}

export function chatRoutes(deps: Deps) {
  const { settings, store, lease, clock, ids } = deps;
  const schema = chatRequestSchema(settings);
  const heartbeatMs = settings.SSE_HEARTBEAT_S * 1000;

  return new Hono<HttpEnv>().post("/chat", requireAuth(deps, "chat.send"), async (c) => {
    const caller = c.get("caller");
    const body = parseOrThrow(schema, await readJsonBody(c.req.raw, settings.MAX_REQUEST_BYTES), "body");

    const threadId = body.thread_id ?? ids.threadId();
    const now = isoTime(clock.now());
    const { row } = await store.createThread({
      thread_id: threadId,
      owner: caller.hash,
      actor: caller.principal.actor?.id ?? null,
      created_at: now,
      updated_at: now,
    });
    if (!ownsThread(caller, row)) throw forbidden(THREAD_FOREIGN);
    await refuseWhilePending(deps, threadId);

    const handle = await lease.acquire(threadId, `${deps.instanceId}:${ids.runId()}`, deps.leaseTimings.ttlMs);
    if (!handle) throw threadBusy();

    let run: RunHandle | undefined;
    const sse = createSseStream({ heartbeatMs, onCancel: () => run?.cancel() });
    try {
      run = await startRun(deps, {
        caller,
        threadId,
        message: body.message,
        metadata: (body.metadata ?? {}) as RunRecord["metadata"],
        lease: handle,
        emit: sse.send,
        logger: c.get("logger"),
      });
    } catch (error) {
      await lease.release(handle).catch(() => {});
      throw error;
    }
    c.set("streamDone", run.done.finally(() => sse.close()));
    return new Response(sse.body, { status: 200, headers: SSE_HEADERS });
  });
}
