/** Approval routes (spec 4.3): the thread's approvals, approvals across threads, deciding. */
import { Hono } from "hono";
import { type Caller, ownsThread } from "../../auth/caller.js";
import type { ApprovalRecord } from "../../approvals/types.js";
import { publicApproval } from "../../approvals/view.js";
import { hasCode } from "../../errors.js";
import { forbidden, notFound } from "../../problems.js";
import type { RunHandle, Runs } from "../../runs/index.js";
import type { Logger } from "../../observability/logger.js";
import type { Settings } from "../../settings/parse.js";
import type { Store, ThreadRow } from "../../store/ports.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { decisionSchema, listApprovalsQuery, threadId } from "../schemas.js";
import { createSseStream, directStreamsEnv } from "../sse.js";
import { parseOrThrow } from "../validation.js";

const ALL = 10_000;

/** Roles a caller may decide with: a delegated principal's roles never decide or read across. */
const decidingRoles = (caller: Caller) => (caller.principal.actor ? [] : caller.principal.roles);
const decides = (caller: Caller, a: ApprovalRecord) => decidingRoles(caller).some((r) => a.approvers.includes(`role:${r}`));

export function approvalRoutes({ store, runs, settings, requireAuth }: { store: Store; runs: Runs; settings: Settings; requireAuth: RequireAuth }) {
  const full = settings.TRACE_CAPTURE === "full";
  const threadIdSchema = threadId(settings.runtime);

  const loadThread = async (id: string): Promise<ThreadRow> => {
    parseOrThrow(threadIdSchema, id, "path");
    const row = await store.getThread(id);
    if (!row) throw notFound("Thread not found.");
    return row;
  };
  /** Owners and deciders see the call while pending; read-across readers only under TRACE_CAPTURE=full. */
  const view = (caller: Caller, a: ApprovalRecord, owner: boolean) =>
    publicApproval(a, owner || a.requester === caller.hash || decides(caller, a) || full);
  const fresh = (list: ApprovalRecord[], logger: Logger) => Promise.all(list.map((a) => runs.expireIfDue(a, logger)));

  return new Hono<HttpEnv>()
    .get("/threads/:thread_id/approvals", requireAuth("approval.read"), async (c) => {
      const caller = c.get("caller");
      const thread = await loadThread(c.req.param("thread_id"));
      const owner = ownsThread(caller, thread);
      const all = await fresh(await store.listApprovals({ thread_id: thread.thread_id, limit: ALL, offset: 0 }), c.get("logger"));
      if (owner || caller.readAcross) return c.json(all.map((a) => view(caller, a, owner)));
      const mine = all.filter((a) => decides(caller, a));
      if (mine.length === 0) throw forbidden("This thread belongs to another principal.");
      return c.json(mine.map((a) => view(caller, a, false)));
    })
    .get("/approvals", requireAuth("approval.read"), async (c) => {
      const caller = c.get("caller");
      const q = parseOrThrow(listApprovalsQuery, c.req.query(), "query");
      // A delegated reader sees only what it asked for: filtered in the store, before the page is cut.
      const actor = caller.principal.actor?.id;
      const rows = await store.listApprovals({
        limit: q.limit,
        offset: q.offset,
        ...(q.status ? { status: q.status } : {}),
        ...(actor !== undefined ? { requester_actor: actor } : {}),
        ...(caller.readAcross ? {} : { visibleTo: { requester: caller.hash, roles: decidingRoles(caller) } }),
      });
      return c.json((await fresh(rows, c.get("logger"))).map((a) => view(caller, a, a.requester === caller.hash)));
    })
    .post("/threads/:thread_id/approvals/:approval_id", requireAuth("approval.decide"), async (c) => {
      const caller = c.get("caller");
      const thread = await loadThread(c.req.param("thread_id"));
      const body = parseOrThrow(decisionSchema, await readJsonBody(c.req.raw, settings.MAX_REQUEST_BYTES), "body");
      let run: RunHandle | undefined;
      const sse = createSseStream({ heartbeatMs: settings.SSE_HEARTBEAT_S * 1000, onCancel: () => run?.cancel(), direct: directStreamsEnv(c.env) });
      const { decided, resume: outcome } = await runs
        .decide(caller, thread, c.req.param("approval_id"), body, { emit: sse.send, logger: c.get("logger"), span: c.get("span") })
        .catch((error: unknown) => {
          sse.close();
          throw error;
        });
      if (outcome.kind !== "started") {
        sse.close();
        // The decision is recorded: a database that stops answering now leaves `pending` out
        // rather than answering 503, which would say nothing was done.
        const pending = await store.listApprovals({ run_id: decided.run_id, status: "pending", limit: ALL, offset: 0 }).catch((error: unknown) => {
          if (!hasCode(error, "unavailable")) throw error;
          return undefined;
        });
        return c.json({
          approval: view(caller, decided, ownsThread(caller, thread)),
          ...(pending ? { pending: pending.map((a) => view(caller, a, ownsThread(caller, thread))) } : {}),
          resumed: false,
          // The decision is recorded; the thread was busy, so its next holder (or the recovery
          // sweep, within seconds) resumes the run and carries the decision out.
          ...(outcome.kind === "queued" ? { queued: true } : {}),
        });
      }
      run = outcome.run;
      c.set("streamDone", outcome.run.done.finally(() => sse.close()));
      return sse.response();
    });
}
